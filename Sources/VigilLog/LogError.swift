import CLMDB
import VigilSystem

/// Everything that can go wrong in the event log, each with enough context to act on.
public enum LogError: Error, Sendable, CustomStringConvertible {
    case lmdb(LMDBError)
    case system(SystemError)
    /// The directory has no log (read-only opens never create one).
    case missing(directory: String)
    /// The map reached `maxMapSize`; the event was refused (never a crash, nothing stored is lost).
    case full(capBytes: Int)
    /// The file system holding the log is full, even after the disk reserve was handed back.
    case diskFull(directory: String)
    /// The writer queue was over its limit and the event was sheddable.
    case shed
    /// The log was closed before the event was written.
    case closed
    /// The environment exists but is not a Vigil log of a format this build reads.
    case incompatible(String)
    /// The file is a damaged Vigil log (a mangled format marker): `vigil log salvage` copes.
    case damaged(String)

    public var description: String {
        switch self {
        case .lmdb(let e):
            if e.isCorrupted { return "the event log is corrupt: \(e)" }
            return "event log: \(e)"
        case .system(let e): return "event log: \(e)"
        case .missing(let dir): return "no event log in \(dir) (start a node with `vigil run --data \(dir)` first)"
        case .full(let cap): return "event log is full at its cap of \(cap >> 20) MiB; raise log.max_map_mib or free space"
        case .diskFull(let dir): return "the disk holding \(dir) is full, even its reserve; free space on it"
        case .shed: return "event shed: the log writer is overloaded"
        case .closed: return "event log is closed"
        case .incompatible(let why): return "event log is incompatible: \(why)"
        case .damaged(let why): return "the event log is corrupt: \(why)"
        }
    }
}

extension LogError {
    /// The file system is read-only (EROFS). Not EACCES: a permission mistake must fail loudly,
    /// and a reader without write access to lock.mdb must not read without LMDB's reader lock.
    public var isReadOnlyFileSystem: Bool {
        switch self {
        case .lmdb(let e): e.code == Errno.readOnlyFileSystem.rawValue
        case .system(let e): e.errno == .readOnlyFileSystem
        default: false
        }
    }

    /// The file is damaged (not merely of another format or version): salvaging it is the cure.
    public var isDamage: Bool {
        switch self {
        case .lmdb(let e): e.code == MDB_CORRUPTED || e.code == MDB_INVALID || e.code == MDB_PAGE_NOTFOUND
        case .damaged: true
        default: false
        }
    }

    /// The one place any error raised inside the log layer becomes a `LogError`.
    init(wrapping error: any Error) {
        switch error {
        case let e as LogError: self = e
        case let e as LMDBError: self = .lmdb(e)
        case let e as SystemError: self = .system(e)
        case let e as CorruptRecord: self = .incompatible(e.description)
        default: self = .incompatible("\(error)")
        }
    }
}

/// Runs `body`, converting whatever it throws into a `LogError`.
@inline(__always)
func logErrors<T>(_ body: () throws -> T) throws(LogError) -> T {
    do { return try body() } catch { throw LogError(wrapping: error) }
}
