import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import VigilEvents
import VigilHub
import VigilHubProtocol
import VigilNode
import VigilTestSupport

/// `hub_fanout_10k_p99_ms` (issue 27): a regional network's size.
///
/// One hub process (this binary run as `--hub-child DIR`: `Hub.run`, what `vigil-hub serve`
/// runs) with its own PostgreSQL cluster; this process is the simulator: 10,000 enrolled boxes
/// (2,000 in quick mode) each following the hub's feed stream over TLS, plus one running
/// node, box A. Box A raises an SOS, then a person takes its call at box A; for every simulated
/// box, the time from the raise (and from the taking) until the box has the item durable.
///
/// "Durable at a simulated box": a box's feed items go to one file this process writes and
/// `fdatasync`s (group commit, one writer thread), and an arrival counts when its sync returns.
/// A real box appends to its own LMDB log instead; here 10,000 boxes share one disk.
///
/// The value is the worse of the two p99s; the context has both, and the hub's RSS (now and
/// peak) and CPU during the measured calls. There is no baseline run: the goal (1,000 ms) is the
/// comparison, as for `hub_alert_fanout_p99_ms`. `FANOUT_BOXES=N` in the environment sets the
/// number of boxes, to see how the figure grows with them.
struct HubFanoutBench {
    static let metric = "hub_fanout_10k_p99_ms"
    static let childFlag = "--hub-child"
    static let goalMilliseconds = 1_000.0
    static let boxesPerClient = 250

    /// Seconds between measured calls (quick mode: none).
    static func callGapSeconds(quick: Bool) -> Double { quick ? 0 : 20 }

    let plan: Plan
    let options: Options
    let reporter: Reporter

    var boxes: Int { ProcessInfo.processInfo.environment["FANOUT_BOXES"].flatMap { Int($0) } ?? (options.quick ? 2_000 : 10_000) }
    var calls: Int { options.quick ? 2 : min(max(plan.runs, 3), 5) }

    func run() throws {
        try raiseDescriptorLimit(to: boxes + 2_000)
        try withTemporaryDirectory("hub-fanout") { directory in
            // The cluster runs as the postgres user when this runs as root.
            _ = chmod(directory, 0o711)
            try blocking { try await measure(directory) }
        }
    }

