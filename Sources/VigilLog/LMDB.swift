import CLMDB
import VigilSystem

// Every liblmdb call Vigil makes is in this file. Each turns a non-zero return code into an
// `LMDBError` carrying the code and the operation, so no caller ever inspects an `Int32` result.

/// An error returned by liblmdb, with its code (an errno or one of LMDB's own `MDB_*` codes).
public struct LMDBError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int32
    public let operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    public var description: String {
        let text = mdb_strerror(code).map { String(cString: $0) } ?? "unknown"
        return "\(operation): \(text) (LMDB code \(code))"
    }

    public var isMapFull: Bool { code == MDB_MAP_FULL }
    /// LMDB passes a failed write's errno through: ENOSPC is a full file system. A write that
    /// was cut short comes back as EIO ("short write, filesystem full?" in mdb_page_flush), so
    /// EIO may be a full disk too: `LogWriter` tells the two apart.
    public var isDiskFull: Bool { code == Errno.noSpace.rawValue }
    public var isIOError: Bool { code == Errno.io.rawValue }
    public var isNotFound: Bool { code == MDB_NOTFOUND }
    public var isCorrupted: Bool { code == MDB_CORRUPTED || code == MDB_INVALID || code == MDB_PAGE_NOTFOUND || code == MDB_VERSION_MISMATCH }
}

@inline(__always)
private func lmdb(_ operation: String, _ rc: Int32) throws {
    if rc != 0 { throw LMDBError(code: rc, operation: operation) }
}

/// Flags for opening an environment.
struct EnvironmentFlags: OptionSet {
    let rawValue: UInt32
    static let readOnly = EnvironmentFlags(rawValue: UInt32(MDB_RDONLY))
    static let noTLS = EnvironmentFlags(rawValue: UInt32(MDB_NOTLS))
    static let noMetaSync = EnvironmentFlags(rawValue: UInt32(MDB_NOMETASYNC))
    static let noSync = EnvironmentFlags(rawValue: UInt32(MDB_NOSYNC))
    static let noReadAhead = EnvironmentFlags(rawValue: UInt32(MDB_NORDAHEAD))
    /// No lock file: for a log on a read-only file system, where nobody can write it anyway.
    static let noLock = EnvironmentFlags(rawValue: UInt32(MDB_NOLOCK))
}

/// An LMDB environment: the memory map over `data.mdb` and its lock file.
///
/// Contract: `setMapSize` may only be called while this process has no transaction open
/// (EventLog guards that with its read/resize lock).
final class LMDBEnvironment: @unchecked Sendable {
    let handle: OpaquePointer

    init(path: String, flags: EnvironmentFlags, mapSize: Int, maxDatabases: UInt32) throws {
        var env: OpaquePointer?
        try lmdb("mdb_env_create", mdb_env_create(&env))
        guard let env else { throw LMDBError(code: -1, operation: "mdb_env_create") }
        do {
            try lmdb("mdb_env_set_maxdbs", mdb_env_set_maxdbs(env, MDB_dbi(maxDatabases)))
            try lmdb("mdb_env_set_maxreaders", mdb_env_set_maxreaders(env, 126))
            if mapSize > 0 { try lmdb("mdb_env_set_mapsize", mdb_env_set_mapsize(env, mapSize)) }
            try lmdb("mdb_env_open \(path)", mdb_env_open(env, path, flags.rawValue, 0o640))
        } catch {
            mdb_env_close(env)
            throw error
        }
        handle = env
    }

    deinit { mdb_env_close(handle) }

    /// Sets a new map size; 0 adopts the size another process has grown the map to.
    func setMapSize(_ bytes: Int) throws {
        try lmdb("mdb_env_set_mapsize", mdb_env_set_mapsize(handle, bytes))
    }

    /// Flushes data and meta pages to disk (one fdatasync).
    func sync(force: Bool) throws {
        try lmdb("mdb_env_sync", mdb_env_sync(handle, force ? 1 : 0))
    }

    func info() throws -> MDB_envinfo {
        var info = MDB_envinfo()
        try lmdb("mdb_env_info", mdb_env_info(handle, &info))
        return info
    }

    func pageSize() throws -> Int {
        var stat = MDB_stat()
        try lmdb("mdb_env_stat", mdb_env_stat(handle, &stat))
        return Int(stat.ms_psize)
    }

    func readerCheck() -> Int32 {
        var dead: Int32 = 0
        _ = mdb_reader_check(handle, &dead)
        return dead
    }

    /// Begins a transaction. A reader that finds the map grown by another process adopts the new
    /// size and retries once (LMDB reports that as MDB_MAP_RESIZED).
    func begin(readOnly: Bool) throws -> LMDBTransaction {
        var txn: OpaquePointer?
        var rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
        if rc == MDB_MAP_RESIZED {
            try setMapSize(0)
            rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
        }
        try lmdb(readOnly ? "mdb_txn_begin(read)" : "mdb_txn_begin(write)", rc)
        guard let txn else { throw LMDBError(code: -1, operation: "mdb_txn_begin") }
        return LMDBTransaction(handle: txn)
    }
}

/// A transaction. Ends exactly once through `commit()` or `abort()`.
struct LMDBTransaction {
    let handle: OpaquePointer

