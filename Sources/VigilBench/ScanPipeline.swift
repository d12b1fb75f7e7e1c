#if canImport(Glibc)
import Glibc
#endif
import VigilCore
import VigilEvents
import VigilLog
import VigilNode
import VigilRadio
import VigilSystem

/// The node's radio path on one thread, as `Node` runs it for every radio output, with the
/// capture's timestamps as time (as `CaptureReplay` does):
///
///   HCIEventParser.parse → per report: the alert-frame check (a verified new alert becomes a
///   critical AlertReceived) and ScanWindow.add; a window closes when a record's time passes
///   `closesAt` (the node's timer) → EventCodec.encode → EventLog.append (scan hits sheddable)
///   → once the writer reports the commit durable, Projections.apply, in sequence order, and a
///   checkpoint of the projections every 10,000 applied events (the node's default count; its
///   30 s interval is wall-clock time and is left out of a replay running faster than real time).
///
/// The log is opened with the node's default settings (`NodeConfiguration().log`: deferred-meta,
/// 5 ms commit window, batch 4,096, queue 65,536, 64 MB initial map).
struct ScanPipeline {
    struct Result {
        var records = 0
        var reports = 0
        var scanHits = 0
        var shed = 0
        var alertsAppended = 0
        var alertDuplicates = 0
        var presenceFrames = 0
        var applied = 0
        var checkpoints = 0
        var largestPending = 0
        var wallNanoseconds: UInt64 = 0
        /// getrusage(RUSAGE_SELF) user + system: the loop thread and the log's writer thread.
        var processCPUNanoseconds: UInt64 = 0
        var loopCPUNanoseconds: UInt64 = 0
        var writerCPUNanoseconds: UInt64?
        var statistics = LogStatistics()
        var io = IODelta()
        var alertsInBook = 0
        var devices = 0

        var reportsPerSecond: Double { perSecond(reports, nanoseconds: wallNanoseconds) }
        func perReport(_ nanoseconds: UInt64?) -> Double? { nanoseconds.map { Double($0) / 1_000 / Double(max(1, reports)) } }
    }

    let windowMicroseconds: UInt64
    let device: BlockDevice?
    let key: AlertFrameKey

    init(windowMicroseconds: UInt64, device: BlockDevice?) throws {
        self.windowMicroseconds = windowMicroseconds
        self.device = device
        key = try AlertFrameKey(shelterKey: ScanCapture.shelterKey)
    }

