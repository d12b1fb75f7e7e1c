import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing
import VigilAccess
import VigilTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The servers' connection caps and idle timeout (`ConnectionLimits`, issue 28 finding 5), on a
/// real Hummingbird server built the way the box's page and the hub build theirs, with raw TCP
/// clients from several loopback addresses (127.0.0.0/8 is all this machine's).
@Suite struct ConnectionLimitTests {
    /// A server on a free loopback port with `limits`, run for `body`.
    static func serving(_ limits: ConnectionLimits, _ body: (Int, OpenConnections, ConnectionChanges) async throws -> Void) async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let changes = ConnectionChanges()
        let connections = OpenConnections(limits: limits, logger: logger) { _, _ in changes.changed() }
        let router = Router()
        router.get("hello") { _, _ in "hello\n" }
        let (ports, portFound) = AsyncStream.makeStream(of: Int.self)
        let app = Application(router: router, server: .http1(tls: nil, connections: connections),
                              configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { channel in portFound.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        // Stopped gracefully: cancelling a server with connections open drops their channels
        // unfinished (a crash in debug builds).
        let group = ServiceGroup(services: [app], logger: logger)
        let server = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        do {
            try await body(port, connections, changes)
        } catch {
            await group.triggerGracefulShutdown()
            try? await server.value
            throw error
        }
        await group.triggerGracefulShutdown()
        try await server.value
    }

    @Test func aClientPastItsCapIsClosedAtOnceAndOthersStillGetIn() async throws {
        try await Self.serving(ConnectionLimits(total: 4, perClient: 2, idleTimeoutSeconds: 30)) { port, connections, changes in
            let a1 = try RawClient(from: "127.0.0.1", to: port), a2 = try RawClient(from: "127.0.0.1", to: port)
            #expect(try await a1.answer(to: "/hello").contains("200 OK"), "under the caps: served")
            #expect(try await a2.answer(to: "/hello").contains("200 OK"))
            let a3 = try RawClient(from: "127.0.0.1", to: port)
            #expect(await a3.isClosedByServer(within: .seconds(30)), "a third from one client is over its cap of 2")
            // Other clients still get in, up to the total.
            let b1 = try RawClient(from: "127.0.0.2", to: port), b2 = try RawClient(from: "127.0.0.2", to: port)
            #expect(try await b1.answer(to: "/hello").contains("200 OK"))
            #expect(try await b2.answer(to: "/hello").contains("200 OK"))
            let c1 = try RawClient(from: "127.0.0.3", to: port)
            #expect(await c1.isClosedByServer(within: .seconds(30)), "a fifth is over the total of 4")
            #expect(connections.counts == .init(open: 4, refused: 2))
            // A place given back is a place for the next client.
            a1.close()
            await changes.until { connections.counts.open == 3 }
            let c2 = try RawClient(from: "127.0.0.3", to: port)
            #expect(try await c2.answer(to: "/hello").contains("200 OK"))
            #expect(try await a2.answer(to: "/hello").contains("200 OK"), "those admitted were never disturbed")
        }
    }

    @Test func aConnectionThatSendsNothingOrHalfARequestIsClosedAfterTheIdleTimeout() async throws {
        try await Self.serving(ConnectionLimits(total: 16, perClient: 16, idleTimeoutSeconds: 1)) { port, connections, changes in
            let silent = try RawClient(from: "127.0.0.1", to: port)
            let slow = try RawClient(from: "127.0.0.1", to: port)
            try slow.send("GET /hello HTTP/1.1\r\nHost: box\r\n") // headers never finished (slowloris)
            let working = try RawClient(from: "127.0.0.1", to: port)
            #expect(try await working.answer(to: "/hello").contains("200 OK"))
            #expect(await silent.isClosedByServer(within: .seconds(30)))
            #expect(await slow.isClosedByServer(within: .seconds(30)))
            await changes.until { connections.counts.open == 0 }
            #expect(connections.counts.refused == 0, "closed for idling, not refused")
        }
    }

    @Test func aBodySentAByteAtATimeLosesItsPlaceAtTheRequestDeadline() async throws {
        // The idle timeout counts every body part as activity: alone (60 s here, a byte every
        // half second), it never ended this one. The request's 2 s deadline does; nothing else
        // could close it within the loop's 30 s, however slow a loaded machine makes the loop.
        let limits = ConnectionLimits(total: 16, perClient: 16, idleTimeoutSeconds: 60, requestSeconds: 2)
        try await Self.serving(limits) { port, _, _ in
            let dribbling = try RawClient(from: "127.0.0.1", to: port)
            try dribbling.send("POST /hello HTTP/1.1\r\nHost: box\r\nContent-Length: 1000\r\n\r\n")
            let start = ContinuousClock.now
            var closed = false
            while !closed && ContinuousClock.now - start < .seconds(30) {
                try? dribbling.send("x")
                closed = await dribbling.isClosedByServer(within: .milliseconds(500))
            }
            #expect(closed, "the request's deadline ended it")
        }
    }

    @Test func capsAreFittedToTheDescriptorsLeftAfterTheReserve() {
        let page = ConnectionLimits.boxPage
        #expect(page.fitted(toDescriptorLimit: 65_536) == page)
        let tight = page.fitted(toDescriptorLimit: 400)
        #expect(tight.total == 400 - ConnectionLimits.reservedDescriptors)
        #expect(tight.perClient == page.perClient)
        #expect(page.fitted(toDescriptorLimit: 100).total == 16, "never below 16, however few descriptors")
        #expect(page.fitted(toDescriptorLimit: 100).perClient == 16)
    }
}

/// Every change of the server's open connections, as it reports them (`OpenConnections`'
/// observer): a test waits on these instead of polling the counts.
final class ConnectionChanges: Sendable {
    /// Changes so far, and who waits for the next one.
    private let state = Mutex<(changes: UInt64, waiting: [CheckedContinuation<Void, Never>])>((0, []))