    func commit() throws { try lmdb("mdb_txn_commit", mdb_txn_commit(handle)) }
    func abort() { mdb_txn_abort(handle) }
    /// The snapshot's transaction id (a read transaction's is the last committed one's).
    var id: UInt64 { UInt64(mdb_txn_id(handle)) }

    /// Runs `body`, then commits. The one place that decides how a failed transaction ends:
    /// a failure in `body` aborts; a failed commit does not, because mdb_txn_commit frees the
    /// transaction even when it fails (aborting it then would free it twice).
    func commit<T>(after body: () throws -> T) throws -> T {
        let result: T
        do {
            result = try body()
        } catch {
            abort()
            throw error
        }
        try commit()
        return result
    }

    func openDatabase(_ name: String, create: Bool, integerKeys: Bool = false) throws -> MDB_dbi {
        var dbi: MDB_dbi = 0
        var flags: UInt32 = create ? UInt32(MDB_CREATE) : 0
        if integerKeys { flags |= UInt32(MDB_INTEGERKEY) }
        try lmdb("mdb_dbi_open \(name)", mdb_dbi_open(handle, name, flags, &dbi))
        return dbi
    }

    /// Reserves `size` bytes for `key` and lets `fill` write the value in place (MDB_RESERVE),
    /// which saves one copy per record on the hot append path.
    func reserve(_ dbi: MDB_dbi, key: UnsafeRawBufferPointer, size: Int, append: Bool,
                 _ fill: (UnsafeMutableRawBufferPointer) -> Void) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: size, mv_data: nil)
        let flags = UInt32(MDB_RESERVE) | (append ? UInt32(MDB_APPEND) : 0)
        try lmdb("mdb_put", mdb_put(handle, dbi, &k, &v, flags))
        fill(UnsafeMutableRawBufferPointer(start: v.mv_data, count: size))
    }

    /// Appends `value` under the big-endian key of `sequence` (MDB_APPEND: keys must ascend).
    /// The hot path of the writer: no closures, no allocation.
    @inline(__always)
    func append(_ dbi: MDB_dbi, sequence: UInt64, value: UnsafeRawBufferPointer) throws {
        var key = sequence.bigEndian
        let rc = withUnsafeMutableBytes(of: &key) { k -> Int32 in
            var kv = MDB_val(mv_size: 8, mv_data: k.baseAddress)
            var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            return mdb_put(handle, dbi, &kv, &v, UInt32(MDB_APPEND))
        }
        try lmdb("mdb_put", rc)
    }

    func put(_ dbi: MDB_dbi, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, append: Bool = false) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try lmdb("mdb_put", mdb_put(handle, dbi, &k, &v, append ? UInt32(MDB_APPEND) : 0))
    }

    /// The value for `key`, valid until the transaction ends; nil when absent.
    /// Stores `value` unless `key` is present (MDB_NOOVERWRITE); true when it was stored.
    func putIfAbsent(_ dbi: MDB_dbi, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = mdb_put(handle, dbi, &k, &v, UInt32(MDB_NOOVERWRITE))
        if rc == MDB_KEYEXIST { return false }
        try lmdb("mdb_put", rc)
        return true
    }

    func get(_ dbi: MDB_dbi, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = mdb_get(handle, dbi, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try lmdb("mdb_get", rc)
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    func delete(_ dbi: MDB_dbi, key: UnsafeRawBufferPointer) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let rc = mdb_del(handle, dbi, &k, nil)
        if rc == MDB_NOTFOUND { return }
        try lmdb("mdb_del", rc)
    }

    /// Deletes every entry of the database, keeping the database itself.
    func empty(_ dbi: MDB_dbi) throws {
        try lmdb("mdb_drop", mdb_drop(handle, dbi, 0))
    }

    func stat(_ dbi: MDB_dbi) throws -> MDB_stat {
        var s = MDB_stat()
        try lmdb("mdb_stat", mdb_stat(handle, dbi, &s))
        return s
    }

    func cursor(_ dbi: MDB_dbi) throws -> LMDBCursor {
        var cursor: OpaquePointer?
        try lmdb("mdb_cursor_open", mdb_cursor_open(handle, dbi, &cursor))
        guard let cursor else { throw LMDBError(code: -1, operation: "mdb_cursor_open") }
        return LMDBCursor(handle: cursor)
    }
}

/// A cursor over one database; closed exactly once with `close()`.
struct LMDBCursor {
    let handle: OpaquePointer

    func close() { mdb_cursor_close(handle) }

    enum Position { case first, last, next, prev, atOrAfter(UnsafeRawBufferPointer) }

    /// Moves the cursor; nil when there is no such entry.
    func move(_ position: Position) throws -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        var k = MDB_val()
        var v = MDB_val()
        let rc: Int32
        switch position {
        case .first: rc = mdb_cursor_get(handle, &k, &v, MDB_FIRST)
        case .last: rc = mdb_cursor_get(handle, &k, &v, MDB_LAST)
        case .next: rc = mdb_cursor_get(handle, &k, &v, MDB_NEXT)
        case .prev: rc = mdb_cursor_get(handle, &k, &v, MDB_PREV)
        case .atOrAfter(let key):
            k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            rc = mdb_cursor_get(handle, &k, &v, MDB_SET_RANGE)
        }
        if rc == MDB_NOTFOUND { return nil }
        try lmdb("mdb_cursor_get", rc)
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    func deleteCurrent() throws {
        try lmdb("mdb_cursor_del", mdb_cursor_del(handle, 0))
    }
}
