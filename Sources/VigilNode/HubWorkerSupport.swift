import Foundation
import Logging
import VigilCore

/// The loop's snapshots for one worker: the loop offers from its thread, the worker takes them.
/// Only the newest is kept (bounded however long the hub is away); the calls for help of the
/// ones it replaces are carried over, so none is missed.
final class SnapshotMailbox: @unchecked Sendable {
    private let lock = NSLock()
    private var pending: UplinkSnapshot?
    private var waiter: CheckedContinuation<UplinkSnapshot?, Never>?
    private var closed = false

    func offer(_ snapshot: UplinkSnapshot) {
        lock.lock()
        guard !closed else { lock.unlock(); return }
        var merged = snapshot
        if let earlier = pending { merged.urgent = earlier.urgent + snapshot.urgent }
        if let waiter {
            self.waiter = nil
            lock.unlock()
            waiter.resume(returning: merged)
            return
        }
        pending = merged
        lock.unlock()
    }

    func close() {
        lock.lock()
        closed = true
        let waiter = self.waiter
        self.waiter = nil
        lock.unlock()
        waiter?.resume(returning: nil)
    }

    /// The newest snapshot (waiting for one); nil once closed. One taker at a time.
    func next() async -> UplinkSnapshot? {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let pending {
                self.pending = nil
                lock.unlock()
                continuation.resume(returning: pending)
            } else if closed {
                lock.unlock()
                continuation.resume(returning: nil)
            } else {
                waiter = continuation
                lock.unlock()
            }
        }
    }
}

/// How the hub workers wait after a failure: the project's one back-off rule, 0.5 s doubling to
/// a minute.
struct HubRetry {
    private var backoff = Backoff(base: 500_000, max: 60_000_000)

    mutating func succeeded() { backoff.reset() }

    /// Logs the failure and sleeps; false when the task was cancelled meanwhile.
    mutating func wait(after error: any Error, _ message: Logger.Message, _ logger: Logger) async -> Bool {
        let microseconds = backoff.next()
        logger.warning(message, metadata: ["error": "\(error)", "retry_s": "\(Double(microseconds) / 1_000_000)"])
        do { try await Task.sleep(for: .microseconds(microseconds)) } catch { return false }
        return true
    }
}
