import VigilSystem

/// What `vigil log check` found: whether LMDB can safely read the log, and which records are not
/// what was written.
public struct LogCheckReport: Sendable, Codable, Equatable {
    /// A run of consecutive sequences, inclusive.
    public struct SequenceRange: Sendable, Codable, Equatable, CustomStringConvertible {
        public var first: UInt64
        public var last: UInt64
        public init(first: UInt64, last: UInt64) { self.first = first; self.last = last }
        public var description: String { first == last ? "\(first)" : "\(first)...\(last)" }
        public var count: UInt64 { last - first + 1 }
    }

    public var pageSize: Int = 0
    public var pages: UInt64 = 0
    /// The transaction of the meta page read (the newest readable one).
    public var transaction: UInt64 = 0
    /// Records whose checksum matched (or format-1 records whose envelope reads).
    public var records: UInt64 = 0
    /// Of those, format-1 records: read, but without a checksum to check them by.
    public var unchecked: UInt64 = 0
    public var firstSequence: UInt64 = 0
    public var lastSequence: UInt64 = 0
    /// Records present whose checksum or envelope is wrong.
    public var corruptRecords: [SequenceRange] = []
    /// Pages that cannot be read or break LMDB's layout: opening the log with LMDB may crash.
    public var damagedPages: [String] = []
    /// Sequences in doubt: under damaged pages, or in a leaf holding a corrupt record (its key may
    /// be what was mangled), as far as the tree says. They may include gaps retention made.
    public var unreachable: [SequenceRange] = []
    /// Seconds the check took.
    public var seconds: Double = 0
    /// Whether an LMDB read transaction held the snapshot still while it was read. Unpinned beside
    /// a node that writes, a page reused meanwhile can look damaged: check again.
    public var pinned: Bool = false
    /// Damage a first look found and a second, on a later snapshot, did not: reported, never acted
    /// on (see `LogCheck.confirmingDamage`).
    public var unconfirmedDamage: [String] = []
    /// Of `damagedPages`, pages that could not be read at all (I/O errors).
    public var unreadablePages: Int = 0

    public init() {}

    /// Nothing wrong: LMDB may open the log and every record is what was written.
    public var isHealthy: Bool { damagedPages.isEmpty && corruptRecords.isEmpty }
    /// Opening the log with LMDB is safe (records may still fail their checksums: those are reported
    /// on read and never applied).
    public var isStructurallySound: Bool { damagedPages.isEmpty }
}

/// Checks a log without LMDB (see `LMDBFileReader`): walks the tree of every database from the
/// newest meta page, and checks every record's checksum.
///
/// Contract: safe on any file, however mangled: it never maps the file and never follows an offset
/// it has not checked, so it does not crash where LMDB would. Read-only; it never writes.
/// Misuse: checking a log while a node writes it can report pages the writer recycled meanwhile;
/// `vigil log check` on a live box holds an LMDB read transaction for that (see `checkLive`).
public enum LogCheck {
    public static func check(directory: String) throws(LogError) -> LogCheckReport {
        try check(reader: LMDBFileReader.open(path: directory + "/data.mdb"), transaction: nil)
    }

    /// Checks a log a node may be writing: an LMDB read transaction pins a snapshot (its pages
    /// are not reused while it lasts) and the walk reads that snapshot's meta page. Opening the
    /// environment and beginning a read transaction read only the meta pages, which LMDB
    /// validates; the tree is never touched through LMDB. Falls back to the newest meta when LMDB
    /// refuses the file (then no node can be writing it either).
    ///
    /// Damage found beside a possible writer is looked for again in a later snapshot before it is
    /// reported (see `confirmingDamage`): the node stops and salvages on this verdict, so a
    /// misreading must not pass for a failing card. `nothingWrites` (the node's check before it
    /// opens its log): no writer, so no second look, which would double the time a damaged log's
    /// start waits.
    public static func checkLive(directory: String, nothingWrites: Bool = false) throws(LogError) -> LogCheckReport {
        let path = directory + "/data.mdb"
        guard FileSystem.exists(path) else { throw .missing(directory: directory) }
        guard !nothingWrites,
              let env = try? LMDBEnvironment(path: directory, flags: [.noTLS, .readOnly], mapSize: 0, maxDatabases: 4) else {
            return try check(reader: LMDBFileReader.open(path: path), transaction: nil)
        }
        let pin = { () -> PinnedSnapshot? in
            guard let txn = try? env.begin(readOnly: true) else { return nil }
            return PinnedSnapshot(transaction: txn.id, release: { txn.abort() })
        }
        let open = { () throws(LogError) -> LMDBFileReader in try LMDBFileReader.open(path: path) }
        return try confirmingDamage {
            () throws(LogError) -> LogCheckReport in
            if let report = try checkPinned(pin: pin, open: open) { return report }
            return try check(reader: open(), transaction: nil)
        }
    }

