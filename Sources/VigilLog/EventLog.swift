import CLMDB
import VigilSystem

/// The append-only, durable event log: the single source of truth of a Vigil node.
///
/// One LMDB environment holds three databases: `events` (big-endian u64 sequence → envelope),
/// `checkpoints` (projection name → sequence + state) and `meta` (format version).
///
/// Contract:
/// - Appends are cheap and never block on the disk: they enqueue for the one writer thread, which
///   groups everything waiting into one transaction per commit window (group commit).
/// - An append is acknowledged — its completion called, `onDurable` told, or its `await` resumed —
///   only after the commit holding it is durable (see `SyncMode`).
/// - Sequences are assigned in append order when the append is accepted. A shed append gets no
///   sequence; an accepted append later refused at the map's cap leaves a gap that is never filled.
/// - Any number of processes may read while one process writes (`openReadOnly`).
///
/// Misuse: opening the same directory for writing from two processes (VigilNode prevents it with a
/// lock file); calling `close()` and then appending (refused with `.closed`).
public final class EventLog: @unchecked Sendable {
    public let configuration: LogConfiguration
    /// Kept alive while any EventLog of this process uses the directory.
    let shared: OpenEnvironment
    var environment: LMDBEnvironment { shared.environment }
    let events: MDB_dbi
    let checkpoints: MDB_dbi
    let meta: MDB_dbi
    let isReadOnly: Bool
    var mapLock: ReadWriteLock { shared.mapLock }
    /// Set once in `open`, before the log is shared; never reassigned.
    private(set) var writer: LogWriter?
    /// Set once in `openUnwritable`, before the log is shared; never reassigned.
    private(set) var unwritable: LogError?

    /// 2: every record and checkpoint is checksummed (`RecordFormat`). 1: no checksums; read by
    /// this build, and upgraded in place when opened for writing.
    static let formatVersion: UInt32 = 2
    static let formatKey = Array("format".utf8)
    static let checksummedFromKey = Array("checksummed-from".utf8)

    private init(configuration: LogConfiguration, environment: OpenEnvironment,
                 events: MDB_dbi, checkpoints: MDB_dbi, meta: MDB_dbi, readOnly: Bool) {
        self.configuration = configuration
        self.shared = environment
        self.events = events
        self.checkpoints = checkpoints
        self.meta = meta
        self.isReadOnly = readOnly
    }

    /// Opens (creating if needed) the log for writing and starts its writer thread.
    /// `onDurable` is called on the writer thread after each durable commit.
    public static func open(_ configuration: LogConfiguration,
                            onDurable: (@Sendable (CommitReport) -> Void)? = nil) throws(LogError) -> EventLog {
        try logErrors { try FileSystem.createDirectory(configuration.directory) }
        var flags: EnvironmentFlags = [.noTLS]
        switch configuration.sync {
        case .full: break
        case .deferredMeta: flags.insert(.noMetaSync)
        case .none: flags.insert(.noSync)
        }
        let log = try openEnvironment(configuration, flags: flags, readOnly: false)
        let claimed = log.shared.hasWriter.withLock { taken in
            if taken { return false }
            taken = true
            return true
        }
        guard claimed else {
            throw .incompatible("\(configuration.directory) already has a writer in this process")
        }
        do {
            let last = try log.read { try $0.lastSequence() }
            let floor = try log.read { try $0.nextSequenceFloor() }
            log.writer = try LogWriter(environment: log.shared, configuration: configuration,
                                       nextSequence: max(last + 1, floor), onDurable: onDurable)
        } catch {
            log.shared.hasWriter.withLock { $0 = false }
            throw error
        }
        return log
    }

    /// Opens an existing log for reading only, alongside a node that may be writing it.
    public static func openReadOnly(directory: String) throws(LogError) -> EventLog {
        guard FileSystem.exists(directory + "/data.mdb") else { throw .missing(directory: directory) }
        do {
            return try openEnvironment(LogConfiguration(directory: directory), flags: [.noTLS, .readOnly], readOnly: true)
        } catch where error.isReadOnlyFileSystem {
            // A card the kernel turned read-only: LMDB cannot use its lock file there, and nobody
            // can write the log, so reading without one is safe.
            return try openEnvironment(LogConfiguration(directory: directory), flags: [.noTLS, .readOnly, .noLock], readOnly: true)
        }
    }

