#if canImport(Glibc)
import Glibc
#endif
import VigilLog
import VigilSystem

/// How the producer feeds the log.
enum Pacing {
    /// As fast as possible, waiting whenever more than `maxInFlight` appends are unacknowledged.
    case saturated(maxInFlight: Int)
    /// At a steady rate (appends scheduled at fixed times; a late producer catches up).
    case paced(eventsPerSecond: Double)
}

/// What one run through Vigil's EventLog measured.
struct VigilAppendResult {
    var accepted: Int
    var shed: Int
    var refused: Int
    /// From the first append call to the CommitReport covering the last accepted append.
    var elapsedNanoseconds: UInt64
    /// Append call → covering CommitReport, per acknowledged event, ascending.
    var latencies: [UInt64]
    var statistics: LogStatistics
    var io: IODelta
    /// CPU time of the writer thread over its life (open to last acknowledgement), and of the
    /// producer over the run: shares of the elapsed time near 1 mean that thread is the bottleneck.
    var writerCPUNanoseconds: UInt64?
    /// Time the writer thread was runnable but had no CPU (other processes, or the producer).
    var writerRunQueueNanoseconds: UInt64?
    var producerCPUNanoseconds: UInt64

    var acknowledged: Int { accepted - refused }
    var eventsPerSecond: Double { perSecond(acknowledged, nanoseconds: elapsedNanoseconds) }
    var batchMean: Double { statistics.commits == 0 ? 0 : Double(statistics.recordsWritten) / Double(statistics.commits) }
    var flushesPerCommit: Double { statistics.commits == 0 ? 0 : Double(statistics.flushes) / Double(statistics.commits) }
}

/// Opens a fresh log in `directory`, appends `count` records produced by `record`, waits until the
/// last is acknowledged, and closes the log.
func runVigilAppend(directory: String, configuration: LogConfiguration, count: Int, pacing: Pacing,
                    device: BlockDevice?,
                    record: (Int) -> (LogRecord, AppendPriority)) throws -> VigilAppendResult {
    let tracker = DurabilityTracker(durableThrough: 0)
    let log = try EventLog.open(configuration) { tracker.record($0) }
    defer { log.close() }
    let firstSequence = log.durableSequence + 1
    let appendTimes = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: max(1, count))
    defer { appendTimes.deallocate() }
    let timeout: UInt64 = 300_000_000_000

    var lastSequence = firstSequence - 1
    var shed = 0
    let ioBefore = IOSnapshot.take(device: device)
    let pacer = try Pacer()
    let producerCPU = threadCPUNanoseconds()
    let start = monotonicNanoseconds()
    for i in 0..<count {
        switch pacing {
        case .saturated(let maxInFlight):
            if lastSequence >= UInt64(maxInFlight) + tracker.durableThrough {
                guard tracker.wait(untilDurable: lastSequence - UInt64(maxInFlight) + 1, timeoutNanoseconds: timeout) else {
                    throw BenchError("no commit acknowledged within \(timeout / 1_000_000_000) s")
                }
            }
        case .paced(let rate):
            try pacer.wait(untilMonotonicNanoseconds: start + UInt64(Double(i) * 1e9 / rate))
        }
        let (next, priority) = record(i)
        let now = monotonicNanoseconds()
        let sequence: UInt64
        do throws(LogError) {
            sequence = try log.append(next, priority: priority)
        } catch {
            guard case .shed = error else { throw error }
            shed += 1
            continue
        }
        appendTimes[Int(sequence - firstSequence)] = now
        lastSequence = sequence
    }
    guard tracker.wait(untilDurable: lastSequence, timeoutNanoseconds: timeout) else {
        throw BenchError("the last append was not acknowledged within \(timeout / 1_000_000_000) s")
    }
    let producerCPUUsed = threadCPUNanoseconds() - producerCPU
    let ioAfter = IOSnapshot.take(device: device)
    let writerScheduling = schedulerNanoseconds(ofThreadsNamed: "vigil-log")
    let statistics = log.statistics
    let (acknowledgements, refused) = tracker.snapshot()

    var latencies: [UInt64] = []
    latencies.reserveCapacity(Int(lastSequence + 1 - firstSequence))
    var covered = firstSequence - 1
    for ack in acknowledgements where ack.durableThrough > covered {
        for sequence in (covered + 1)...ack.durableThrough {
            let sent = appendTimes[Int(sequence - firstSequence)]
            latencies.append(ack.atNanoseconds >= sent ? ack.atNanoseconds - sent : 0)
        }
        covered = ack.durableThrough
    }
    latencies.sort()
    let end = acknowledgements.last?.atNanoseconds ?? monotonicNanoseconds()
    return VigilAppendResult(accepted: Int(lastSequence + 1 - firstSequence), shed: shed, refused: refused,
                             elapsedNanoseconds: end - start, latencies: latencies, statistics: statistics,
                             io: ioAfter.since(ioBefore), writerCPUNanoseconds: writerScheduling?.running,
                             writerRunQueueNanoseconds: writerScheduling?.waiting,
                             producerCPUNanoseconds: producerCPUUsed)
}

/// The paced load generator's clock: it offers events at a fixed rate (the "paced" latency runs),
/// so it waits for each send time on a timerfd, like every wait in Vigil: a descriptor the
/// thread blocks on, never a sleep.
private final class Pacer {
    private let timer: TimerFD
    private let epoll: Epoll

    init() throws {
        timer = try TimerFD()
        epoll = try Epoll()
        try epoll.add(timer.fd, token: 1)
    }

    func wait(untilMonotonicNanoseconds deadline: UInt64) throws {
        let now = monotonicNanoseconds()
        guard now < deadline else { return }
        try timer.arm(afterNanoseconds: deadline - now)
        while try epoll.wait().isEmpty {}
        timer.drain()
    }
}
