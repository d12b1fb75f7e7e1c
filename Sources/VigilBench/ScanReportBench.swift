#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import VigilEvents
import VigilLog
import VigilNode
import VigilRadio
import VigilSystem

/// scan_report_cpu_us and scan_reports_max_rate: the radio path (HCI parse → alert-frame check →
/// scan window → durable log appends → projections, see `ScanPipeline`) over a synthetic btsnoop
/// capture (`ScanCapture`: 1M HCI events, ~1.16M reports from 2,000 advertisers at 20k reports/s
/// of capture time; 200k events with --quick), written once into a temporary directory.
///
/// scan_report_cpu_us: each run reads the capture with BTSnoopReader (page cache, warm) through
/// the whole path into a fresh log (the node's defaults, scan window 2 s); value = process CPU
/// (getrusage user + system, every thread: the loop and the log's writer) per report. Baseline,
/// in the same run: reading the same file and HCI-parsing every packet (read alone also shown).
///
/// scan_reports_max_rate: the capture is read into memory first; each run feeds it through the
/// same path as fast as one thread goes (the node has one loop thread). Rate = reports / wall time
/// from the first record to the last event durable and applied; it is a sustained rate only if no
/// scan hit was shed. Windows 2 s and 0 (one ScanHit per report). Baseline: HCI parse alone from
/// memory. A third line loads the log past what it drains: the window-0 ScanHits pre-encoded and
/// appended back to back (the loop's own work removed), an AlertReceived (critical) after every
/// 1,000, then every alert is looked up in the log.
struct ScanReportBench {
    static let cpuMetric = "scan_report_cpu_us"
    static let rateMetric = "scan_reports_max_rate"
    static let metrics = [cpuMetric, rateMetric]
    static let targetMicroseconds = 5.0
    static let alertEvery = 1_000
    static let definition = "reports/s of wall time, records fed from memory as fast as one thread goes through parse, "
        + "alert check, scan window, durable append and projections, from the first record to the last event durable "
        + "and applied; sustained only if zero scan hits were shed"

    let plan: Plan
    let options: Options
    let reporter: Reporter
    let device = BlockDevice(holding: "/tmp")

    var captureEvents: Int { options.quick ? 200_000 : 1_000_000 }
    /// How long the overload phase offers scan hits.
    var overloadSeconds: Double { options.quick ? 0.5 : 2 }

    func run() throws {
        try withTemporaryDirectory("scan") { directory in
            let path = directory + "/capture.btsnoop"
            progress("scan: writing a capture of \(captureEvents) HCI events")
            let capture = try ScanCapture.write(path: path, events: captureEvents)
            progress("scan: \(capture.reports) reports, \(capture.bytes / 1_000_000) MB, \(Int(capture.seconds)) s of capture, "
                     + "\(capture.distinctAlerts) distinct alert frames")
            if reporter.wants(Self.cpuMetric) { try cpu(capture) }
            if reporter.wants(Self.rateMetric) { try maxRate(capture) }
        }
    }

    // MARK: scan_report_cpu_us