    /// Opens a log that cannot be written (its file system is read-only): reads work, every append
    /// fails with `failure`, which `failure` reports, so a node runs from memory on it.
    public static func openUnwritable(directory: String, failure: LogError) throws(LogError) -> EventLog {
        let log = try openReadOnly(directory: directory)
        log.unwritable = failure
        return log
    }

    private static func openEnvironment(_ configuration: LogConfiguration, flags: EnvironmentFlags,
                                        readOnly: Bool) throws(LogError) -> EventLog {
        try logErrors {
            let opened = try EnvironmentRegistry.shared.open(configuration, flags: flags, readOnly: readOnly)
            return EventLog(configuration: configuration, environment: opened, events: opened.events,
                            checkpoints: opened.checkpoints, meta: opened.meta, readOnly: readOnly)
        }
    }

    /// Opens the environment and its databases, checking or writing the format marker.
    static func openDatabases(_ configuration: LogConfiguration, flags: EnvironmentFlags,
                              readOnly: Bool) throws -> OpenEnvironment {
        // Read-only opens pass 0 so that the size in the file's meta page is used.
        let env = try LMDBEnvironment(path: configuration.directory, flags: flags,
                                      mapSize: readOnly ? 0 : configuration.initialMapSize, maxDatabases: 4)
        _ = env.readerCheck() // clear reader slots left by crashed processes
        let txn = try env.begin(readOnly: readOnly)
        do {
            // Commit even a read-only transaction: LMDB closes database handles opened in a
            // transaction that is aborted.
            return try txn.commit {
                let events = try txn.openDatabase("events", create: !readOnly)
                let checkpoints = try txn.openDatabase("checkpoints", create: !readOnly)
                let meta = try txn.openDatabase("meta", create: !readOnly)
                let format = try formatOnOpen(txn, events: events, checkpoints: checkpoints, meta: meta, readOnly: readOnly)
                return OpenEnvironment(environment: env, events: events, checkpoints: checkpoints, meta: meta,
                                       readOnly: readOnly, recordFormat: format)
            }
        } catch let error as LMDBError where error.isNotFound {
            // commit(after:) has aborted the transaction.
            throw LogError.incompatible("not a Vigil log (its databases are missing)")
        }
    }

    /// Checks the format marker, writes it into a new log, and upgrades a format-1 log opened for
    /// writing: records from the next sequence on are checksummed, and its checkpoints (which have
    /// no checksum) are dropped, so the first start after the upgrade replays the log once.
    private static func formatOnOpen(_ txn: LMDBTransaction, events: MDB_dbi, checkpoints: MDB_dbi, meta: MDB_dbi,
                                     readOnly: Bool) throws -> RecordFormat {
        let stored = try formatKey.withUnsafeBytes { try txn.get(meta, key: $0) }
        guard let stored else {
            if !readOnly {
                try writeMeta(txn, meta: meta, key: formatKey, value: withUnsafeBytes(of: formatVersion.bigEndian) { Array($0) })
            }
            return .current
        }
        // An upgrade is recorded: whatever the marker now says, records from there on carry a
        // checksum (upgrading again would read them as format 1).
        if try checksummedFromKey.withUnsafeBytes({ try txn.get(meta, key: $0) }) != nil {
            if !readOnly && !(stored.count == 4 && UInt32(bigEndian: stored.loadUnaligned(as: UInt32.self)) == formatVersion) {
                try writeMeta(txn, meta: meta, key: formatKey, value: withUnsafeBytes(of: formatVersion.bigEndian) { Array($0) })
            }
            return try readFormat(txn, meta: meta)
        }
        guard stored.count == 4 else { throw LogError.damaged("format marker has \(stored.count) bytes") }
        let version = UInt32(bigEndian: stored.loadUnaligned(as: UInt32.self))
        switch version {
        case 1 where readOnly:
            return .unchecked
        case 1:
            let cursor = try txn.cursor(events)
            let last = try cursor.move(.last).flatMap { sequence(fromKey: $0.key) } ?? 0
            cursor.close()
            try writeMeta(txn, meta: meta, key: formatKey, value: withUnsafeBytes(of: formatVersion.bigEndian) { Array($0) })
            try writeMeta(txn, meta: meta, key: checksummedFromKey, value: withUnsafeBytes(of: (last + 1).bigEndian) { Array($0) })
            try txn.empty(checkpoints)
            return RecordFormat(checksummedFrom: last + 1, checksummedCheckpoints: true)
        case formatVersion:
            return try readFormat(txn, meta: meta)
        default:
            throw LogError.incompatible("format \(version); this build reads formats 1 and \(formatVersion)")
        }
    }