    /// Runs every record `next` returns through the path into a fresh log in `directory`, then
    /// waits until the last event is durable and applied. Timing starts at the first record.
    func run(directory: String, next: () throws -> BTSnoopRecord?) throws -> Result {
        var configuration = NodeConfiguration()
        configuration.dataDirectory = directory
        let tracker = DurabilityTracker(durableThrough: 0)
        let log = try EventLog.open(configuration.log) { tracker.record($0) }
        defer { log.close() }

        var result = Result()
        var parser = HCIEventParser()
        var window = ScanWindow(durationMicroseconds: windowMicroseconds)
        var air = AirLink(key: key, settings: configuration.airAlerts, presence: nil, nodeID: 0)
        var projections = Projections(settings: configuration.projections)
        var knownAlerts = Set<String>()
        var pending: [Event] = []
        pending.reserveCapacity(1 << 16)
        var head = 0
        var lastSequence: UInt64 = 0

        func append(_ body: EventBody, time: UInt64) throws {
            let (kind, payload) = EventCodec.encode(body)
            let sequence: UInt64
            do throws(LogError) {
                sequence = try log.append(LogRecord(kind: kind, timeMicroseconds: time, payload: payload),
                                          priority: body.isSheddable ? .sheddable : .critical)
            } catch {
                guard case .shed = error, body.isSheddable else { throw error }
                result.shed += 1
                return
            }
            if body.isSheddable { result.scanHits += 1 } else { result.alertsAppended += 1 }
            pending.append(Event(sequence: sequence, timeMicroseconds: time, body: body))
            lastSequence = sequence
        }
        var eventsSinceCheckpoint = 0
        func applyDurable() throws {
            guard head < pending.count else { return }
            let durable = tracker.durableThrough
            while head < pending.count, pending[head].sequence <= durable {
                projections.apply(.event(pending[head]))
                head += 1
                eventsSinceCheckpoint += 1
            }
            // Node.drainInbox: a checkpoint of the projections every `checkpointEveryEvents`.
            if eventsSinceCheckpoint >= configuration.checkpointEveryEvents {
                try log.writeCheckpoint(name: Projections.checkpointName, throughSequence: projections.appliedThrough,
                                        state: projections.encoded())
                eventsSinceCheckpoint = 0
                result.checkpoints += 1
            }
            result.largestPending = max(result.largestPending, pending.count - head)
            if head >= 1 << 16, head * 2 >= pending.count {
                pending.removeFirst(head)
                head = 0
            }
        }

        // As the node logs a window (RadioIntake): one ScanBatch, and what it cannot hold alone.
        func appendWindow(_ closed: (time: UInt64, hits: [ScanHit])) throws {
            let (batch, rest) = ScanBatch.packing(closed.hits)
            if batch.count > 0 { try append(.scanBatch(batch), time: closed.time) }
            for hit in rest { try append(.scanHit(hit), time: closed.time) }
        }

        let ioBefore = IOSnapshot.take(device: device)
        let cpuBefore = processCPUNanoseconds()
        let loopBefore = threadCPUNanoseconds()
        let start = monotonicNanoseconds()
        var lastTime: UInt64 = 0
        while let record = try next() {
            result.records += 1
            guard record.direction == .received else { continue }
            let now = record.timeMicroseconds
            lastTime = now
            if let closesAt = window.closesAt, now >= closesAt {
                try appendWindow(window.close(at: closesAt))
            }
            if case .advertisingReports(let reports) = parser.parse(record.packet, timeMicroseconds: now) {
                for report in reports {
                    result.reports += 1
                    if let frame = air.inspect(report, now: now) {
                        // As AirAlerts.heard: a new alert goes to the log, never shed; a known one is a relay
                        // heard. (The per-sender allowance is left out: a few alerts from distinct origins.)
                        if knownAlerts.insert(frame.id.text).inserted, case .alert(var alert) = frame.meaning(heardFrom: report.address) {
                            alert.text = "heard over the air from \(formatAddress(report.address))"
                            try append(.alertReceived(alert), time: report.timeMicroseconds)
                        } else {
                            result.alertDuplicates += 1
                        }
                    }
                    if let hit = window.add(report) { try append(.scanHit(hit), time: report.timeMicroseconds) }
                }
            }
            try applyDurable()
        }
        try appendWindow(window.close(at: lastTime))
        let timeout: UInt64 = 300_000_000_000
        guard tracker.wait(untilDurable: lastSequence, timeoutNanoseconds: timeout) else {
            throw BenchError("scan pipeline: the last event was not durable within \(timeout / 1_000_000_000) s")
        }
        try applyDurable()
        result.wallNanoseconds = monotonicNanoseconds() - start
        result.loopCPUNanoseconds = threadCPUNanoseconds() - loopBefore
        result.processCPUNanoseconds = processCPUNanoseconds() - cpuBefore
        result.io = IOSnapshot.take(device: device).since(ioBefore)
        result.writerCPUNanoseconds = schedulerNanoseconds(ofThreadsNamed: "vigil-log")?.running
        result.statistics = log.statistics
        result.applied = head
        result.presenceFrames = Int(air.counters.presence)
        result.alertsInBook = projections.alerts.alerts.count
        result.devices = projections.devices.devices.count

        let refused = tracker.snapshot().refused
        guard refused == 0, result.statistics.writeErrors == 0, head == pending.count,
              projections.health.totalEvents == UInt64(result.scanHits + result.alertsAppended),
              result.statistics.shed == UInt64(result.shed) else {
            throw BenchError("scan pipeline: \(refused) refused, \(result.statistics.writeErrors) write errors, applied "
                             + "\(projections.health.totalEvents) of \(result.scanHits + result.alertsAppended), shed \(result.shed)")
        }
        return result
    }
}

/// CPU time of the whole process (every thread), user + system.
func processCPUNanoseconds() -> UInt64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func ns(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1_000 }
    return ns(usage.ru_utime) + ns(usage.ru_stime)
}