    private func cpu(_ capture: ScanCapture) throws {
        let pipeline = try ScanPipeline(windowMicroseconds: 2_000_000, device: device)
        var runs: [ScanPipeline.Result] = []
        var readOnly: [Double] = []
        var parse: [Double] = []
        for run in 1...plan.runs {
            let read = try readLoop(capture, parse: false)
            let parsed = try readLoop(capture, parse: true)
            readOnly.append(read.cpuMicrosecondsPerReport)
            parse.append(parsed.cpuMicrosecondsPerReport)
            let reader = try BTSnoopReader(path: capture.path)
            let result = try withTemporaryDirectory("scanlog") { directory in
                try pipeline.run(directory: directory) { try reader.next() }
            }
            try check(result, capture)
            runs.append(result)
            progress("scan cpu run \(run)/\(plan.runs): \(fmt(result.perReport(result.processCPUNanoseconds))) µs/report "
                     + "(loop \(fmt(result.perReport(result.loopCPUNanoseconds))), wall \(fmt(result.perReport(result.wallNanoseconds)))); "
                     + "read+parse \(fmt(parsed.cpuMicrosecondsPerReport)), read \(fmt(read.cpuMicrosecondsPerReport)); "
                     + "\(result.scanHits) hits, \(result.statistics.commits) commits")
        }
        func medianOf(_ value: (ScanPipeline.Result) -> Double?) -> JSONValue { .optional(median(runs.compactMap(value))) }
        let values = runs.compactMap { $0.perReport($0.processCPUNanoseconds) }
        reporter.emit(MetricLine(
            metric: Self.cpuMetric, value: median(values) ?? 0, unit: "µs/report", baseline: median(parse),
            context: [
                ("baseline_is", .string("BTSnoopReader read + HCIEventParser.parse of the same file, process CPU")),
                ("target", .double(Self.targetMicroseconds)),
                ("window_ms", .int(2_000)),
                ("sync", .string(NodeConfiguration().sync.rawValue)),
                ("commit_window_ms", .double(Double(NodeConfiguration().commitWindowMicroseconds) / 1_000)),
                ("runs", .int(runs.count)),
                ("hci_events", .int(capture.events)),
                ("reports", .int(capture.reports)),
                ("capture_seconds", .double(capture.seconds)),
                ("value_min", .optional(values.min())),
                ("value_max", .optional(values.max())),
                ("read_only_us_per_report", .optional(median(readOnly))),
                ("loop_cpu_us_per_report", medianOf { $0.perReport($0.loopCPUNanoseconds) }),
                ("writer_cpu_us_per_report", medianOf { $0.perReport($0.writerCPUNanoseconds) }),
                ("wall_us_per_report", medianOf { $0.perReport($0.wallNanoseconds) }),
                ("commits_per_capture_second", medianOf { Double($0.statistics.commits) / capture.seconds }),
            ] + logCosts(runs)))
    }

    private struct ReadResult {
        var records = 0
        var reports = 0
        var cpuNanoseconds: UInt64 = 0
        var cpuMicrosecondsPerReport: Double { Double(cpuNanoseconds) / 1_000 / Double(max(1, reports)) }
    }

    /// The baselines: the read loop alone, or read + parse (reports counted so nothing is skipped).
    private func readLoop(_ capture: ScanCapture, parse: Bool) throws -> ReadResult {
        var result = ReadResult()
        var parser = HCIEventParser()
        var bytes = 0
        let cpuBefore = processCPUNanoseconds()
        let reader = try BTSnoopReader(path: capture.path)
        while let record = try reader.next() {
            result.records += 1
            if parse {
                if case .advertisingReports(let reports) = parser.parse(record.packet, timeMicroseconds: record.timeMicroseconds) {
                    result.reports += reports.count
                }
            } else {
                bytes &+= record.packet.count
            }
        }
        result.cpuNanoseconds = processCPUNanoseconds() - cpuBefore
        guard result.records == capture.events, bytes >= 0 else { throw BenchError("scan: read \(result.records) records") }
        if !parse { result.reports = capture.reports }
        guard result.reports == capture.reports else { throw BenchError("scan: parsed \(result.reports) of \(capture.reports) reports") }
        return result
    }

    private func check(_ result: ScanPipeline.Result, _ capture: ScanCapture) throws {
        guard result.reports == capture.reports, result.records == capture.events,
              result.alertsAppended == capture.distinctAlerts, result.alertsInBook == capture.distinctAlerts else {
            throw BenchError("scan pipeline: \(result.reports) of \(capture.reports) reports, \(result.alertsAppended) alerts "
                             + "appended and \(result.alertsInBook) in the book of \(capture.distinctAlerts)")
        }
    }