    /// The record format of a format-2 log (or `.unchecked` while its marker still says 1).
    /// Unchecked only when the marker says 1 exactly and no upgrade is recorded (a mangled marker
    /// must not let corrupt records pass as older than the checksum).
    static func readFormat(_ txn: LMDBTransaction, meta: MDB_dbi) throws -> RecordFormat {
        if let from = try checksummedFromKey.withUnsafeBytes({ try txn.get(meta, key: $0) }), from.count == 8 {
            return RecordFormat(checksummedFrom: UInt64(bigEndian: from.loadUnaligned(as: UInt64.self)), checksummedCheckpoints: true)
        }
        let marker = try formatKey.withUnsafeBytes { try txn.get(meta, key: $0) }
        if let marker, marker.count == 4, UInt32(bigEndian: marker.loadUnaligned(as: UInt32.self)) == 1 { return .unchecked }
        return .current
    }

    private static func writeMeta(_ txn: LMDBTransaction, meta: MDB_dbi, key: [UInt8], value: [UInt8]) throws {
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try txn.put(meta, key: k, value: v) } }
    }

    // MARK: Appending

    /// Queues `record`; `completion` (optional) runs on the writer thread once the record is
    /// durable or refused. Returns the sequence the record will have.
    /// Throws `.shed` at once when the queue is over its limit and `priority` is `.sheddable`.
    @discardableResult
    public func append(_ record: LogRecord, priority: AppendPriority,
                       completion: (@Sendable (Result<UInt64, LogError>) -> Void)? = nil) throws(LogError) -> UInt64 {
        guard let writer else { throw unwritable ?? .closed }
        return try writer.enqueue(record, priority: priority, completion: completion)
    }

    /// Stops the writer taking work until called with false: appends queue, and sheddable ones
    /// past `queueLimit` are refused, exactly as behind a card that cannot keep up. For tests of
    /// load shedding (internal: `@testable` only); a close still writes everything queued.
    func holdWriter(_ hold: Bool) {
        writer?.hold(hold)
    }

    /// Appends and waits until the record is durable; returns its sequence.
    public func appendDurably(_ record: LogRecord, priority: AppendPriority) async throws(LogError) -> UInt64 {
        let result: Result<UInt64, LogError> = await withCheckedContinuation { continuation in
            do {
                try append(record, priority: priority) { continuation.resume(returning: $0) }
            } catch {
                continuation.resume(returning: .failure(LogError(wrapping: error)))
            }
        }
        return try result.get()
    }

    /// Queues a projection checkpoint. It is written in the first transaction that starts after
    /// this call, so it can never be durable before the events it includes were (callers only
    /// checkpoint state built from acknowledged events).
    public func writeCheckpoint(name: String, throughSequence: UInt64, state: [UInt8]) throws(LogError) {
        guard let writer else { throw .closed }
        try writer.enqueueCheckpoint(name: name, sequence: throughSequence, state: state)
    }

    /// Deletes stored records — retention, the one exception to "append-only": records at or below
    /// `throughSequence` whose time is before `beforeMicroseconds` and which `matches(kind, sequence, payload)`
    /// selects. The writer thread does it in small transactions between commits (appends wait for
    /// one slice at most); `completion` gets the number deleted, on the writer thread.
    ///
    /// Contract: the caller has first logged, durably, an event saying what is being removed, so
    /// state rebuilt from the log is the same whether or not the deletion has happened yet (and
    /// an interrupted deletion is simply asked for again: it is idempotent). Misuse: deleting
    /// records that projections still depend on makes replay disagree with the running state.
    /// The scan stops
    /// early once it has met 10,000 records in a row more than an hour past the cutoff (the log is
    /// written in time order), so a purge costs what is old, not the whole log.
    public func purge(before beforeMicroseconds: UInt64, throughSequence: UInt64,
                      matches: @escaping @Sendable (_ kind: UInt32, _ sequence: UInt64, _ payload: UnsafeRawBufferPointer) -> Bool,
                      completion: @escaping @Sendable (Result<UInt64, LogError>) -> Void) throws(LogError) {
        guard let writer else { throw .closed }
        try writer.enqueuePurge(LogWriter.Purge(beforeMicroseconds: beforeMicroseconds, throughSequence: throughSequence,
                                                matches: matches, completion: completion))
    }

    /// Deletes the records of sequence `first...last` whose time is in `[from, before)` and that
    /// `matches` (a compaction's span): the whole range is walked, in the same small slices.
    public func purge(sequences first: UInt64, through last: UInt64, from fromMicroseconds: UInt64, before beforeMicroseconds: UInt64,
                      matches: @escaping @Sendable (_ kind: UInt32, _ sequence: UInt64, _ payload: UnsafeRawBufferPointer) -> Bool,
                      completion: @escaping @Sendable (Result<UInt64, LogError>) -> Void) throws(LogError) {
        guard let writer else { throw .closed }
        var purge = LogWriter.Purge(beforeMicroseconds: beforeMicroseconds, notBeforeMicroseconds: fromMicroseconds, throughSequence: last,
                                    stopsAfterNewerRun: false, matches: matches, completion: completion)
        purge.resume = first
        try writer.enqueuePurge(purge)
    }

    /// Sequences at or below this are durable.
    public var durableSequence: UInt64 { writer?.statistics.durableSequence ?? 0 }

    public var statistics: LogStatistics { writer?.statistics ?? LogStatistics() }

    /// The write or flush error that made the log refuse everything, if one happened. The owner
    /// should stop and restart from what is on disk.
    public var failure: LogError? { writer?.failed ?? unwritable }

    /// Writes everything queued, makes it durable, acknowledges it, and stops the writer.
    /// Appends after this are refused with `.closed`.
    public func close() {
        // The writer stays (its statistics remain readable); stopping it is idempotent.
        guard let writer, writer.stop() else { return }
        shared.hasWriter.withLock { $0 = false }
    }

    deinit { close() }

    // MARK: Reading

    /// Runs `body` inside one read transaction: a consistent snapshot of the log.
    /// Never hold the transaction longer than needed: a long reader keeps old pages from reuse.
    /// Errors thrown by `body` pass through unchanged when they are `LogError`s.
    public func read<T>(_ body: (LogReadTransaction) throws -> T) throws(LogError) -> T {
        try logErrors {
            try mapLock.withReadLock { () throws -> T in
                let txn = try environment.begin(readOnly: true)
                defer { txn.abort() }
                return try body(LogReadTransaction(log: self, txn: txn, format: try currentFormat(txn)))
            }
        }
    }

    /// The format as this process knows it; a reader of a format-1 log looks again, in case a node
    /// has upgraded it since (the upgrade is one way, so a checksummed format is never re-read).
    private func currentFormat(_ txn: LMDBTransaction) throws -> RecordFormat {
        let known = shared.recordFormat.withLock { $0 }
        guard known == .unchecked else { return known }
        let now = try Self.readFormat(txn, meta: meta)
        if now != known { shared.recordFormat.withLock { $0 = now } }
        return now
    }

    /// Frees the reader slots of processes that died inside a read transaction (a checker killed
    /// at its timeout): LMDB would otherwise keep their snapshot's pages from reuse. Returns how
    /// many were freed.
    @discardableResult
    public func clearStaleReaders() -> Int { Int(environment.readerCheck()) }

    /// How records of this log are stored (which carry a checksum).
    public var recordFormat: RecordFormat { shared.recordFormat.withLock { $0 } }

    /// Bytes the map uses (pages up to the high-water mark) and its current size.
    public func spaceUsage() throws(LogError) -> (usedBytes: Int, mapBytes: Int, pageSize: Int) {
        try logErrors {
            let info = try environment.info()
            let page = try environment.pageSize()
            return ((Int(info.me_last_pgno) + 1) * page, info.me_mapsize, page)
        }
    }
}


