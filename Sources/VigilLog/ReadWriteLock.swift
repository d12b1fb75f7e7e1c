#if canImport(Glibc)
import Glibc
#endif

/// Guards the memory map: in-process read transactions hold it shared; growing the map
/// (mdb_env_set_mapsize, which needs no transaction open in this process) holds it exclusively.
final class ReadWriteLock: @unchecked Sendable { // pthread_rwlock_t is thread-safe by contract
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    init() { pthread_rwlock_init(lock, nil) }
    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }
    func withReadLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
    func withWriteLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
