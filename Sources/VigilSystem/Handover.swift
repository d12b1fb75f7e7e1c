#if canImport(Glibc)
import Glibc
#endif

/// A value that is not `Sendable`, moved once from one thread to another: put in by its maker
/// (`sending`), taken out by whoever runs it (`sending`), never shared. How a node reaches the
/// thread of its loop (`Node.runOnOwnThread`, `NodeService`).
///
/// `@unchecked Sendable` because `Value` is not: sound because the value is only ever moved in
/// and out whole, under a plain mutex (`LockedValue` says why not `Synchronization.Mutex`), and
/// the maker gave it up (`sending`) when it put it in. Misuse the compiler cannot see: none,
/// so long as nothing is added that lends the value out rather than moving it.
public final class Handover<Value>: @unchecked Sendable {
    // pthread objects must not move, so the mutex lives in allocated memory.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value?

    public init(_ value: sending Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    /// Empty, for a value to come (`put`).
    public init() {
        value = nil
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Puts `value` in, replacing any not taken.
    public func put(_ value: sending Value) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        self.value = value
    }

    /// The value, the first time; nil after.
    public func take() -> sending Value? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let taken = value
        value = nil
        return taken
    }
}