/// What the writer reports after each durable commit.
public struct CommitReport: Sendable {
    /// Every accepted sequence at or below this is durable, except those in `refused`.
    public let durableThrough: UInt64
    /// Sequences refused in this commit (log full, or failed); their events were never stored.
    public let refused: [UInt64]

    public init(durableThrough: UInt64, refused: [UInt64]) {
        self.durableThrough = durableThrough
        self.refused = refused
    }
}

/// A read-only snapshot of the log; valid only inside `EventLog.read`.
public struct LogReadTransaction {
    let log: EventLog
    let txn: LMDBTransaction
    let format: RecordFormat

    /// The highest stored sequence, 0 when empty.
    public func lastSequence() throws(LogError) -> UInt64 { try edge(.last) }

    /// The lowest stored sequence, 0 when empty.
    public func firstSequence() throws(LogError) -> UInt64 { try edge(.first) }

    private func edge(_ position: LMDBCursor.Position) throws(LogError) -> UInt64 {
        try logErrors {
            let cursor = try txn.cursor(log.events)
            defer { cursor.close() }
            guard let entry = try cursor.move(position) else { return 0 }
            return sequence(fromKey: entry.key) ?? 0
        }
    }

    /// Visits records from `start` on, in order, until `body` returns false. A value whose
    /// envelope cannot be read is passed as `.failure` naming its sequence, and iteration goes on.
    public func forEach(from start: UInt64 = 0,
                        _ body: (Result<StoredRecordView, CorruptRecord>) throws -> Bool) throws(LogError) {
        try logErrors {
            let cursor = try txn.cursor(log.events)
            defer { cursor.close() }
            var entry = try withSequenceKey(start) { try cursor.move(.atOrAfter($0)) }
            while let current = entry {
                let result: Result<StoredRecordView, CorruptRecord>
                if let seq = sequence(fromKey: current.key) {
                    result = format.parse(sequence: seq, value: current.value)
                } else {
                    result = .failure(CorruptRecord(sequence: 0, reason: "key of \(current.key.count) bytes"))
                }
                guard try body(result) else { return }
                entry = try cursor.move(.next)
            }
        }
    }