    /// Each simulated box holds a connection, and the hub (its child) one for each of them.
    private func raiseDescriptorLimit(to wanted: Int) throws {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw BenchError("hub fanout: getrlimit failed: errno \(errno)") }
        guard limit.rlim_max >= rlim_t(wanted) else {
            throw BenchError("hub fanout: \(wanted) descriptors are needed and the hard limit is \(limit.rlim_max) (ulimit -Hn)")
        }
        limit.rlim_cur = limit.rlim_max
        guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw BenchError("hub fanout: setrlimit failed: errno \(errno)") }
    }

    // MARK: The hub's process

    /// The hub child: runs the hub on DIR (port 0), says its port on stdout, ends on SIGTERM.
    static func runChild(directory: String) -> Never {
        let logger = {
            var l = Logger(label: "hub") { StreamLogHandler.standardError(label: $0) }
            l.logLevel = .warning
            return l
        }()
        // Every simulated box connects from this machine's one address: the caps per client and
        // in all are the descriptor limit's (the simulator raised it for the boxes).
        var configuration = HubConfiguration(dataDirectory: directory, host: "127.0.0.1", port: 0)
        configuration.connections.total = 1_000_000
        configuration.connections.perClient = 1_000_000
        let hub = configuration
        do {
            try blocking {
                try await Hub.run(hub, logger: logger) { port, _ in
                    writeAll("listening \(port)\n", to: STDOUT_FILENO)
                }
            }
            exit(0)
        } catch {
            writeAll("vigil-bench hub child: \(error)\n", to: STDERR_FILENO)
            exit(1)
        }
    }

    private func startHub(_ hubData: String) throws -> (Process, Int) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = [Self.childFlag, hubData]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        let said = readFirstLine(out)
        guard let line = said.split(separator: "\n").first, line.hasPrefix("listening "), let port = Int(line.dropFirst(10)) else {
            kill(child.processIdentifier, SIGTERM)
            throw BenchError("hub fanout: the hub process said \(said)")
        }
        return (child, port)
    }

    private func stopHub(_ child: Process) {
        guard child.isRunning else { return }
        kill(child.processIdentifier, SIGTERM)
        child.waitUntilExit()
    }

    // MARK: The measurement

    private func measure(_ directory: String) async throws {
        let hubData = directory + "/hub"
        let (hub, port) = try startHub(hubData)
        defer { stopHub(hub) }
        let url = "https://127.0.0.1:\(port)"
        let cluster = try LocalCluster(dataDirectory: hubData, logger: benchLogger)
        let pem = try String(contentsOfFile: hubData + "/tls/hub.crt", encoding: .utf8)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        tls.certificateVerification = .noHostnameVerification
        var httpConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
        httpConfiguration.connectionPool = .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: Self.boxesPerClient + 8)
        httpConfiguration.timeout = .init(connect: .seconds(60), read: .seconds(90))
        // Boxes share a client per 250: one pool of 10,000 connections spends the simulator's
        // time looking for an idle one (AsyncHTTPClient scans its pool), which no box does.
        let clients = (0..<(boxes + Self.boxesPerClient - 1) / Self.boxesPerClient).map { _ in
            HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        }
        let sink: DurableArrivals
        do {
            sink = try DurableArrivals(path: directory + "/arrivals", boxes: boxes)
        } catch {
            for c in clients { try? await c.shutdown() }
            throw error
        }
        do {
            try await Hub.withDatabase(HubConfiguration(dataDirectory: hubData), cluster: cluster, logger: benchLogger) { database in
                try await rounds(database, clients, url, hubData: hubData, base: directory, hub: hub.processIdentifier, sink: sink)
            }
        } catch {
            sink.close()
            for c in clients { try? await c.shutdown() }
            throw error
        }
        sink.close()
        for c in clients { try await c.shutdown() }
    }

    private func rounds(_ database: HubDatabase, _ clients: [HTTPClient], _ url: String, hubData: String, base: String,
                        hub: Int32, sink: DurableArrivals) async throws {
        let enrolStart = monotonicNanoseconds()
        let simulated = try await HubBench.enrol(database, count: boxes, label: "sim", workers: 16)
        progress("hub fanout: \(simulated.count) boxes enrolled in \(String(format: "%.1f", Double(monotonicNanoseconds() - enrolStart) / 1e9)) s")
        var end: UInt64 = 0
        for try await (p) in try await database.client.query("SELECT coalesce(max(position), 0) FROM feed", logger: benchLogger).decode(Int64.self) {
            end = UInt64(p)
        }
        let a = try await BenchBox(label: "fanout-10k-a", base: base, database: database, url: url, hubData: hubData)
        let pollers = FeedPollers(clients: clients, url: url, sink: sink)
        defer { pollers.stop() }
        // The boxes come up in waves of 250, each wave's first (plain) read answered before the
        // next starts: 10,000 TLS handshakes at once would measure the listen backlog instead.
        let rampStart = monotonicNanoseconds()
        try await pollers.start(simulated, after: end, wave: 250)
        progress("hub fanout: \(simulated.count) boxes following the feed over TLS after \(String(format: "%.1f", Double(monotonicNanoseconds() - rampStart) / 1e9)) s")

        var raisedLatencies: [UInt64] = []
        var takenLatencies: [UInt64] = []
        var cpuStart: (ticks: UInt64, wall: UInt64)?
        var postgresStart = PostgresSample()
        var ownCPUStart: UInt64 = 0
        var streamsStart = 0
        // One warm-up call, not counted: the first answers after the ramp.
        for i in 0..<(calls + 1) {
            if i == 1 {
                cpuStart = (processCPUTicks("\(hub)"), monotonicNanoseconds())
                postgresStart = postgresSample()
                ownCPUStart = processCPUTicks("self")
                streamsStart = pollers.streamsOpened
            }
            // The measured calls are spread over 80 s: the window holds heartbeats (every 20 s)
            // and the hub's credential checks of every stream (every 30 s), so the CPU is the
            // cost of holding 10,000 streams, not only of five items.
            if i >= 2 { try await Task.sleep(for: .seconds(Self.callGapSeconds(quick: options.quick))) }
            let round: (raised: [UInt64], taken: [UInt64])
            do { round = try await call(i, at: a, sink: sink) } catch {
                // Box A is a running node: stopped, not left to the process's end.
                try? await a.stop()
                throw error
            }
            if i >= 1 {
                raisedLatencies += round.raised
                takenLatencies += round.taken
            }
            progress("hub fanout: call \(i + 1)/\(calls + 1): p99 raised \(String(format: "%.0f", milliseconds(percentile(round.raised.sorted(), 99) ?? 0))) ms, taken \(String(format: "%.0f", milliseconds(percentile(round.taken.sorted(), 99) ?? 0))) ms; first \(String(format: "%.0f", milliseconds(round.raised.min() ?? 0))) ms, \(String(format: "%.0f", milliseconds(round.taken.min() ?? 0))) ms")
        }
        let cpuSeconds = Double(processCPUTicks("\(hub)") - (cpuStart?.ticks ?? 0)) / Double(sysconf(Int32(_SC_CLK_TCK)))
        let wallSeconds = Double(monotonicNanoseconds() - (cpuStart?.wall ?? 0)) / 1e9
        let simulatorCPU = Double(processCPUTicks("self") - ownCPUStart) / Double(sysconf(Int32(_SC_CLK_TCK)))
        let postgresCPU = Double(postgresSample().ticks(since: postgresStart)) / Double(sysconf(Int32(_SC_CLK_TCK)))
        let hubRSS = statusMegabytes("VmRSS:", pid: "\(hub)")
        let hubPeak = statusMegabytes("VmHWM:", pid: "\(hub)")
        let failedPolls = pollers.failures
        let streamsOpened = pollers.streamsOpened - streamsStart
        pollers.stop()
        try await a.stop()

        let raised = raisedLatencies.sorted()
        let taken = takenLatencies.sorted()
        let p99Raised = milliseconds(percentile(raised, 99) ?? .max)
        let p99Taken = milliseconds(percentile(taken, 99) ?? .max)
        let worse = max(p99Raised, p99Taken)
        progress("hub fanout: hub RSS \(Int(hubRSS)) MB (peak \(Int(hubPeak)) MB), CPU \(String(format: "%.2f", cpuSeconds)) s (PostgreSQL \(String(format: "%.2f", postgresCPU)) s, simulator \(String(format: "%.2f", simulatorCPU)) s) over \(String(format: "%.1f", wallSeconds)) s; \(streamsOpened) streams opened, \(failedPolls) failed")
        reporter.emit(MetricLine(metric: Self.metric, value: worse, unit: "ms", context: [
            ("p99_raised_ms", .double(p99Raised)), ("p50_raised_ms", .optional(percentile(raised, 50).map(milliseconds))),
            ("max_raised_ms", .optional(raised.last.map(milliseconds))),
            ("p99_taken_ms", .double(p99Taken)), ("p50_taken_ms", .optional(percentile(taken, 50).map(milliseconds))),
            ("max_taken_ms", .optional(taken.last.map(milliseconds))),
            ("boxes", .int(boxes)), ("calls", .int(calls)), ("arrivals", .int(raised.count + taken.count)),
            ("hub_rss_mb", .double(hubRSS)), ("hub_peak_rss_mb", .double(hubPeak)),
            ("hub_cpu_s", .double(cpuSeconds)), ("hub_cpu_percent_of_one_core", .double(wallSeconds > 0 ? 100 * cpuSeconds / wallSeconds : 0)),
            ("simulator_cpu_s", .double(simulatorCPU)), ("simulator_includes", .string("box A's node")), ("postgres_cpu_s", .double(postgresCPU)), ("failed_polls", .int(failedPolls)),
            ("streams_opened", .int(streamsOpened)), ("call_gap_s", .double(Self.callGapSeconds(quick: options.quick))), ("wall_s", .double(wallSeconds)),
            ("syncs", .int(sink.syncs)), ("cores", .int(ProcessInfo.processInfo.activeProcessorCount)),
            ("goal_ms", .double(Self.goalMilliseconds)), ("met", .bool(worse <= Self.goalMilliseconds)),
        ]))
    }

    /// One call: box A raises an SOS; when every simulated box has it, a person takes the call
    /// at box A; when every box has the taking, the latencies of both.
    private func call(_ i: Int, at a: BenchBox, sink: DurableArrivals) async throws -> (raised: [UInt64], taken: [UInt64]) {
        let raisedDone = sink.expect(origin: a.nodeID, phase: .raised)
        let raisedAt = monotonicNanoseconds()
        let reply = OneShot<NodeReply>()
        a.node.submit(.raiseAlert(AlertRequest(kind: "sos", lifetimeMicroseconds: 3_600_000_000, text: "fanout \(i)"))) { reply.give($0) }
        guard let answer = await reply.value(timeoutSeconds: 30), answer.ok, let key = answer.alert,
              let id = CommandInterpreter.parseAlertID(key) else {
            throw BenchError("hub fanout: box A refused the SOS: \(String(describing: reply.peek()))")
        }
        guard await raisedDone.value(timeoutSeconds: 120) != nil else {
            throw BenchError("hub fanout: \(sink.count(.raised)) of \(boxes) boxes had SOS \(i) after 120 s")
        }
        let raised = try sink.latencies(.raised, of: id, since: raisedAt)

        let takenDone = sink.expect(origin: a.nodeID, alert: id, phase: .taken)
        let takenAt = monotonicNanoseconds()
        let took = OneShot<NodeReply>()
        a.node.submit(.takeCall(TakeRequest(call: key, by: "bench", via: "cli"))) { took.give($0) }
        guard let tookAnswer = await took.value(timeoutSeconds: 30), tookAnswer.ok else {
            throw BenchError("hub fanout: box A would not take call \(i): \(String(describing: took.peek()))")
        }
        guard await takenDone.value(timeoutSeconds: 120) != nil else {
            throw BenchError("hub fanout: \(sink.count(.taken)) of \(boxes) boxes had the taking of call \(i) after 120 s")
        }
        return (raised, try sink.latencies(.taken, of: id, since: takenAt))
    }

    // MARK: /proc

    /// PostgreSQL's processes at one moment: each live one's CPU ticks, and the ticks of the
    /// children the postmaster has reaped so far.
    struct PostgresSample {
        var live: [String: UInt64] = [:]
        var reaped: UInt64 = 0

        /// Ticks spent between `start` and `self`: the live processes' growth, plus the ended
        /// ones' (reaped since, less what they had spent before `start`).
        func ticks(since start: PostgresSample) -> UInt64 {
            var total: Int64 = 0
            for (pid, now) in live { total += Int64(now) - Int64(start.live[pid] ?? 0) }
            total += Int64(reaped) - Int64(start.reaped)
            for (pid, before) in start.live where live[pid] == nil { total -= Int64(before) }
            return UInt64(max(0, total))
        }
    }

    private func postgresSample() -> PostgresSample {
        var sample = PostgresSample()
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return sample }
        for pid in entries where pid.allSatisfy(\.isNumber) {
            guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8), comm.hasPrefix("postgres"),
                  let fields = statFields(pid) else { continue }
            sample.live[pid] = fields.user + fields.system
            let parent = (try? String(contentsOfFile: "/proc/\(fields.parent)/comm", encoding: .utf8)) ?? ""
            if !parent.hasPrefix("postgres") { sample.reaped += fields.reapedUser + fields.reapedSystem }
        }
        return sample
    }

    /// utime + stime of a process, in clock ticks.
    private func processCPUTicks(_ pid: String) -> UInt64 {
        statFields(pid).map { $0.user + $0.system } ?? 0
    }

    /// `/proc/PID/stat`'s parent (field 4) and CPU ticks (fields 14 to 17).
    private func statFields(_ pid: String) -> (parent: String, user: UInt64, system: UInt64, reapedUser: UInt64, reapedSystem: UInt64)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command's closing parenthesis start at field 3.
        let f = stat[stat.index(after: close)...].split(separator: " ")
        guard f.count > 14, let user = UInt64(f[11]), let system = UInt64(f[12]), let cu = UInt64(f[13]), let cs = UInt64(f[14]) else { return nil }
        return (String(f[1]), user, system, cu, cs)
    }
}

/// A line of /proc/PID/status in kB (VmRSS, VmHWM), in MB; 0 when unreadable.
func statusMegabytes(_ field: String, pid: String = "self") -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
          let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kilobytes / 1024
}