    /// What the log cost, per report and per scan hit (Vigil's counters and the kernel's).
    private func logCosts(_ runs: [ScanPipeline.Result]) -> [(String, JSONValue)] {
        func medianOf(_ value: (ScanPipeline.Result) -> Double?) -> JSONValue { .optional(median(runs.compactMap(value))) }
        return [
            ("scan_hits", medianOf { Double($0.scanHits) }),
            ("reports_per_hit", medianOf { Double($0.reports) / Double(max(1, $0.scanHits)) }),
            ("alerts_appended", medianOf { Double($0.alertsAppended) }),
            ("shed", .int(runs.map(\.shed).reduce(0, +))),
            ("devices", medianOf { Double($0.devices) }),
            ("checkpoints", medianOf { Double($0.checkpoints) }),
            ("commits", medianOf { Double($0.statistics.commits) }),
            ("batch_mean", medianOf { Double($0.statistics.recordsWritten) / Double(max(1, $0.statistics.commits)) }),
            ("flushes", medianOf { Double($0.statistics.flushes) }),
            ("flushes_per_commit", medianOf { Double($0.statistics.flushes) / Double(max(1, $0.statistics.commits)) }),
            ("value_bytes_per_hit", medianOf { Double($0.statistics.valueBytesWritten) / Double(max(1, $0.statistics.recordsWritten)) }),
            ("disk_bytes_per_report", medianOf { r in r.io.processWriteBytes.map { Double($0) / Double(max(1, r.reports)) } }),
            ("disk_bytes_per_hit", medianOf { r in r.io.processWriteBytes.map { Double($0) / Double(max(1, r.scanHits)) } }),
            ("device_flushes", medianOf { r in r.io.deviceFlushes.map(Double.init) }),
            ("largest_pending", medianOf { Double($0.largestPending) }),
        ]
    }

    // MARK: scan_reports_max_rate

    private func maxRate(_ capture: ScanCapture) throws {
        progress("scan rate: reading the capture into memory")
        let records = try BTSnoopReader(path: capture.path).readAll()
        let pool = try hitPool(records, count: 200_000)
        var baseline: [Double] = []
        var byWindow: [UInt64: [ScanPipeline.Result]] = [:]
        var overloads: [OverloadResult] = []
        let windows: [UInt64] = [2_000_000, 0]
        for run in 1...plan.runs {
            baseline.append(parseRate(records))
            var note = ""
            for window in windows {
                let pipeline = try ScanPipeline(windowMicroseconds: window, device: device)
                var i = 0
                let result = try withTemporaryDirectory("scanrate") { directory in
                    try pipeline.run(directory: directory) {
                        guard i < records.count else { return nil }
                        defer { i += 1 }
                        return records[i]
                    }
                }
                try check(result, capture)
                byWindow[window, default: []].append(result)
                note += "window \(window / 1_000) ms \(Int(result.reportsPerSecond)) reports/s (shed \(result.shed), "
                    + "cpu \(fmt(result.perReport(result.processCPUNanoseconds))) µs/report); "
            }
            let overload = try withTemporaryDirectory("scanover") { try self.overload(directory: $0, pool: pool) }
            overloads.append(overload)
            progress("scan rate run \(run)/\(plan.runs): parse \(Int(baseline.last ?? 0)) reports/s; " + note
                     + "overload: offered \(Int(overload.offeredPerSecond))/s, durable \(Int(overload.acceptedPerSecond)) hits/s, "
                     + "shed \(overload.shed) of \(overload.offered), alerts \(overload.alertsFound)/\(overload.alerts) durable")
        }
        for window in windows {
            let runs = byWindow[window] ?? []
            let rates = runs.map(\.reportsPerSecond)
            let shed = runs.map(\.shed).reduce(0, +)
            func medianOf(_ value: (ScanPipeline.Result) -> Double?) -> JSONValue { .optional(median(runs.compactMap(value))) }
            reporter.emit(MetricLine(
                metric: Self.rateMetric, value: median(rates) ?? 0, unit: "reports/s", baseline: median(baseline),
                context: [
                    ("load", .string("from_memory")),
                    ("window_ms", .int(Int(window / 1_000))),
                    ("sustained", .bool(shed == 0)),
                    ("definition", .string(Self.definition)),
                    ("baseline_is", .string("HCIEventParser.parse alone over the same records in memory, reports/s")),
                    ("runs", .int(runs.count)),
                    ("reports", .int(capture.reports)),
                    ("value_min", .optional(rates.min())),
                    ("value_max", .optional(rates.max())),
                    ("cpu_us_per_report", medianOf { $0.perReport($0.processCPUNanoseconds) }),
                    ("loop_cpu_share", medianOf { Double($0.loopCPUNanoseconds) / Double(max(1, $0.wallNanoseconds)) }),
                    ("writer_cpu_share", medianOf { r in r.writerCPUNanoseconds.map { Double($0) / Double(max(1, r.wallNanoseconds)) } }),
                    ("queue_limit", .int(NodeConfiguration().queueLimit)),
                    ("events_per_second", medianOf { perSecond($0.scanHits + $0.alertsAppended, nanoseconds: $0.wallNanoseconds) }),
                ] + logCosts(runs)))
        }
        let accepted = overloads.map(\.acceptedPerSecond)
        let alerts = overloads.map(\.alerts).reduce(0, +)
        let found = overloads.map(\.alertsFound).reduce(0, +)
        let completedAlerts = overloads.map(\.alertsCompleted).reduce(0, +)
        let refused = overloads.map(\.refused).reduce(0, +)
        reporter.emit(MetricLine(
            metric: Self.rateMetric, value: median(accepted) ?? 0, unit: "scan hits/s", baseline: median(overloads.map(\.offeredPerSecond)),
            context: [
                ("load", .string("overload")),
                ("window_ms", .int(0)),
                ("definition", .string("the log alone past its drain rate: window-0 ScanHits of the capture pre-encoded and appended "
                                       + "back to back by one thread for offer_seconds, an AlertReceived (critical) after every "
                                       + "\(Self.alertEvery); value = scan hits accepted (all durable) per second of wall time from "
                                       + "the first append to the last durable, baseline = offered per second")),
                ("runs", .int(overloads.count)),
                ("offer_seconds", .double(overloadSeconds)),
                ("offered", .optional(median(overloads.map { Double($0.offered) }))),
                ("accepted", .optional(median(overloads.map { Double($0.accepted) }))),
                ("queue_limit", .int(NodeConfiguration().queueLimit)),
                ("shed_share", .optional(median(overloads.map { Double($0.shed) / Double(max(1, $0.offered)) }))),
                ("shed_total", .int(overloads.map(\.shed).reduce(0, +))),
                ("alerts_appended", .int(alerts)),
                ("alerts_durable", .int(found)),
                ("alerts_acknowledged", .int(completedAlerts)),
                ("alerts_lost", .int(alerts - found)),
                ("refused", .int(refused)),
                ("commits", .optional(median(overloads.map { Double($0.statistics.commits) }))),
                ("batch_mean", .optional(median(overloads.map { Double($0.statistics.recordsWritten) / Double(max(1, $0.statistics.commits)) }))),
            ]))
        guard found == alerts, completedAlerts == alerts, refused == 0 else { throw BenchError("scan overload: \(alerts - found) critical alerts missing from the log") }
    }

