import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import Testing
import VigilCAP
import VigilCore
import VigilEvents
import VigilHub
import VigilHubProtocol
import VigilLog
import VigilSystem
import VigilTestSupport
@testable import VigilNode

/// Silent, unless VIGIL_TEST_LOG is set (then everything the hub and the boxes log, on stderr).
let quietLogger: Logger = {
    guard let level = ProcessInfo.processInfo.environment["VIGIL_TEST_LOG"] else {
        return Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    }
    var logger = Logger(label: "test")
    logger.logLevel = Logger.Level(rawValue: level) ?? .debug
    return logger
}()

/// A real hub for a test: the built `vigil-hub serve` as a child process, with its own
/// PostgreSQL cluster (Debian's initdb and pg_ctl, as the hub runs it without `database.url`) in
/// a temporary directory, on loopback. Nothing is mocked; `kill()` is a kill -9.
final class HubHarness: @unchecked Sendable {
    let directory: TemporaryDirectory
    var hubData: String { directory.path("hub") }
    private var process: TestProcess?
    /// Its stdout, kept open while it runs.
    private var output: Pipe?
    private(set) var port = 0
    /// Its certificate's SHA-256, hex, as `serve` prints it.
    private(set) var fingerprint = ""
    /// A database of another hub's (`--database-url`); nil: this hub's own cluster.
    var databaseURL: String?
    /// Whether the hub says its clock is synchronised (hub.yaml's `clock_synchronised_file`
    /// names a file that exists); this machine has no systemd-timesyncd, so by default it does not.
    var clockSynchronised = false
    /// hub.yaml's `database.request_seconds`; nil: the hub's default.
    var databaseRequestSeconds: Int?
    /// hub.yaml's `warnings:` section, as YAML (nil: none).
    var warningsYAML: String?

    /// scripts/test exports VIGIL_BINARY (the `vigil` binary); vigil-hub is built beside it.
    /// The box's CLI, built beside `vigil-hub`.
    static var vigilBinary: String {
        URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("vigil").path
    }

    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["VIGIL_BINARY"] {
            return URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent("vigil-hub").path
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/vigil-hub").path
    }

    init(_ label: String = "hub") {
        directory = TemporaryDirectory(label)
        // The cluster runs as the postgres user when the tests run as root: let it through.
        _ = chmod(directory.path, 0o711)
    }

    deinit {
        if let process, process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        if let cluster = try? LocalCluster(dataDirectory: hubData, logger: quietLogger) { cluster.stopAlways() }
    }

    var url: String { "https://127.0.0.1:\(port)" }
    var configuration: HubConfiguration {
        HubConfiguration(dataDirectory: hubData, host: "127.0.0.1", port: port, databaseURL: databaseURL)
    }

