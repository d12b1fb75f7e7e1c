import CLMDB
import VigilLog
import VigilSystem

// The baselines: liblmdb called directly, with none of Vigil's layers (no queue, no writer
// thread, no Swift wrappers), doing the same work as the Vigil run it is compared with.

struct LMDBFailure: Error, CustomStringConvertible {
    let operation: String
    let code: Int32
    var description: String {
        let text = mdb_strerror(code).map { String(cString: $0) } ?? "unknown"
        return "raw \(operation): \(text) (\(code))"
    }
}

@inline(__always)
private func lmdb(_ operation: String, _ rc: Int32) throws(LMDBFailure) {
    if rc != 0 { throw LMDBFailure(operation: operation, code: rc) }
}

/// An environment opened with the raw C API; closed when released.
private final class RawEnvironment {
    let handle: OpaquePointer

    /// `mapSize` 0 keeps the size recorded in the file (for read-only opens).
    init(path: String, flags: UInt32, mapSize: Int) throws(LMDBFailure) {
        var env: OpaquePointer?
        try lmdb("mdb_env_create", mdb_env_create(&env))
        guard let env else { throw LMDBFailure(operation: "mdb_env_create", code: -1) }
        do throws(LMDBFailure) {
            // Same layout as Vigil's environment: named databases, "events" among them.
            try lmdb("mdb_env_set_maxdbs", mdb_env_set_maxdbs(env, 4))
            if mapSize > 0 { try lmdb("mdb_env_set_mapsize", mdb_env_set_mapsize(env, mapSize)) }
            try lmdb("mdb_env_open", mdb_env_open(env, path, flags, 0o640))
        } catch {
            mdb_env_close(env)
            throw error
        }
        handle = env
    }

    deinit { mdb_env_close(handle) }

    /// Opens (or creates) the "events" database in its own committed transaction.
    func openEvents(create: Bool) throws(LMDBFailure) -> MDB_dbi {
        var txn: OpaquePointer?
        try lmdb("mdb_txn_begin", mdb_txn_begin(handle, nil, create ? 0 : UInt32(MDB_RDONLY), &txn))
        var dbi: MDB_dbi = 0
        let rc = mdb_dbi_open(txn, "events", create ? UInt32(MDB_CREATE) : 0, &dbi)
        if rc != 0 {
            mdb_txn_abort(txn)
            throw LMDBFailure(operation: "mdb_dbi_open", code: rc)
        }
        try lmdb("mdb_txn_commit", mdb_txn_commit(txn))
        return dbi
    }
}

struct RawAppendResult {
    let nanoseconds: UInt64
    let cpuNanoseconds: UInt64
    let io: IODelta
}

enum RawLMDB {
    /// Environment flags for a Vigil sync mode, as EventLog.open sets them.
    static func flags(for sync: SyncMode) -> UInt32 {
        switch sync {
        case .full: UInt32(MDB_NOTLS)
        case .deferredMeta: UInt32(MDB_NOTLS) | UInt32(MDB_NOMETASYNC)
        case .none: UInt32(MDB_NOTLS) | UInt32(MDB_NOSYNC)
        }
    }

    /// Appends `count` events of `workload` (keys 1...count, big-endian, MDB_APPEND), `batch`
    /// per transaction, committing each; `finalSync` adds one mdb_env_sync(env, 1) at the end.
    /// Returns the nanoseconds from the first begin to the last commit (or sync), and the kernel's
    /// I/O counters over the same span.
    static func append(directory: String, sync: SyncMode, mapSize: Int, batch: Int, count: Int,
                       workload: AppendWorkload, device: BlockDevice?) throws(LMDBFailure) -> RawAppendResult {
        let env = try RawEnvironment(path: directory, flags: flags(for: sync), mapSize: mapSize)
        let dbi = try env.openEvents(create: true)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: workload.maxValueSize, alignment: 8)
        defer { buffer.deallocate() }
        let keyBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        defer { keyBuffer.deallocate() }

        let ioBefore = IOSnapshot.take(device: device)
        let cpuBefore = threadCPUNanoseconds()
        let start = monotonicNanoseconds()
        var i = 0
        while i < count {
            var txn: OpaquePointer?
            try lmdb("mdb_txn_begin", mdb_txn_begin(env.handle, nil, 0, &txn))
            let end = min(count, i + max(1, batch))
            while i < end {
                keyBuffer.storeBytes(of: UInt64(i + 1).bigEndian, as: UInt64.self)
                let length = workload.encodeValue(i, into: buffer)
                var key = MDB_val(mv_size: 8, mv_data: keyBuffer.baseAddress)
                var value = MDB_val(mv_size: length, mv_data: buffer.baseAddress)
                let rc = mdb_put(txn, dbi, &key, &value, UInt32(MDB_APPEND))
                if rc != 0 {
                    mdb_txn_abort(txn)
                    throw LMDBFailure(operation: "mdb_put", code: rc)
                }
                i += 1
            }
            try lmdb("mdb_txn_commit", mdb_txn_commit(txn))
        }
        if sync == .deferredMeta { try lmdb("mdb_env_sync", mdb_env_sync(env.handle, 1)) }
        let elapsed = monotonicNanoseconds() - start
        return RawAppendResult(nanoseconds: elapsed, cpuNanoseconds: threadCPUNanoseconds() - cpuBefore,
                               io: IOSnapshot.take(device: device).since(ioBefore))
    }

    /// Walks every value of the "events" database with a cursor, touching each value's first
    /// byte. Returns the entries seen, the nanoseconds taken and a checksum of the bytes touched.
    static func cursorWalk(directory: String) throws(LMDBFailure) -> (entries: Int, nanoseconds: UInt64, checksum: UInt64) {
        let env = try RawEnvironment(path: directory, flags: UInt32(MDB_NOTLS) | UInt32(MDB_RDONLY), mapSize: 0)
        let dbi = try env.openEvents(create: false)
        let start = monotonicNanoseconds()
        var txn: OpaquePointer?
        try lmdb("mdb_txn_begin", mdb_txn_begin(env.handle, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        var cursor: OpaquePointer?
        try lmdb("mdb_cursor_open", mdb_cursor_open(txn, dbi, &cursor))
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var entries = 0
        var checksum: UInt64 = 0
        var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while rc == 0 {
            if value.mv_size > 0, let data = value.mv_data {
                checksum &+= UInt64(data.load(as: UInt8.self))
            }
            entries += 1
            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { throw LMDBFailure(operation: "mdb_cursor_get", code: rc) }
        return (entries, monotonicNanoseconds() - start, checksum)
    }
}