    /// HCI parse alone over the records in memory, reports per second (one pass).
    private func parseRate(_ records: [BTSnoopRecord]) -> Double {
        var parser = HCIEventParser()
        var reports = 0
        let start = monotonicNanoseconds()
        for record in records {
            if case .advertisingReports(let r) = parser.parse(record.packet, timeMicroseconds: record.timeMicroseconds) { reports += r.count }
        }
        return perSecond(reports, nanoseconds: monotonicNanoseconds() - start)
    }

    /// The window-0 ScanHits of the first records, encoded as the node would append them.
    private func hitPool(_ records: [BTSnoopRecord], count: Int) throws -> [LogRecord] {
        var parser = HCIEventParser()
        var window = ScanWindow(durationMicroseconds: 0)
        var pool: [LogRecord] = []
        pool.reserveCapacity(count)
        for record in records where pool.count < count {
            guard case .advertisingReports(let reports) = parser.parse(record.packet, timeMicroseconds: record.timeMicroseconds) else { continue }
            for report in reports {
                guard let hit = window.add(report) else { continue }
                let (kind, payload) = EventCodec.encode(.scanHit(hit))
                pool.append(LogRecord(kind: kind, timeMicroseconds: report.timeMicroseconds, payload: payload))
            }
        }
        guard !pool.isEmpty else { throw BenchError("scan: no scan hits for the overload pool") }
        return pool
    }

