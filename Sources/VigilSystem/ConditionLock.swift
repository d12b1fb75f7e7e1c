internal import CVigilLinux
#if canImport(Glibc)
import Glibc
#endif

/// A mutex with a condition variable, for the few places a thread must block until work arrives
/// (the log writer thread). Everything else uses `LockedValue`.
///
/// Contract: `withLock` bodies are short and never block; `wait` must be called inside `withLock`.
public final class ConditionLock: @unchecked Sendable {
    // pthread objects must not move, so they live in allocated memory.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        cond.deallocate()
    }

    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a signal; call only while holding the lock (inside `withLock`).
    public func wait() { pthread_cond_wait(cond, mutex) }

    /// Waits until signalled or until the monotonic clock reaches `deadlineNanoseconds`.
    /// Returns false on timeout.
    @discardableResult
    public func wait(untilMonotonicNanoseconds deadline: UInt64) -> Bool {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(cond, mutex, &ts) == 0
    }

    public func signal() { pthread_cond_signal(cond) }
    public func broadcast() { pthread_cond_broadcast(cond) }
}

/// Starts a named, joinable OS thread. Used for the log writer and the event loop, which must own
/// their thread (LMDB write transactions are bound to the thread that began them).
public final class OSThread: @unchecked Sendable {
    private var handle = pthread_t()
    private let body: @Sendable () -> Void

    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        self.body = body
        let box = Unmanaged.passRetained(self)
        let rc = pthread_create(&handle, nil, { raw in
            let thread = Unmanaged<OSThread>.fromOpaque(raw!).takeRetainedValue()
            thread.body()
            return nil
        }, box.toOpaque())
        if rc != 0 {
            box.release()
            throw SystemError("pthread_create", name, errno: Errno(rawValue: rc))
        }
        _ = String(name.prefix(15)).withCString { cvigil_set_thread_name(handle, $0) }
    }

    public func join() { pthread_join(handle, nil) }

    /// Lets the thread end on its own, never joined (each thread is joined or detached once).
    public func detach() { pthread_detach(handle) }
}
