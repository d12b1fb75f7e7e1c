import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Prometheus
import Testing
import VigilNode
import VigilSystem
@testable import VigilWeb
@_exported import VigilTestSupport

let quietLogger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

/// A real node (simulated radio and board on a manual clock) with its real page server on a
/// free port, and an HTTP client that does not follow redirects (the tests look at them).
/// Seconds for sessions and sign-in limits come from `seconds`, which tests move.
final class WebHarness: @unchecked Sendable {
    let dir: TemporaryDirectory
    /// The node's clock when the harness drives time (nil for a real-time node).
    let manual: ManualClock?
    /// The node as the page holds it; the node itself is the loop's once started.
    let node: NodeHandle
    let configuration: NodeConfiguration
    /// The node until `start` moves it to its loop.
    private let unstarted: Handover<Node>
    private var running: NodeThread?
    let settings: HTTPSettings
    /// Monotonic seconds the server's sessions and limits read (tests move it).
    let seconds = Seconds()
    let client: HTTPClient
    /// The node's metrics, served at /metrics.
    let metrics = PrometheusCollectorRegistry()
    private var serverTask: Task<Void, any Error>?
    private(set) var server: WebServer?
    /// Browsers streaming the page now.
    var feedBrowsers: Int { server?.feed.browsers ?? 0 }
    private(set) var port = 0
    private(set) var fingerprint: String?

    var base: String { "\(settings.tls ? "https" : "http")://127.0.0.1:\(port)" }

