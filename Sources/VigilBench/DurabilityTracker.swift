import Synchronization
import VigilLog
import VigilSystem

/// Collects the log's CommitReports (called on the writer thread) with the time each arrived,
/// and lets the producer wait until a sequence is durable.
final class DurabilityTracker: @unchecked Sendable {
    struct Acknowledgement {
        let durableThrough: UInt64
        let atNanoseconds: UInt64
    }

    private let lock = ConditionLock()
    // Guarded by `lock`:
    private var acknowledgements: [Acknowledgement] = []
    private var refused = 0
    // Written under `lock`, read without it by the producer's fast path.
    private let durable: Atomic<UInt64>

    init(durableThrough: UInt64) {
        durable = Atomic(durableThrough)
        acknowledgements.reserveCapacity(4_096)
    }

    /// The `onDurable` callback.
    func record(_ report: CommitReport) {
        let now = monotonicNanoseconds()
        lock.withLock {
            acknowledgements.append(Acknowledgement(durableThrough: report.durableThrough, atNanoseconds: now))
            refused += report.refused.count
            if report.durableThrough > durable.load(ordering: .relaxed) {
                durable.store(report.durableThrough, ordering: .releasing)
            }
            lock.broadcast()
        }
    }

    var durableThrough: UInt64 { durable.load(ordering: .acquiring) }

    /// Blocks until `sequence` is durable; false when `timeoutNanoseconds` pass first.
    func wait(untilDurable sequence: UInt64, timeoutNanoseconds: UInt64) -> Bool {
        let deadline = monotonicNanoseconds() + timeoutNanoseconds
        return lock.withLock {
            while durable.load(ordering: .relaxed) < sequence {
                if monotonicNanoseconds() >= deadline { return false }
                lock.wait(untilMonotonicNanoseconds: deadline)
            }
            return true
        }
    }

    /// Everything reported so far, in arrival order.
    func snapshot() -> (acknowledgements: [Acknowledgement], refused: Int) {
        lock.withLock { (acknowledgements, refused) }
    }
}