    /// Starts `vigil-hub serve` (again on the same port after a stop) and returns once it listens.
    func start() async throws {
        var yaml = ""
        if clockSynchronised {
            FileManager.default.createFile(atPath: directory.path("clock-synchronised"), contents: Data())
            yaml += "clock_synchronised_file: \(directory.path("clock-synchronised"))\n"
        }
        if let databaseRequestSeconds { yaml += "database:\n  request_seconds: \(databaseRequestSeconds)\n" }
        if let warningsYAML { yaml += warningsYAML }
        if !yaml.isEmpty {
            try FileManager.default.createDirectory(atPath: hubData, withIntermediateDirectories: true)
            try yaml.write(toFile: hubData + "/hub.yaml", atomically: true, encoding: .utf8)
        }
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve"] + (databaseURL.map { ["--database-url", $0] } ?? []) + ["--data", hubData, "--listen", "127.0.0.1:\(port)",
                             "--log-level", ProcessInfo.processInfo.environment["VIGIL_TEST_LOG"] ?? "info"]
        let out = Pipe()
        process.standardOutput = out
        // Its log, kept with the test's files (a failing test's hub says what it did).
        if !FileManager.default.fileExists(atPath: directory.path("hub.log")) {
            FileManager.default.createFile(atPath: directory.path("hub.log"), contents: nil)
        }
        let log = FileHandle(forWritingAtPath: directory.path("hub.log"))
        log?.seekToEndOfFile()
        process.standardError = log ?? FileHandle.nullDevice
        try process.run()
        self.process = process
        self.output = out
        // Its first line says where it listens (it makes its cluster first: seconds, not more).
        let line = await offPool { readFirstLine(out) }
        guard let p = listeningPort(in: line) else {
            throw HarnessError("vigil-hub did not start (\(Self.binary)): \(line)")
        }
        port = p
        if let c = line.range(of: "certificate ") { fingerprint = String(line[c.upperBound...].prefix { $0.isHexDigit }) }
    }

    /// Stops the hub as a service manager would (SIGTERM: it finishes what it does, stops its
    /// cluster if it started it).
    func stop() async {
        guard let process else { return }
        process.terminate()
        if await Self.exited(process, resendingTermination: true) {
            Issue.record("vigil-hub did not stop within two minutes of SIGTERM: killed. Its log ends:\n\(logTail())")
        } else if await Self.exitStatus(process) == 70 {
            Issue.record("vigil-hub's shutdown did not finish: its watchdog ended it. Its log ends:\n\(logTail())")
        }
        self.process = nil
    }

    /// The last lines of the hub's log, for a failure's message.
    func logTail(lines: Int = 30) -> String {
        let text = (try? String(contentsOfFile: directory.path("hub.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// Its exit status, once it has exited; nil while it runs or when a signal ended it.
    static func exitStatus(_ process: TestProcess) async -> Int32? {
        process.isRunning || process.terminationReason != .exit ? nil : process.terminationStatus
    }

    /// kill -9: nothing finishes; the cluster it started keeps running (the next start reuses it).
    func kill() async {
        guard let process else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        await Self.exited(process)
        self.process = nil
    }

    /// Waits until `process` has exited (reaped through `TestProcess`, so its status is there
    /// afterwards). `resendingTermination`: SIGTERM again every 5 s while it runs (one that came
    /// before the hub's handler was in place can be lost), and after two minutes SIGKILL: a hub
    /// that SIGTERM does not stop is a bug (`stop` fails the test), and must not hang the suite.
    /// Returns whether it had to be killed.
    @discardableResult
    static func exited(_ process: TestProcess, resendingTermination: Bool = false) async -> Bool {
        await offPool {
            guard resendingTermination else {
                process.waitUntilExit()
                return false
            }
            let start = monotonicNanoseconds()
            var lastTerm = start
            while process.isRunning {
                let now = monotonicNanoseconds()
                if now - start > 120_000_000_000 {
                    Glibc.kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                    return true
                }
                if now - lastTerm > 5_000_000_000 {
                    process.terminate()
                    lastTerm = now
                }
                usleep(20_000)
            }
            return false
        }
    }

    func enrolmentToken(for name: String) async throws -> EnrolmentToken {
        let text = try await Hub.enrol(name: name, configuration: configuration, logger: quietLogger)
        return try #require(EnrolmentToken(text: text))
    }

    /// Runs `body` against the hub's database directly (what the tests compare with the boxes);
    /// the cluster is started if the hub is not running.
    func database<T: Sendable>(_ body: @escaping @Sendable (HubDatabase) async throws -> T) async throws -> T {
        if databaseURL != nil { return try await Hub.withDatabase(configuration, cluster: nil, logger: quietLogger, body) }
        let cluster = try LocalCluster(dataDirectory: hubData, logger: quietLogger)
        try cluster.start()
        return try await Hub.withDatabase(configuration, cluster: cluster, logger: quietLogger, body)
    }

    /// An HTTPS client that trusts this hub's certificate, for requests made by hand.
    func rawClient(followRedirects: Bool = true) throws -> HTTPClient {
        let pem = try String(contentsOfFile: hubData + "/tls/hub.crt", encoding: .utf8)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        tls.certificateVerification = .noHostnameVerification
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        if !followRedirects { configuration.redirectConfiguration = .disallow }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}

/// Waits (off the pool) for a child to end, and gives its exit status, or 128 + the signal that
/// ended it.
func exitStatus(of process: TestProcess) async -> Int32 {
    await offPool {
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
}

/// The first of several answers to one waiter (a condition met, or its time bound).
final class OneAnswer: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Bool, Never>?
    func wait(_ c: CheckedContinuation<Bool, Never>) { lock.withLock { continuation = c } }
    func give(_ value: Bool) {
        let c = lock.withLock { () -> CheckedContinuation<Bool, Never>? in
            defer { continuation = nil }
            return continuation
        }
        c?.resume(returning: value)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A box: a node on a manual clock with the simulated radio and board, joined to a hub.
final class Box: @unchecked Sendable {
    let directory: TemporaryDirectory
    let clock = ManualClock()
    /// The running box as the test holds it (its node is the loop's).
    private(set) var node: NodeHandle?
    private var running: NodeThread?
    /// `site.name` and `site.location` (none by default).
    var site: (name: String, location: String)?
    /// `exposure.verification_keys` (none by default).
    var verificationKeys: [String] = []
    /// Where public warnings are judged (`site.location` for warnings; none by default).
    var warningSite: CAPPoint?

    init(_ label: String = #function) {
        directory = TemporaryDirectory(label)
    }

    var configuration: NodeConfiguration {
        var c = NodeConfiguration()
        c.dataDirectory = directory.path
        c.simulation.advertisers = 4
        c.simulation.minIntervalMicroseconds = 50_000
        c.simulation.maxIntervalMicroseconds = 150_000
        c.scanWindowMicroseconds = 300_000
        c.commitWindowMicroseconds = 1_000
        c.initialMapBytes = 4 << 20
        c.exposure.verificationKeys = verificationKeys
        if let warningSite { c.projections.warnings = CAPWarningSettings(site: warningSite) }
        if let site {
            c.projections.ladder.siteName = site.name
            c.projections.ladder.siteLocation = site.location
        }
        return c
    }

    func join(_ hub: HubHarness, as name: String, location: String? = nil) async throws {
        let token = try await hub.enrolmentToken(for: name)
        _ = try await HubJoin.join(url: hub.url, token: token, dataDirectory: directory.path, location: location)
    }

    func start() async throws {
        let running = try NodeThread(Node(configuration: configuration, clock: clock, monotonic: clock, logger: quietLogger),
                                     name: "vigil-test-box")
        self.running = running
        node = running.handle
        await settle()
    }

    func stop() async throws {
        guard let node, let running else { return }
        node.requestStop(reason: "test")
        _ = try await running.stopped()?.get()
        self.node = nil
        self.running = nil
    }

    /// Appends `body` on the node's loop and waits until it is applied.
    func append(_ body: EventBody) async {
        guard let node else { return }
        node.onLoop { $0.append(body) }
        await settle()
    }

    /// Appends all of `bodies` in one turn of the node's loop (one group commit) and waits until
    /// they are applied.
    func append(all bodies: [EventBody]) async {
        guard let node else { return }
        node.onLoop { n in for b in bodies { n.append(b) } }
        await settle()
    }

    /// Lets simulated time pass (the radio hears its advertisers).
    func advance(byMicroseconds total: UInt64) async {
        var left = total
        while left > 0 {
            let d = min(100_000, left)
            clock.advance(byMicroseconds: d)
            await settle()
            left -= d
        }
    }

    func settle() async {
        guard let node else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in node.whenSettled { _ in c.resume() } }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Node) -> T) async -> T? {
        guard let node else { return nil }
        return await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in node.onLoop { c.resume(returning: body($0)) } }
    }

    /// Waits until `condition` holds of the box's state, event-driven (`Node.whenState`): the
    /// state changes only when the uplink or the downlink logs what the hub answered. `seconds`
    /// only bounds a failing test (the hub is a real server, on real time).
    func until(_ what: String, seconds: Double = 60, _ condition: @escaping @Sendable (Node) -> Bool) async throws {
        guard let node else { throw HarnessError("the box is not running") }
        let answer = OneAnswer()
        let met = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            answer.wait(c)
            node.whenState(condition) { _ in answer.give(true) }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                answer.give(false)
            }
        }
        if !met { throw HarnessError("not within \(seconds) s: \(what)") }
    }

    /// Waits until the box has logged the hub's acknowledgement of every event that leaves it.
    func waitUntilSynced(seconds: Double = 60) async throws {
        try await until("the box synced", seconds: seconds) { n in
            n.projections.hub.acknowledgements > 0 && n.projections.hub.syncedThrough >= Self.lastShareable(n)
        }
    }

    static func lastShareable(_ node: Node) -> UInt64 {
        var last: UInt64 = 0
        try? node.log.read { txn in
            try txn.forEach(from: 0) { result in
                if case .success(let v) = result, let kind = EventKind(rawValue: Int(v.kind)), kind.leavesBox { last = v.sequence }
                return true
            }
        }
        return last
    }

    /// Every event of the box's log that leaves it, as the hub must hold it (same identity,
    /// same hash), read from the log on disk.
    func expectedAtHub(policy: SharePolicy = SharePolicy(), from: UInt64 = 0) throws -> [(seq: UInt64, kind: UInt32, hash: String)] {
        try Self.expectedAtHub(directory: directory.path, policy: policy, from: from)
    }

    /// The same for the log in `directory` (a box run as a process).
    static func expectedAtHub(directory: String, policy: SharePolicy = SharePolicy(),
                              from: UInt64 = 0) throws -> [(seq: UInt64, kind: UInt32, hash: String)] {
        let log = try EventLog.openReadOnly(directory: directory)
        var out: [(seq: UInt64, kind: UInt32, hash: String)] = []
        try log.read { txn in
            try txn.forEach(from: from) { result in
                guard case .event(let e) = Replay.input(result), let u = UploadedEvent(e, policy: policy) else { return true }
                out.append((u.seq, u.kind, Hex.encode(u.hash)))
                return true
            }
        }
        return out
    }
}
