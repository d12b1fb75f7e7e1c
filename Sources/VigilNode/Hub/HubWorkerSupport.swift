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

/// What each hub worker is failing at, for `vigil status` (the live status): a hub that keeps
/// refusing (a revoked credential, a newer box's event an older hub does not know) is retried
/// forever, and must be seen by people, not only in the journal. Written by the workers, read on
/// the loop.
public final class HubProblems: @unchecked Sendable {
    public enum Part: String, Sendable, CaseIterable {
        case upload, download
        case keyFiles = "key files"
    }

    private let lock = NSLock()
    private var failing: [Part: (error: String, tries: Int)] = [:]
    /// Called (on the worker's thread) when a part starts or stops failing.
    private let changed: @Sendable () -> Void

    init(changed: @escaping @Sendable () -> Void = {}) { self.changed = changed }

    func failed(_ part: Part, _ error: any Error) {
        let isNew = lock.withLock {
            let tries = (failing[part]?.tries ?? 0) + 1
            failing[part] = (String("\(error)".prefix(300)), tries)
            return tries == 1
        }
        if isNew { changed() }
    }

    /// Forgets every failure (the workers start again).
    func reset() {
        if lock.withLock({ let had = !failing.isEmpty; failing.removeAll(); return had }) { changed() }
    }

    func succeeded(_ part: Part) {
        if lock.withLock({ failing.removeValue(forKey: part) != nil }) { changed() }
    }

    /// One line per failing part ("upload failing (3 tries): …"), nil when none fails.
    public var summary: String? {
        lock.withLock {
            let lines = Part.allCases.compactMap { part in failing[part].map { "\(part.rawValue) failing (\($0.tries) tries): \($0.error)" } }
            return lines.isEmpty ? nil : lines.joined(separator: "; ")
        }
    }
}

/// How the hub workers wait after a failure: the project's one back-off rule, 0.5 s doubling to
/// a minute. The failure is reported in `problems` until the next success.
struct HubRetry {
    private var backoff = Backoff(base: 500_000, max: 60_000_000)
    let problems: HubProblems
    let part: HubProblems.Part

    init(_ part: HubProblems.Part, problems: HubProblems) {
        self.part = part
        self.problems = problems
    }

    mutating func succeeded() {
        backoff.reset()
        problems.succeeded(part)
    }

    /// Logs the failure and sleeps; false when the task was cancelled meanwhile.
    mutating func wait(after error: any Error, _ message: Logger.Message, _ logger: Logger) async -> Bool {
        // A worker stopped (the node stopping, the hub list reloaded) fails its exchange: no problem.
        guard !Task.isCancelled else { return false }
        problems.failed(part, error)
        let microseconds = backoff.next()
        logger.warning(message, metadata: ["error": "\(error)", "retry_s": "\(Double(microseconds) / 1_000_000)"])
        do { try await Task.sleep(for: .microseconds(microseconds)) } catch { return false }
        return true
    }
}