    /// A read transaction held open: its pages are not reused until `release`.
    struct PinnedSnapshot {
        var transaction: UInt64
        var release: () -> Void
    }

    /// Checks one pinned snapshot; nil when none could be pinned and read whole in `attempts` tries.
    ///
    /// Why this order: the writer overwrites the older meta page with every commit, in place, while
    /// this process may be reading it, and nothing makes a read of it atomic. So the snapshot's meta
    /// is read, then the file is opened (and sized) afresh, then the meta is read again and must be
    /// the same: a read that overlapped a commit's write of that page (a torn read: one snapshot's
    /// roots with another's last page) differs, and is tried again. Pages a meta names are written
    /// before the meta, so a file sized after the meta was read holds them all. The walk then uses
    /// the meta read, never the page again: two commits on, it holds a newer snapshot's roots.
    static func checkPinned(attempts: Int = 20, pin: () -> PinnedSnapshot?,
                            open: () throws(LogError) -> LMDBFileReader) throws(LogError) -> LogCheckReport? {
        for _ in 0..<attempts {
            guard let snapshot = pin() else { return nil }
            defer { snapshot.release() }
            guard let meta = try open().metas().first(where: { $0.transaction == snapshot.transaction }) else { continue }
            let reader = try open()
            guard reader.metas().first(where: { $0.transaction == snapshot.transaction }) == meta else { continue }
            var report = try check(reader: reader, meta: meta)
            report.pinned = true
            return report
        }
        return nil
    }

    /// Runs `check` and, when it finds damaged pages, once more on a later snapshot: that second
    /// look is the verdict. A damaged page stays damaged; a misreading (a meta page read while the
    /// writer replaced it, or an unpinned look at pages recycled meanwhile) does not happen twice in
    /// a row. Except a page that could not be read at all: an I/O error is the card's, never a
    /// misreading, so the first look stands (a failing card's first errors come and go). What the
    /// first look saw and the second did not is kept in `unconfirmedDamage`, and `vigil log check`
    /// says it on stderr, which the node logs.
    static func confirmingDamage(_ check: () throws(LogError) -> LogCheckReport) throws(LogError) -> LogCheckReport {
        let first = try check()
        guard !first.damagedPages.isEmpty, first.unreadablePages == 0 else { return first }
        var second = try check()
        if second.damagedPages.isEmpty { second.unconfirmedDamage = first.damagedPages }
        return second
    }

    /// Checks the snapshot at `transaction` (the meta page with that id) when given, else the newest.
    public static func check(reader: LMDBFileReader, transaction: UInt64?) throws(LogError) -> LogCheckReport {
        let metas = reader.metas()
        guard let meta = transaction.flatMap({ t in metas.first { $0.transaction == t } }) ?? reader.newestMeta() else {
            throw .incompatible("neither meta page is readable: this is not an LMDB file any more")
        }
        return try check(reader: reader, meta: meta)
    }

