import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import VigilEvents
import VigilHub
import VigilHubProtocol
import VigilLog
import VigilNode
import VigilSystem

/// The hub's three figures (issue 11), against a real hub (in this process) on its own
/// PostgreSQL cluster, over TLS on loopback:
///
/// - `hub_ingest_eps`: 200 boxes uploading their batches at once (each box one batch after the
///   other, as a box does), events per second stored; the baseline is the same rows, in the
///   same batches from 200 tasks at once, inserted with postgres-nio directly (one
///   `INSERT … SELECT FROM unnest(…)` per batch, in a transaction, into a copy of the table).
/// - `hub_backlog_drain_s`: a box with 1M events pending (200k in quick mode) starts; seconds
///   until its log records the hub's acknowledgement of the last one.
/// - `hub_alert_fanout_p99_ms`: box A (a running node) raises an SOS; milliseconds until box B
///   (another running node, out of radio range) has it durable, with 200 boxes long-polling
///   the feed (198 of them plain HTTP clients).
let benchLogger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }

struct HubBench {
    static let metrics = ["hub_ingest_eps", "hub_backlog_drain_s", "hub_alert_fanout_p99_ms"]
    static let boxes = 200

    let plan: Plan
    let options: Options
    let reporter: Reporter

    var eventsPerBox: Int { options.quick ? 500 : 2_000 }
    var backlogEvents: Int { options.quick ? 200_000 : 1_000_000 }
    var alerts: Int { options.quick ? 20 : 60 }

    func run() throws {
        try withTemporaryDirectory("hub") { directory in
            // The cluster runs as the postgres user when this runs as root.
            _ = chmod(directory, 0o711)
            try blocking { try await measure(directory) }
        }
    }