    /// The least sequence the next append may have: set by a salvage, so a new epoch never reuses
    /// a sequence the damaged log may have held. 0 when none was set.
    public func nextSequenceFloor() throws(LogError) -> UInt64 {
        try logErrors {
            guard let value = try LogSalvage.nextSequenceKey.withUnsafeBytes({ try txn.get(log.meta, key: $0) }),
                  value.count == 8 else { return 0 }
            return UInt64(bigEndian: value.loadUnaligned(as: UInt64.self))
        }
    }

    /// The most recent checkpoint stored under `name`.
    public func checkpoint(named name: String) throws(LogError) -> (sequence: UInt64, state: [UInt8])? {
        try logErrors {
            let key = Array(name.utf8)
            guard let value = try key.withUnsafeBytes({ try txn.get(log.checkpoints, key: $0) }) else { return nil }
            return format.parseCheckpoint(name: name, value: Array(value))
        }
    }

    /// Page statistics of the events database (what `mdb_stat` prints).
    public func eventsPageStatistics() throws(LogError) -> PageStatistics {
        try logErrors {
            let s = try txn.stat(log.events)
            return PageStatistics(entries: Int(s.ms_entries), leafPages: Int(s.ms_leaf_pages),
                                  branchPages: Int(s.ms_branch_pages), overflowPages: Int(s.ms_overflow_pages),
                                  pageSize: Int(s.ms_psize), depth: Int(s.ms_depth))
        }
    }
}

public struct PageStatistics: Sendable, Codable {
    public let entries: Int
    public let leafPages: Int
    public let branchPages: Int
    public let overflowPages: Int
    public let pageSize: Int
    public let depth: Int
    public var totalBytes: Int { (leafPages + branchPages + overflowPages) * pageSize }
}