    /// Checks the snapshot whose meta page says `meta`.
    static func check(reader: LMDBFileReader, meta: LMDBFileReader.Meta) throws(LogError) -> LogCheckReport {
        let started = monotonicNanoseconds()
        var report = LogCheckReport()
        report.pageSize = reader.pageSize
        report.pages = reader.pageCount
        report.transaction = meta.transaction
        var damage: [LMDBFileReader.Damage] = []
        let databases = reader.namedDatabases(meta) { damage.append($0) }
        let events = databases.first { $0.name == "events" }
        if events == nil {
            // A mangled name in the main database, or not a Vigil log at all: salvage tells them
            // apart by finding checksummed records or not.
            damage.append(.init(page: meta.mainRoot ?? 0, reason: "the main database does not name the events database",
                                lowKey: [], highKey: nil))
        }
        // The format first: which records carry a checksum.
        var format = RecordFormat.unchecked
        if let metaDB = databases.first(where: { $0.name == "meta" }), let root = metaDB.root {
            var values: [String: [UInt8]] = [:]
            reader.walk(root: root, depth: metaDB.depth, lastPage: meta.lastPage,
                        entry: { key, value, _, _ in values[String(decoding: key, as: UTF8.self)] = value }, damage: { damage.append($0) })
            format = recordFormat(meta: values)
        }
        // The free-page list: a page number out of range there would have the writer overwrite a
        // live page or write past the file, so it is checked like the trees.
        if let root = meta.freeRoot {
            reader.walk(root: root, depth: meta.freeDepth, lastPage: meta.lastPage, entry: { key, value, _, _ in
                let count = value.count >= 8 ? value.u64(0) : 0
                guard value.count >= 8, count <= UInt64((value.count - 8) / 8),
                      (0..<Int(count)).allSatisfy({ i in let p = value.u64(8 + 8 * i); return p >= 2 && p <= meta.lastPage }) else {
                    damage.append(.init(page: 0, reason: "the free-page list names pages outside the file", lowKey: key, highKey: nil))
                    return
                }
            }, damage: { damage.append($0) }, integerKeys: true)
        }
        if let checkpoints = databases.first(where: { $0.name == "checkpoints" }), let root = checkpoints.root {
            reader.walk(root: root, depth: checkpoints.depth, lastPage: meta.lastPage, entry: { _, _, _, _ in }, damage: { damage.append($0) })
        }
        var corrupt = RangeBuilder()
        // Damage in the events tree: its key ranges are sequences. Elsewhere keys are names or
        // transaction ids, so other damage counts as damage but names no sequences.
        var eventsDamage: [LMDBFileReader.Damage] = []
        var suspect: [LogCheckReport.SequenceRange] = []
        func range(low: [UInt8], high: [UInt8]?) -> LogCheckReport.SequenceRange {
            let first = low.count == 8 ? low.u64BigEndian() : 1
            let last = high.map { $0.count == 8 ? $0.u64BigEndian() &- 1 : UInt64.max } ?? UInt64.max
            return LogCheckReport.SequenceRange(first: max(1, first), last: max(max(1, first), last))
        }
        if let events, let root = events.root {
            reader.walk(root: root, depth: events.depth, lastPage: meta.lastPage, entry: { key, value, low, high in
                guard key.count == 8 else {
                    suspect.append(range(low: low, high: high))
                    return
                }
                let sequence = key.u64BigEndian()
                let ok = value.withUnsafeBytes { raw in
                    if case .success = format.parse(sequence: sequence, value: raw) { return true }
                    return false
                }
                if ok {
                    report.records += 1
                    if sequence < format.checksummedFrom { report.unchecked += 1 }
                    if report.firstSequence == 0 { report.firstSequence = sequence }
                    report.lastSequence = max(report.lastSequence, sequence)
                } else {
                    corrupt.add(sequence)
                    // The key itself may be what was mangled: every key of its leaf is in doubt.
                    suspect.append(range(low: low, high: high))
                }
            }, damage: { eventsDamage.append($0) })
        }
        if events == nil {
            // The main database is damaged where it names the events: any of them may be lost.
            report.unreachable = [LogCheckReport.SequenceRange(first: 1, last: .max)]
        }
        report.corruptRecords = corrupt.ranges
        report.damagedPages = (damage + eventsDamage).map(\.description)
        report.unreadablePages = (damage + eventsDamage).filter { $0.reason.hasPrefix(LMDBFileReader.unreadable) }.count
        report.unreachable += suspect
        report.unreachable += eventsDamage.compactMap { d -> LogCheckReport.SequenceRange? in
            guard d.lowKey.isEmpty || d.lowKey.count == 8, d.highKey.map({ $0.count == 8 }) ?? true else { return nil }
            let low = d.lowKey.isEmpty ? 1 : d.lowKey.u64BigEndian()
            let high = d.highKey.map { $0.u64BigEndian() &- 1 } ?? UInt64.max
            return low <= high ? LogCheckReport.SequenceRange(first: low, last: high) : nil
        }
        report.seconds = Double(monotonicNanoseconds() &- started) / 1e9
        return report
    }

    /// Records are read unchecked only when the marker says format 1 exactly and no upgrade is
    /// recorded: a mangled marker must not let corrupt records pass as "from before checksums".
    static func recordFormat(meta values: [String: [UInt8]]) -> RecordFormat {
        if let from = values["checksummed-from"], from.count == 8 {
            return RecordFormat(checksummedFrom: from.u64BigEndian(), checksummedCheckpoints: true)
        }
        if let marker = values["format"], marker == [0, 0, 0, 1] { return .unchecked }
        return .current
    }
}

/// Collects sequences, in ascending order, into ranges.
struct RangeBuilder {
    private(set) var ranges: [LogCheckReport.SequenceRange] = []
    mutating func add(_ sequence: UInt64) { add(first: sequence, last: sequence) }

    /// Adds `first...last`, after everything added so far.
    mutating func add(first: UInt64, last: UInt64) {
        if let previous = ranges.last, previous.last &+ 1 == first {
            ranges[ranges.count - 1].last = last
        } else {
            ranges.append(.init(first: first, last: last))
        }
    }
}

extension Array where Element == UInt8 {
    /// The big-endian u64 of an 8-byte key (0 for any other length).
    func u64BigEndian() -> UInt64 {
        guard count == 8 else { return 0 }
        return reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
