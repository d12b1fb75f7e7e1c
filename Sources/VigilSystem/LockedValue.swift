#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a plain (non-priority-inheritance) pthread mutex: what state shared
/// between the loop, the log writer and the servers beside them uses.
///
/// Why not `Synchronization.Mutex`: on Linux it is a priority-inheritance futex
/// (`FUTEX_LOCK_PI`) whose lock path traps on any errno it does not expect ("Unknown error
/// occured while attempting to acquire a Mutex"). Test runs on a loaded machine lost a node to
/// exactly that twice (once in `SnapshotFeed`, once in a VM where it showed as "Trace/breakpoint
/// trap"); a box must never die of its own lock. A plain mutex blocks and never traps; the loop
/// never holds one for long, so priority inheritance buys nothing here.
///
/// Contract: `withLock` bodies are short, never block and never take the same lock again (a
/// plain mutex locked twice by one thread deadlocks).
///
/// `Value` is `Sendable`: `withLock` lends the value to whichever thread holds the lock, so a
/// value that is not (a node, whose state is its loop's) could be handed to any thread through
/// one. Such a value is moved, whole and once, by `Handover`.
public final class LockedValue<Value: Sendable>: @unchecked Sendable {
    // pthread objects must not move, so the mutex lives in allocated memory.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock. (`pthread_mutex_lock` on a default mutex
    /// fails only for an uninitialised or destroyed one, which this class never hands out.)
    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