    private func measure(_ directory: String) async throws {
        let logger = benchLogger
        let hubData = directory + "/hub"
        let listening = OneShot<Int>()
        let hubTask = Task.detached {
            try await Hub.run(HubConfiguration(dataDirectory: hubData, host: "127.0.0.1", port: 0), logger: logger) { port, _ in
                listening.give(port)
            }
        }
        defer { hubTask.cancel() }
        guard let port = await listening.value(timeoutSeconds: 120) else { throw BenchError("hub: the hub did not start") }
        let url = "https://127.0.0.1:\(port)"
        let cluster = try LocalCluster(dataDirectory: hubData, logger: logger)
        let pem = try String(contentsOfFile: hubData + "/tls/hub.crt", encoding: .utf8)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        tls.certificateVerification = .noHostnameVerification
        var httpConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
        httpConfiguration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: Self.boxes + 8)
        httpConfiguration.timeout = .init(connect: .seconds(10), read: .seconds(60))
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        do {
            try await Hub.withDatabase(HubConfiguration(dataDirectory: hubData), cluster: cluster, logger: logger) { database in
                if reporter.wants("hub_ingest_eps") { try await ingest(database, http, url) }
                if reporter.wants("hub_alert_fanout_p99_ms") { try await fanout(database, http, url, hubData: hubData, base: directory) }
                if reporter.wants("hub_backlog_drain_s") { try await drain(database, url, hubData: hubData, base: directory) }
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
        hubTask.cancel()
        _ = await hubTask.result
    }

    // MARK: hub_ingest_eps

    struct EnrolledBox: Sendable {
        let node: UInt64
        let credential: BoxCredential
    }

    /// `count` boxes enrolled through the hub's own path (a token each, then the enrolment),
    /// `workers` at once; in no particular order.
    static func enrol(_ database: HubDatabase, count: Int, label: String, workers: Int = 1) async throws -> [EnrolledBox] {
        try await withThrowingTaskGroup(of: [EnrolledBox].self) { group in
            for w in 0..<workers {
                group.addTask {
                    var mine: [EnrolledBox] = []
                    var rng = SystemRandomNumberGenerator()
                    for i in stride(from: w, to: count, by: workers) {
                        let token = try await database.createEnrolmentToken(name: "\(label)-\(i)")
                        let node = rng.next() | 1
                        guard case .enrolled(_, let secret) = try await database.enrol(token: token, node: node) else {
                            throw BenchError("hub: box \(label)-\(i) could not enrol")
                        }
                        mine.append(EnrolledBox(node: node, credential: BoxCredential(node: node, secret: secret)))
                    }
                    return mine
                }
            }
            var all: [EnrolledBox] = []
            for try await part in group { all += part }
            return all
        }
    }

    /// One event as the baseline inserts it.
    struct Row: Sendable {
        var seq: UInt64
        var kind: UInt32
        var timeUs: UInt64
        var payload: [UInt8]
        var hash: [UInt8]
    }

    /// A box's batches as the box sends them: 1,000 check-ins each, the same rows for the hub and
    /// for the baseline.
    static func batches(for box: UInt64, events: Int) -> [(batch: UploadBatch, rows: [Row])] {
        var out: [(UploadBatch, [Row])] = []
        var seq: UInt64 = 1
        while seq <= UInt64(events) {
            let last = min(UInt64(events), seq + 999)
            var uploaded: [UploadedEvent] = []
            var rows: [Row] = []
            for s in seq...last {
                var c = CheckIn()
                c.resident = "room-\(s % 40)"
                c.source = .checkInButton
                let (kind, payload) = EventCodec.encode(.checkIn(c))
                let time = 1_767_225_600_000_000 + s * 1_000_000
                let hash = ContentHash.bytes(kind: kind, timeMicroseconds: time, payload: payload)
                uploaded.append(UploadedEvent(seq: s, kind: kind, timeUs: time, payload: payload, hash: hash))
                rows.append(Row(seq: s, kind: kind, timeUs: time, payload: payload, hash: hash))
            }
            out.append((UploadBatch(node: NodeIDText.format(box), epoch: 0, from: seq, through: last, events: uploaded,
                                    box: BoxReport(backlog: UInt64(events) - last)), rows))
            seq = last + 1
        }
        return out
    }

    private func ingest(_ database: HubDatabase, _ http: HTTPClient, _ url: String) async throws {
        try await database.client.query("CREATE TABLE IF NOT EXISTS bench_events (LIKE events INCLUDING ALL)", logger: benchLogger)
        let runs = min(plan.runs, 3)
        var hubRates: [Double] = []
        var bareRates: [Double] = []
        for run in 0..<runs {
            let boxes = try await Self.enrol(database, count: Self.boxes, label: "ingest\(run)")
            let perBox = eventsPerBox
            let work = boxes.map { box in (box, Self.batches(for: box.node, events: perBox)) }
            // The binary body, as boxes send it (`HubClient.upload`).
            let bodies = try work.map { box, batches in (box, try batches.map { ByteBuffer(bytes: try $0.batch.protobuf()) }) }
            let total = Self.boxes * perBox

            // Through the hub: every box at once, each batch after the previous one's answer.
            let hubStart = monotonicNanoseconds()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (box, batches) in bodies {
                    group.addTask {
                        for body in batches {
                            var request = HTTPClientRequest(url: url + "/api/v1/boxes/\(NodeIDText.format(box.node))/events")
                            request.method = .POST
                            request.headers.add(name: "content-type", value: UploadBatch.protobufContentType)
                            request.headers.add(name: "authorization", value: box.credential.headerValue)
                            request.body = .bytes(body)
                            let response = try await http.execute(request, timeout: .seconds(120))
                            _ = try await response.body.collect(upTo: 1 << 20)
                            guard response.status == .ok else { throw BenchError("hub: an upload was answered \(response.status)") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let hubNanoseconds = monotonicNanoseconds() - hubStart
            var stored: Int64 = 0
            for try await (n) in try await database.client.query("SELECT count(*) FROM events WHERE node_id = ANY(\(boxes.map { Int64(bitPattern: $0.node) })::bigint[])",
                                                                logger: benchLogger).decode(Int64.self) { stored = n }
            guard stored == Int64(total) else { throw BenchError("hub: \(stored) rows stored, expected \(total)") }

            // The baseline: the same rows, the same batches, 200 tasks, postgres-nio directly.
            let bareStart = monotonicNanoseconds()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (box, batches) in work {
                    group.addTask {
                        for (_, rows) in batches {
                            try await database.client.withTransaction(logger: benchLogger) { connection in
                                try await connection.query("""
                                    INSERT INTO bench_events (node_id, epoch, seq, kind, time_us, hash, payload)
                                    SELECT \(Int64(bitPattern: box.node)), 0, s, k, t, h, p
                                    FROM unnest(\(rows.map { Int64(bitPattern: $0.seq) })::bigint[], \(rows.map { Int32(bitPattern: $0.kind) })::integer[],
                                                \(rows.map { Int64(bitPattern: $0.timeUs) })::bigint[], \(rows.map { ByteBuffer(bytes: $0.hash) })::bytea[],
                                                \(rows.map { ByteBuffer(bytes: $0.payload) })::bytea[]) AS u(s, k, t, h, p)
                                    ON CONFLICT (node_id, epoch, seq) DO NOTHING
                                    """, logger: benchLogger)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let bareNanoseconds = monotonicNanoseconds() - bareStart
            hubRates.append(perSecond(total, nanoseconds: hubNanoseconds))
            bareRates.append(perSecond(total, nanoseconds: bareNanoseconds))
            progress("hub ingest run \(run + 1)/\(runs): \(total) events, hub \(Int(hubRates.last ?? 0))/s, bare postgres-nio \(Int(bareRates.last ?? 0))/s")
        }
        reporter.emit(MetricLine(metric: "hub_ingest_eps", value: median(hubRates) ?? 0, unit: "events/s", baseline: median(bareRates), context: [
            ("boxes", .int(Self.boxes)), ("events_per_box", .int(eventsPerBox)), ("batch_events", .int(1_000)), ("runs", .int(runs)),
            ("goal_ratio", .double(0.7)), ("met", .bool((median(hubRates) ?? 0) >= 0.7 * (median(bareRates) ?? .infinity))),
            ("baseline_is", .string("the same rows and batches inserted with postgres-nio directly, 200 tasks")),
        ]))
    }

    // MARK: hub_alert_fanout_p99_ms

    private func fanout(_ database: HubDatabase, _ http: HTTPClient, _ url: String, hubData: String, base: String) async throws {
        // 198 boxes that only listen: long polls from the feed's end, again after every answer.
        let listeners = try await Self.enrol(database, count: Self.boxes - 2, label: "listener")
        var end: UInt64 = 0
        for try await (p) in try await database.client.query("SELECT coalesce(max(position), 0) FROM feed", logger: benchLogger).decode(Int64.self) {
            end = UInt64(p)
        }
        let start = end
        let polls = Task.detached {
            await withTaskGroup(of: Void.self) { group in
                for box in listeners {
                    group.addTask {
                        var cursor = start
                        while !Task.isCancelled {
                            var request = HTTPClientRequest(url: url + "/api/v1/boxes/\(NodeIDText.format(box.node))/feed?after=\(cursor)&wait=25")
                            request.headers.add(name: "authorization", value: box.credential.headerValue)
                            guard let response = try? await http.execute(request, timeout: .seconds(40)),
                                  let body = try? await response.body.collect(upTo: 4 << 20),
                                  let answer = try? JSONDecoder().decode(FeedAnswer.self, from: Data(body.readableBytesView)) else {
                                if Task.isCancelled { return }
                                continue
                            }
                            cursor = answer.cursor
                        }
                    }
                }
            }
        }
        defer { polls.cancel() }

        let a = try await BenchBox(label: "fanout-a", base: base, database: database, url: url, hubData: hubData)
        let b = try await BenchBox(label: "fanout-b", base: base, database: database, url: url, hubData: hubData)
        var latencies: [UInt64] = []
        for i in 0..<(alerts + 2) {
            let raised = monotonicNanoseconds()
            let reply = OneShot<NodeReply>()
            let arrival = OneShot<UInt64>()
            a.node.submit(.raiseAlert(AlertRequest(kind: "sos", lifetimeMicroseconds: 3_600_000_000, text: "bench \(i)"))) { answer in
                reply.give(answer)
                guard answer.ok, let key = answer.alert else { arrival.give(0); return }
                b.node.whenState({ $0.projections.alerts.alerts[key] != nil }) { _ in arrival.give(monotonicNanoseconds()) }
            }
            // Bounded: a box that never hears it fails the run instead of hanging it.
            guard let arrived = await arrival.value(timeoutSeconds: 30) else {
                try? await a.stop()
                try? await b.stop()
                throw BenchError("hub: box B did not get SOS \(i) within 30 s")
            }
            guard arrived > 0 else { throw BenchError("hub: box A refused the SOS: \(String(describing: reply.peek()))") }
            if i >= 2 { latencies.append(arrived - raised) } // two warm-up alerts
        }
        try await a.stop()
        try await b.stop()
        polls.cancel()
        let sorted = latencies.sorted()
        reporter.emit(MetricLine(metric: "hub_alert_fanout_p99_ms", value: milliseconds(percentile(sorted, 99) ?? 0), unit: "ms", context: [
            ("p50", .optional(percentile(sorted, 50).map(milliseconds))), ("max", .optional(sorted.last.map(milliseconds))),
            ("count", .int(sorted.count)), ("boxes_polling", .int(Self.boxes)), ("goal_ms", .int(500)),
            ("met", .bool(milliseconds(percentile(sorted, 99) ?? .max) <= 500)),
        ]))
    }

    // MARK: hub_backlog_drain_s

    private func drain(_ database: HubDatabase, _ url: String, hubData: String, base: String) async throws {
        let directory = base + "/drain-box"
        // The backlog: a box's log after an outage, written straight to the log (check-ins and
        // per-minute occupancy, the bulk of what a box sends).
        var configuration = LogConfiguration(directory: directory)
        configuration.sync = .none
        configuration.initialMapSize = 1 << 30
        let count = backlogEvents
        let written = try runVigilAppend(directory: directory, configuration: configuration, count: count,
                                         pacing: .saturated(maxInFlight: plan.maxInFlight), device: nil) { i in
            let time = 1_767_225_600_000_000 + UInt64(i) * 60_000_000
            let body: EventBody
            if i % 2 == 0 {
                var o = OccupancySampled()
                o.minuteStartUs = time / 60_000_000 * 60_000_000
                o.advertisers = UInt32(100 + i % 50)
                o.radioOn = true
                body = .occupancySampled(o)
            } else {
                var c = CheckIn()
                c.resident = "room-\(i % 40)"
                c.source = .checkInButton
                body = .checkIn(c)
            }
            let (kind, payload) = EventCodec.encode(body)
            return (LogRecord(kind: kind, timeMicroseconds: time, payload: payload), .critical)
        }
        guard written.acknowledged == count else { throw BenchError("hub: the backlog has \(written.acknowledged) events, expected \(count)") }
        let started = monotonicNanoseconds()
        let box = try await BenchBox(label: "drain", base: base, database: database, url: url, hubData: hubData, directory: directory)
        let opened = monotonicNanoseconds()
        let last = UInt64(count)
        let done: UInt64 = await withCheckedContinuation { continuation in
            box.node.whenState({ $0.projections.hub.syncedThrough >= last }) { _ in continuation.resume(returning: monotonicNanoseconds()) }
        }
        let acknowledgements = await withCheckedContinuation { continuation in
            box.node.onLoop { continuation.resume(returning: $0.projections.hub.acknowledgements) }
        }
        try await box.stop()
        let seconds = Double(done - started) / 1e9
        progress("hub drain: \(count) events in \(String(format: "%.1f", seconds)) s (node open \(String(format: "%.1f", Double(opened - started) / 1e9)) s), \(acknowledgements) acknowledgements")
        reporter.emit(MetricLine(metric: "hub_backlog_drain_s", value: seconds, unit: "s", context: [
            ("events", .int(count)), ("events_per_s", .double(Double(count) / seconds)), ("acknowledgements", .int(Int(acknowledgements))),
            ("goal_s", .int(60)), ("met", .bool(seconds <= 60)),
        ]))
    }
}

/// A running node joined to the bench's hub (enrolled through the database, linked in its
/// `hub.json` like `vigil hub join` does).
final class BenchBox: Sendable {
    let node: NodeHandle
    let nodeID: UInt64
    private let running: NodeThread

    init(label: String, base: String, database: HubDatabase, url: String, hubData: String, directory: String? = nil) async throws {
        let directory = directory ?? base + "/" + label
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let token = try await database.createEnrolmentToken(name: label)
        let nodeID = try NodeIdentity.load(dataDirectory: directory)
        self.nodeID = nodeID
        guard case .enrolled(let name, let secret) = try await database.enrol(token: token, node: nodeID) else {
            throw BenchError("hub: \(label) could not enrol")
        }
        let pem = try String(contentsOfFile: hubData + "/tls/hub.crt", encoding: .utf8)
        let fingerprint = CertificateFingerprint.of(pem: pem) ?? ""
        try HubLinks(hubs: [HubLinks.Link(url: url, fingerprint: fingerprint, certificate: pem, name: name, credential: secret)])
            .save(dataDirectory: directory)
        var configuration = NodeConfiguration()
        configuration.dataDirectory = directory
        configuration.radio = "sim"
        configuration.simulation.advertisers = 0
        configuration.initialMapBytes = 1 << 30
        // A shelter key, so an SOS can be raised by command (it also goes on the air).
        let key = directory + "/shelter.key"
        FileManager.default.createFile(atPath: key, contents: Data(String(repeating: "5a", count: 32).utf8), attributes: [.posixPermissions: 0o600])
        configuration.airAlerts.keyFile = key
        running = try NodeThread(Node(configuration: configuration, logger: benchLogger), name: "vigil-bench-\(label)")
        node = running.handle
    }

    func stop() async throws {
        node.requestStop(reason: "bench")
        _ = try await running.stopped()?.get()
    }
}

/// One value, given once, awaited with a bound.
final class OneShot<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T?
    private var waiters: [CheckedContinuation<T?, Never>] = []

    func give(_ v: T) {
        lock.lock()
        value = v
        let w = waiters
        waiters = []
        lock.unlock()
        for c in w { c.resume(returning: v) }
    }

    func value(timeoutSeconds: Double) async -> T? {
        let timeout = Task.detached { [weak self] in
            try? await Task.sleep(for: .seconds(timeoutSeconds))
            self?.expire()
            return ()
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            lock.lock()
            if let value { lock.unlock(); continuation.resume(returning: value); return }
            waiters.append(continuation)
            lock.unlock()
        }
    }

    private func expire() {
        lock.lock()
        let w = waiters
        waiters = []
        lock.unlock()
        for c in w { c.resume(returning: nil) }
    }
}

/// Runs async work from the bench's synchronous driver.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = OneShot<Result<T, any Error>>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { result.give(.success(try await body())) } catch { result.give(.failure(error)) }
        done.signal()
    }
    done.wait()
    guard let outcome = result.peek() else { throw BenchError("the async work gave no result") }
    return try outcome.get()
}

extension OneShot {
    func peek() -> T? {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
