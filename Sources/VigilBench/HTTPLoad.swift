import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import Synchronization
import VigilNode
import VigilSystem
import VigilWeb

/// The box's page under load beside a running node (sos_latency_p99_ms_http_load): its real
/// server on a free port (plain HTTP: TLS would measure OpenSSL, not the loop), `viewers`
/// browsers streaming the live page, and one script hammering the API (each turn a status read
/// and a command through the loop) as fast as the server answers.
final class HTTPLoad: Sendable {
    static let viewers = 50

    private let tasks = LockedValue<[Task<Void, Never>]>([])
    private let server = LockedValue<Task<Void, any Error>?>(nil)
    /// What the clients did (read after `stop`).
    final class Counts: Sendable {
        let requests = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let streamed = Atomic<Int>(0)
        let connected = Atomic<Int>(0)
    }
    let counts = Counts()
    private let client: HTTPClient

    init() {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: Self.viewers + 8)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Starts the server beside `node` and the clients; returns once every viewer streams.
    func start(node: NodeHandle, directory: String) throws {
        var settings = HTTPSettings()
        settings.listen = "127.0.0.1:0"
        settings.tls = false
        // Every viewer and the script come from this machine's one address.
        settings.connections.perClient = Self.viewers + 8
        let credentials = WebCredentials(dataDirectory: directory)
        let token: String
        do {
            token = try credentials.addToken(name: "bench", nowMicroseconds: 1)
        } catch {
            throw BenchError("http load: \(error)")
        }
        let listening = ConditionLock()
        let port = LockedValue<Int?>(nil)
        let web = WebServer(node: node, settings: settings, dataDirectory: directory,
                            logger: Logger(label: "vigil-bench.web") { _ in SwiftLogNoOpLogHandler() },
                            onListening: { p, _ in
                                port.withLock { $0 = p }
                                listening.withLock { listening.signal() }
                            })
        server.withLock { $0 = Task { try await web.run() } }
        let deadline = monotonicNanoseconds() + 10_000_000_000
        while port.withLock({ $0 }) == nil {
            guard monotonicNanoseconds() < deadline else { throw BenchError("http load: the page did not start") }
            listening.withLock { _ = listening.wait(untilMonotonicNanoseconds: monotonicNanoseconds() + 100_000_000) }
        }
        let base = "http://127.0.0.1:\(port.withLock { $0 } ?? 0)"
        let counts = self.counts
        let client = self.client
        var started: [Task<Void, Never>] = []
        for _ in 0..<Self.viewers {
            started.append(Task {
                var request = HTTPClientRequest(url: base + "/events")
                request.headers.add(name: "authorization", value: "Bearer \(token)")
                do {
                    let response = try await client.execute(request, timeout: .hours(1))
                    guard response.status == .ok else {
                        counts.failures.add(1, ordering: .relaxed)
                        listening.withLock { listening.signal() }
                        return
                    }
                    counts.connected.add(1, ordering: .relaxed)
                    listening.withLock { listening.signal() }
                    for try await _ in response.body { counts.streamed.add(1, ordering: .relaxed) }
                } catch {
                    if !Task.isCancelled { counts.failures.add(1, ordering: .relaxed) }
                }
            })
        }
        started.append(Task {
            var status = HTTPClientRequest(url: base + "/api/v1/status")
            status.headers.add(name: "authorization", value: "Bearer \(token)")
            var ping = HTTPClientRequest(url: base + "/api/v1/commands")
            ping.method = .POST
            ping.headers.add(name: "authorization", value: "Bearer \(token)")
            ping.headers.add(name: "content-type", value: "application/json")
            ping.body = .bytes(ByteBuffer(string: #"{"command":"status"}"#))
            while !Task.isCancelled {
                for request in [status, ping] {
                    do {
                        let response = try await client.execute(request, timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 4 << 20)
                        counts.requests.add(1, ordering: .relaxed)
                        if response.status != .ok { counts.failures.add(1, ordering: .relaxed) }
                    } catch {
                        if !Task.isCancelled { counts.failures.add(1, ordering: .relaxed) }
                    }
                }
            }
        })
        tasks.withLock { $0 = started }
        // Viewers connect as fast as this machine lets them: on a busy 2-core machine that took
        // more than a fixed 10 s, and the step failed though the page had refused nobody. It
        // fails when the page fails a viewer, or when no viewer got in for `stall` (a page that
        // stopped answering); how long they took, and how loaded the machine was, are reported.
        let stall: UInt64 = 60_000_000_000
        let connectStart = monotonicNanoseconds()
        var lastProgress = connectStart, seen = 0
        while counts.connected.load(ordering: .relaxed) < Self.viewers {
            let connected = counts.connected.load(ordering: .relaxed)
            if connected > seen { seen = connected; lastProgress = monotonicNanoseconds() }
            guard counts.failures.load(ordering: .relaxed) == 0 else {
                throw BenchError("http load: the page failed a viewer (\(connected) of \(Self.viewers) connected)")
            }
            guard monotonicNanoseconds() - lastProgress < stall else {
                throw BenchError("http load: no viewer got in for \(stall / 1_000_000_000) s (\(connected) of \(Self.viewers) connected)")
            }
            listening.withLock { _ = listening.wait(untilMonotonicNanoseconds: monotonicNanoseconds() + 100_000_000) }
        }
        connectSeconds.withLock { $0 = Double(monotonicNanoseconds() - connectStart) / 1e9 }
    }

    /// How long every viewer took to connect (the machine's load shows in it).
    let connectSeconds = LockedValue<Double>(0)

    /// Stops the clients and the server (before the node stops).
    func stop() {
        for t in tasks.withLock({ $0 }) { t.cancel() }
        server.withLock { $0 }?.cancel()
        let done = ConditionLock()
        let finished = LockedValue(false)
        let client = self.client
        Task {
            try? await client.shutdown()
            finished.withLock { $0 = true }
            done.withLock { done.signal() }
        }
        let deadline = monotonicNanoseconds() + 10_000_000_000
        while !finished.withLock({ $0 }) && monotonicNanoseconds() < deadline { done.withLock { _ = done.wait(untilMonotonicNanoseconds: monotonicNanoseconds() + 100_000_000) } }
    }
}