    init(_ name: String, tls: Bool = false, publicView: Bool = false, realTime: Bool = false,
         password: String? = "correct horse battery") throws {
        dir = TemporaryDirectory(name)
        manual = realTime ? nil : ManualClock()
        var c = NodeConfiguration()
        c.dataDirectory = dir.path
        c.simulation.advertisers = 4
        c.scanWindowMicroseconds = 300_000
        c.commitWindowMicroseconds = 1_000
        c.initialMapBytes = 4 << 20
        var http = HTTPSettings()
        http.listen = "127.0.0.1:0"
        http.tls = tls
        http.publicView = publicView
        c.http = http
        c.metrics = PrometheusMetricsFactory(registry: metrics)
        settings = http
        // The shelter's key: alerts go on the air signed with it (a box without one refuses to
        // raise or answer alerts, and says so).
        FileManager.default.createFile(atPath: dir.path + "/shelter.key", contents: Data(String(repeating: "5a", count: 32).utf8),
                                       attributes: [.posixPermissions: 0o600])
        let made = if let manual {
            try Node(configuration: c, clock: manual, monotonic: manual, logger: quietLogger)
        } else {
            try Node(configuration: c, logger: quietLogger)
        }
        node = made.handle
        unstarted = Handover(made)
        configuration = c
        if let password { try WebCredentials(dataDirectory: dir.path).setPassword(password) }
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        tlsConfiguration.certificateVerification = .none // checked by fingerprint instead (see tlsTests)
        var configuration = HTTPClient.Configuration(tlsConfiguration: tlsConfiguration)
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Starts a harness, runs `body` with it, and stops it whether `body` succeeded or not.
    static func with(_ name: String, tls: Bool = false, publicView: Bool = false, realTime: Bool = false,
                     _ body: (WebHarness) async throws -> Void) async throws {
        let web = try WebHarness(name, tls: tls, publicView: publicView, realTime: realTime)
        do {
            try await web.start()
            try await body(web)
        } catch {
            try? await web.stop()
            throw error
        }
        try await web.stop()
    }

    func start() async throws {
        guard let made = unstarted.take() else { throw HarnessError(message: "the harness was started already") }
        running = try NodeThread(made, name: "vigil-web-test")
        await settled()
        let listening = AsyncStream<(Int, String?)>.makeStream()
        let seconds = self.seconds
        let server = WebServer(node: node, settings: settings, dataDirectory: dir.path, logger: quietLogger, metrics: metrics,
                               secondsNow: { seconds.now },
                               onListening: { port, fingerprint in listening.continuation.yield((port, fingerprint)) })
        self.server = server
        serverTask = Task { try await server.run() }
        for await (port, fingerprint) in listening.stream {
            self.port = port
            self.fingerprint = fingerprint
            break
        }
        // The first snapshot, published once the server asked for them (at the loop's next turn).
        if manual != nil { await advance(byMicroseconds: 300_000) }
        try await untilSnapshot { _ in true }
        // The page's own reader of snapshots (its task, not the node's) has it too: until then
        // /healthz says "starting", which under load raced the first request of a test.
        let deadline = ContinuousClock.now + .seconds(30)
        while server.feed.secondsSinceSnapshot == nil {
            guard ContinuousClock.now < deadline else { throw HarnessError(message: "the page never received the node's first snapshot") }
            await Task.yield()
        }
    }

    /// Returns once the node has published a snapshot `holds` is true of (for a real-time node;
    /// a manual one publishes as its clock is moved). Event-driven: each snapshot is a wake-up.
    func untilSnapshot(_ holds: @escaping @Sendable (NodeSnapshot) -> Bool) async throws {
        if let s = node.snapshots.latest, holds(s) { return }
        for await s in node.snapshots.updates() where holds(s) { return }
        throw HarnessError(message: "the node stopped before publishing the snapshot waited for")
    }

    func stop() async throws {
        serverTask?.cancel()
        _ = try? await serverTask?.value
        node.requestStop(reason: "test")
        _ = try await running?.stopped()?.get()
        try await client.shutdown()
    }

    /// Moves the node's clock (and lets it settle), as real time would pass for it.
    func advance(byMicroseconds total: UInt64) async {
        guard let clock = manual else { return }
        var left = total
        while left > 0 {
            let d = min(100_000, left)
            clock.advance(byMicroseconds: d)
            await settled()
            left -= d
        }
    }

    func settled() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in node.whenSettled { _ in c.resume() } }
    }

    func read<T: Sendable>(_ read: @escaping @Sendable (Node) -> T) async -> T {
        await withCheckedContinuation { c in node.onLoop { c.resume(returning: read($0)) } }
    }

    // MARK: Requests

    struct Reply {
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        var body: String
        var cookie: String? {
            headers.first(name: "set-cookie").flatMap { $0.split(separator: ";").first.map(String.init) }
        }
    }

    func get(_ path: String, cookie: String? = nil, headers: [(String, String)] = []) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        if let cookie { request.headers.add(name: "cookie", value: cookie) }
        for (n, v) in headers { request.headers.add(name: n, value: v) }
        return try await send(request)
    }

    func post(_ path: String, form: String, cookie: String? = nil, origin: String? = nil) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        if let cookie { request.headers.add(name: "cookie", value: cookie) }
        if let origin { request.headers.add(name: "origin", value: origin) }
        request.body = .bytes(ByteBuffer(string: form))
        return try await send(request)
    }

    func api(_ method: HTTPMethod, _ path: String, json: String? = nil, token: String? = nil,
             cookie: String? = nil, csrf: String? = nil) async throws -> Reply {
        var request = HTTPClientRequest(url: base + "/api/v1" + path)
        request.method = method
        if let token { request.headers.add(name: "authorization", value: "Bearer \(token)") }
        if let cookie { request.headers.add(name: "cookie", value: cookie) }
        if let csrf { request.headers.add(name: "x-csrf-token", value: csrf) }
        if let json {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        return try await send(request)
    }

    func send(_ request: HTTPClientRequest) async throws -> Reply {
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 4 << 20)
        return Reply(status: response.status, headers: response.headers, body: String(buffer: body))
    }

    /// Signs in with `password`; the session cookie and the page's CSRF token.
    func signIn(_ password: String = "correct horse battery") async throws -> (cookie: String, csrf: String) {
        let reply = try await post("/login", form: "password=" + (password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
        #expect(reply.status == .seeOther, "signed in: \(reply.body)")
        let cookie = try #require(reply.cookie)
        let page = try await get("/", cookie: cookie)
        return (cookie, try #require(Self.csrf(in: page.body)))
    }

    static func csrf(in html: String) -> String? {
        guard let r = html.range(of: "<meta name=\"csrf\" content=\"") else { return nil }
        let rest = html[r.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        let token = String(rest[..<end])
        return token.isEmpty ? nil : token
    }
}

/// A clock in seconds that tests move.
final class Seconds: Sendable {
    private let value = LockedValue<UInt64>(1_000)
    var now: UInt64 { value.withLock { $0 } }
    func advance(_ by: UInt64) { value.withLock { $0 += by } }
}

struct HarnessError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