    func changed() {
        let woken = state.withLock { s in
            s.changes &+= 1
            defer { s.waiting = [] }
            return s.waiting
        }
        for w in woken { w.resume() }
    }

    /// Returns once `condition` holds, checked at once and after each change; at most 30 s (a
    /// loaded machine is slow), then the test's own expectation fails.
    func until(_ condition: @escaping @Sendable () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(30)
        let timeout = Task { [self] in
            try await Task.sleep(until: deadline)
            changed()
        }
        defer { timeout.cancel() }
        while ContinuousClock.now < deadline {
            let seen = state.withLock { $0.changes }
            if condition() { break }
            await withCheckedContinuation { (wake: CheckedContinuation<Void, Never>) in
                // A change since `seen` was counted: look again at once rather than wait.
                let missed = state.withLock { s in
                    if s.changes != seen { return true }
                    s.waiting.append(wake)
                    return false
                }
                if missed { wake.resume() }
            }
        }
        #expect(condition())
    }
}

/// A blocking TCP client from a chosen loopback address.
final class RawClient: @unchecked Sendable {
    private var fd: Int32

    init(from source: String, to port: Int) throws {
        fd = try connectFromLoopback(source, port: port)
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw RawClientError("send: errno \(errno)") }
    }

    /// GET `path` (keep-alive) and the response's head and start, as text.
    func answer(to path: String) async throws -> String {
        try send("GET \(path) HTTP/1.1\r\nHost: box\r\n\r\n")
        // Off Swift's cooperative pool: the server's handlers run on it, and a blocked read
        // there could starve the very answer it waits for.
        let text = await offPool { self.read(within: .seconds(30)) }
        guard !text.isEmpty else { throw RawClientError("no answer to \(path)") }
        return text
    }

    /// Whether the server closes the connection (a read sees its end) within `limit`.
    func isClosedByServer(within limit: Duration) async -> Bool {
        await offPool { self.waitForEnd(within: limit) }
    }

    private func waitForEnd(within limit: Duration) -> Bool {
        let micros = limit.components.seconds * 1_000_000 + limit.components.attoseconds / 1_000_000_000_000
        var timeout = timeval(tv_sec: Int(micros / 1_000_000), tv_usec: Int(micros % 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    private func read(within limit: Duration) -> String {
        var timeout = timeval(tv_sec: Int(limit.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }
}

struct RawClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