    private struct OverloadResult {
        var offered = 0
        var accepted = 0
        var shed = 0
        var alerts = 0
        var alertsFound = 0
        var alertsCompleted = 0
        var refused = 0
        var offerNanoseconds: UInt64 = 0
        var wallNanoseconds: UInt64 = 0
        var statistics = LogStatistics()
        var offeredPerSecond: Double { perSecond(offered, nanoseconds: offerNanoseconds) }
        var acceptedPerSecond: Double { perSecond(accepted, nanoseconds: wallNanoseconds) }
    }

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Appends scan hits from `pool` back to back for `overloadSeconds`, with a critical
    /// AlertReceived after every `alertEvery`; waits for everything to be durable; then finds every
    /// alert in the log.
    private func overload(directory: String, pool: [LogRecord]) throws -> OverloadResult {
        var configuration = NodeConfiguration()
        configuration.dataDirectory = directory
        let tracker = DurabilityTracker(durableThrough: 0)
        let log = try EventLog.open(configuration.log) { tracker.record($0) }
        defer { log.close() }
        let completed = Counter()
        var result = OverloadResult()
        var alertSequences: [UInt64] = []
        var lastSequence: UInt64 = 0
        var alert = Alert()
        alert.kind = .fire
        alert.severity = .warning
        alert.hops = 1
        alert.heardFrom = 0xB0B0
        alert.text = "heard over the air from C0:00:00:00:B0:B0"
        let start = monotonicNanoseconds()
        let stopAt = start + UInt64(overloadSeconds * 1e9)
        var i = -1
        while true {
            i += 1
            if i % 1_024 == 0, monotonicNanoseconds() >= stopAt { break }
            let template = pool[i % pool.count]
            let time = template.timeMicroseconds + UInt64(i / pool.count) * 60_000_000
            if i % Self.alertEvery == Self.alertEvery - 1 {
                alert.id = AlertID(origin: 0xB0B0, counter: UInt32(i / Self.alertEvery))
                alert.expiresAtUs = time + 3_600_000_000
                let (kind, payload) = EventCodec.encode(.alertReceived(alert))
                lastSequence = try log.append(LogRecord(kind: kind, timeMicroseconds: time, payload: payload), priority: .critical) {
                    if case .success = $0 { completed.value.add(1, ordering: .relaxed) }
                }
                alertSequences.append(lastSequence)
                result.alerts += 1
                continue
            }
            result.offered += 1
            let record = LogRecord(kind: template.kind, timeMicroseconds: time,
                                   payload: template.payload.withUnsafeBufferPointer { Array($0) })
            do throws(LogError) {
                lastSequence = try log.append(record, priority: .sheddable)
                result.accepted += 1
            } catch {
                guard case .shed = error else { throw error }
                result.shed += 1
            }
        }
        result.offerNanoseconds = monotonicNanoseconds() - start
        guard tracker.wait(untilDurable: lastSequence, timeoutNanoseconds: 300_000_000_000) else {
            throw BenchError("scan overload: the last append was not durable within 300 s")
        }
        result.wallNanoseconds = monotonicNanoseconds() - start
        result.statistics = log.statistics
        // Every alert's sequence must hold an AlertReceived; completions must all have succeeded.
        var wanted = Set(alertSequences)
        let alertKind = UInt32(EventKind.alertReceived.rawValue)
        try log.read { txn in
            try txn.forEach { entry in
                if case .success(let view) = entry, view.kind == alertKind { wanted.remove(view.sequence) }
                return true
            }
        }
        // Completions run on the writer thread around its CommitReport; give the last ones a moment.
        let deadline = monotonicNanoseconds() + 5_000_000_000
        while completed.value.load(ordering: .acquiring) < result.alerts, monotonicNanoseconds() < deadline {
            sched_yield()
        }
        result.alertsCompleted = completed.value.load(ordering: .acquiring)
        result.alertsFound = result.alerts - wanted.count
        result.refused = tracker.snapshot().refused
        return result
    }

    private func fmt(_ value: Double?) -> String { value.map { String(($0 * 100).rounded() / 100) } ?? "-" }
}
