import CLMDB
import VigilSystem

/// What `vigil log salvage` did.
public struct SalvageReport: Sendable, Codable, Equatable {
    /// Where the damaged files were moved, untouched.
    public var keptAside: String = ""
    /// Records copied into the fresh log (every one passed its checksum, or was a format-1 record
    /// the tree still reached).
    public var recovered: UInt64 = 0
    /// Of those, found outside the tree (in pages the damage cut off, or older copies of them).
    public var recoveredOutsideTree: UInt64 = 0
    /// Sequences known to be lost: corrupt, or under a damaged page and found nowhere else. Ranges
    /// under a damaged page may include records retention had deleted on purpose.
    public var lost: [LogCheckReport.SequenceRange] = []
    /// The highest sequence recovered; the new epoch starts well above it.
    public var highestRecovered: UInt64 = 0
    /// The first sequence of the new epoch: later events never reuse a sequence the old log (or a
    /// hub it uploaded to) may have had.
    public var nextSequence: UInt64 = 0
    public var seconds: Double = 0
    /// Damage cut off the end of the log (or all of it): events after `highestRecovered` may have
    /// existed, and how many cannot be told.
    public var tailUnknown: Bool = false
    /// What the check found before the salvage.
    public var check = LogCheckReport()

    public var lostCount: UInt64 { lost.reduce(0) { $0 + $1.count } }

    public init() {}
}

/// Copies every record that can be trusted out of a damaged log into a fresh one.
///
/// How: the damaged `data.mdb` is read with `LMDBFileReader` (never with LMDB). First the tree of
/// the newest meta page, then every leaf page of the file (a damaged branch page cuts off leaves
/// that are still intact; copy-on-write leaves older copies of recent pages): a record is taken
/// from a page outside the tree only if its checksum, over its sequence too, matches, so nothing
/// is guessed. The fresh log is written and synced in `salvage-tmp/`, then the damaged files move
/// to `corrupt-TIME/` and the fresh one takes their place; each step survives a power cut
/// (`finishInterrupted` completes it at the next start).
///
/// Contract: run it with no node writing the directory (the node's start does it before opening
/// the log; `vigil log salvage` refuses while a node runs). Records found outside the tree that
/// retention had deleted come back; the next retention pass deletes them again.
public enum LogSalvage {
    /// Sequences skipped between the old log and the new epoch.
    public static let epochGap: UInt64 = 1 << 16
    /// No record's sequence is this high (see `copyRecords`): sums stay far from overflow.
    static let maximumSequence: UInt64 = 1 << 48
    static let nextSequenceKey = Array("next-sequence".utf8)
    static let completeMarker = "complete"

    public static func salvage(directory: String, now: UInt64 = realtimeMicroseconds()) throws(LogError) -> SalvageReport {
        try finishInterrupted(directory: directory)
        let started = monotonicNanoseconds()
        // 4096: the page size of every Linux machine Vigil runs on, for a file whose meta pages
        // are both gone (its leaf pages may still hold checksummed records).
        var report = SalvageReport()
        // An unreadable or truncated file is still moved aside and replaced: the node goes on.
        let reader = try? LMDBFileReader.open(path: directory + "/data.mdb", assumingPageSize: 4_096)
        do {
            guard let reader else { throw LogError.incompatible("data.mdb cannot be read as LMDB pages at all") }
            report.check = try LogCheck.check(reader: reader, transaction: nil)
        } catch {
            report.check.damagedPages = ["\(error)"]
            report.check.unreachable = [.init(first: 1, last: .max)]
        }
        let temporary = directory + "/salvage-tmp"
        try logErrors {
            if FileSystem.exists(temporary) {
                FileSystem.remove(temporary + "/data.mdb"); FileSystem.remove(temporary + "/lock.mdb")
                FileSystem.remove(temporary + "/" + completeMarker)
            } else {
                try FileSystem.createDirectory(temporary)
            }
        }
        try copyRecords(from: reader, check: report.check, into: temporary, report: &report)

        // Move the damaged files aside, then the fresh log into place.
        report.keptAside = try setAside(directory: directory, now: now)
        try finishInterrupted(directory: directory)
        report.seconds = Double(monotonicNanoseconds() &- started) / 1e9
        return report
    }

    /// Moves data.mdb and lock.mdb, untouched, into `corrupt-SECONDS/` (a number added if that
    /// exists); returns the directory. The node then starts on a fresh log.
    public static func setAside(directory: String, now: UInt64 = realtimeMicroseconds()) throws(LogError) -> String {
        var aside = directory + "/corrupt-\(now / 1_000_000)"
        var n = 1
        while FileSystem.exists(aside) { n += 1; aside = directory + "/corrupt-\(now / 1_000_000)-\(n)" }
        try logErrors {
            try FileSystem.createDirectory(aside)
            try FileSystem.rename(directory + "/data.mdb", to: aside + "/data.mdb")
            if FileSystem.exists(directory + "/lock.mdb") { try FileSystem.rename(directory + "/lock.mdb", to: aside + "/lock.mdb") }
            try FileSystem.syncDirectory(aside)
            try FileSystem.syncDirectory(directory)
        }
        return aside
    }

    /// Completes a salvage a power cut interrupted: a synced fresh log waiting in `salvage-tmp/`
    /// takes the place of a `data.mdb` already moved aside. Does nothing otherwise.
    public static func finishInterrupted(directory: String) throws(LogError) {
        let temporary = directory + "/salvage-tmp"
        guard FileSystem.exists(temporary + "/" + completeMarker) else { return }
        try logErrors {
            if !FileSystem.exists(directory + "/data.mdb") {
                try FileSystem.rename(temporary + "/data.mdb", to: directory + "/data.mdb")
                try FileSystem.syncDirectory(directory)
            }
            if FileSystem.exists(directory + "/data.mdb") && !FileSystem.exists(temporary + "/data.mdb") {
                FileSystem.remove(temporary + "/lock.mdb")
                FileSystem.remove(temporary + "/" + completeMarker)
                FileSystem.removeEmptyDirectory(temporary)
            }
        }
    }

    /// Writes the fresh log in `temporary`: the tree's records, then checksummed records from every
    /// other leaf page; then the format, the next sequence, a sync and the completion marker.
    private static func copyRecords(from reader: LMDBFileReader?, check: LogCheckReport, into temporary: String,
                                    report: inout SalvageReport) throws(LogError) {
        let meta = reader?.newestMeta()
        try logErrors {
            let fileBytes = reader.map { $0.pageCount.toInt * $0.pageSize } ?? 0
            let env = try LMDBEnvironment(path: temporary, flags: [.noTLS, .noSync], mapSize: max(64 << 20, fileBytes * 2),
                                          maxDatabases: 4)
            var txn = try env.begin(readOnly: false)
            let events = try txn.openDatabase("events", create: true)
            _ = try txn.openDatabase("checkpoints", create: true)
            let metaDB = try txn.openDatabase("meta", create: true)
            var pending = 0
            func flushIfLarge() throws {
                pending += 1
                if pending >= 20_000 {
                    try txn.commit()
                    txn = try env.begin(readOnly: false)
                    pending = 0
                }
            }
            // The format of the damaged log: which of its records can be checked.
            // Unknown (its meta database is damaged): only checksummed records are taken.
            var format = RecordFormat.current
            // The floor an earlier salvage set: the new epoch must start above it too.
            var earlierFloor: UInt64 = 0
            // The highest key the tree holds, even on a record that fails its checksum: that
            // sequence was given out, so the new epoch must not reuse it.
            var highestInTree: UInt64 = 0
            let databases = meta.flatMap { meta in reader.map { $0.namedDatabases(meta) { _ in } } } ?? []
            if let reader, let meta, let m = databases.first(where: { $0.name == "meta" }), let root = m.root {
                var values: [String: [UInt8]] = [:]
                reader.walk(root: root, depth: m.depth, lastPage: meta.lastPage,
                            entry: { key, value, _, _ in values[String(decoding: key, as: UTF8.self)] = value }, damage: { _ in })
                if !values.isEmpty { format = LogCheck.recordFormat(meta: values) }
                if let floor = values[String(decoding: nextSequenceKey, as: UTF8.self)], floor.count == 8 {
                    earlierFloor = floor.u64BigEndian()
                }
            }
            /// Stores a record if it reads; true when it was new. A record with a matching checksum
            /// is taken from anywhere; a format-1 record (no checksum) only from the tree, where it
            /// cannot be a stale or foreign value.
            func take(_ key: [UInt8], _ value: [UInt8], fromTree: Bool) throws -> Bool {
                guard key.count == 8 else { return false }
                let sequence = key.u64BigEndian()
                // 2^48: a box writing a million events a second for eight years. A key above it is
                // a mangled one (a format-1 record has no checksum to say so).
                guard sequence > 0, sequence < maximumSequence else { return false }
                let stored: [UInt8]? = value.withUnsafeBytes { raw in
                    var parsed = RecordFormat.current.parse(sequence: sequence, value: raw)
                    if case .failure = parsed, fromTree, sequence < format.checksummedFrom {
                        parsed = RecordFormat.unchecked.parse(sequence: sequence, value: raw)
                    }
                    guard case .success(let view) = parsed else { return nil }
                    // Re-encoded: every record of the fresh log carries a checksum.
                    return RecordFormat.encoded(view.copy().record, sequence: sequence)
                }
                guard let stored else { return false }
                let isNew = try key.withUnsafeBytes { k in
                    try stored.withUnsafeBytes { v in try txn.putIfAbsent(events, key: k, value: v) }
                }
                if isNew {
                    report.recovered += 1
                    report.highestRecovered = max(report.highestRecovered, sequence)
                    try flushIfLarge()
                }
                return isNew
            }
            if let reader, let meta, let e = databases.first(where: { $0.name == "events" }), let root = e.root {
                try reader.walk(root: root, depth: e.depth, lastPage: meta.lastPage, entry: { key, value, _, _ in
                    if key.count == 8 { highestInTree = max(highestInTree, key.u64BigEndian()) }
                    _ = try take(key, value, fromTree: true)
                }, damage: { _ in })
            }
            // Every other leaf page, for records the tree no longer reaches.
            var page: UInt64 = 2
            while let reader, page < reader.pageCount {
                // Overflow pages are not skipped by their stated span (a mangled one could skip the
                // rest of the file); their data pages fail the page-number check instead.
                if let entries = reader.leafEntries(page: page, lastPage: reader.pageCount - 1) {
                    for (key, value) in entries where key.count == 8 {
                        if try take(key, value, fromTree: false) { report.recoveredOutsideTree += 1 }
                    }
                }
                page += 1
            }
            try txn.commit()

            // What is lost: corrupt records and the ranges under damaged pages, less what came back.
            let read = try env.begin(readOnly: true)
            let cursor = try read.cursor(events)
            var lost = RangeBuilder()
            let candidates = (check.corruptRecords + check.unreachable).sorted { $0.first < $1.first }
            var lastAdded: UInt64 = 0
            for range in candidates where range.first <= report.highestRecovered {
                let high = min(range.last, report.highestRecovered)
                var next = max(range.first, lastAdded + 1)
                guard next <= high else { continue }
                // Walk the recovered keys in the range; the holes between them are lost.
                var at = try withSequenceKey(next) { try cursor.move(.atOrAfter($0)) }
                while next <= high {
                    let present = at.flatMap { sequence(fromKey: $0.key) } ?? UInt64.max
                    if present == next {
                        next += 1
                        at = try cursor.move(.next)
                        continue
                    }
                    let holeEnd = min(high, present &- 1)
                    lost.add(first: next, last: holeEnd)
                    next = holeEnd &+ 1
                    if next == 0 { break }
                }
                lastAdded = high
            }
            cursor.close()
            read.abort()
            report.lost = lost.ranges
            report.tailUnknown = candidates.contains { $0.last > report.highestRecovered }
            // A key of the tree far above every record kept is more likely mangled than real: it
            // counts only within 16M sequences of them.
            let plausible = report.highestRecovered + (1 << 24) + 2 * epochGap
            let highestGiven = highestInTree <= plausible ? max(highestInTree, report.highestRecovered) : report.highestRecovered
            // The earlier floor is read from the damaged file too (no checksum): bounded the same way.
            report.nextSequence = max(min(earlierFloor, plausible), highestGiven + epochGap + 1)

            let write = try env.begin(readOnly: false)
            try write.commit {
                let marker = withUnsafeBytes(of: EventLog.formatVersion.bigEndian) { Array($0) }
                let next = withUnsafeBytes(of: report.nextSequence.bigEndian) { Array($0) }
                for (key, value) in [(EventLog.formatKey, marker), (nextSequenceKey, next)] {
                    try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try write.put(metaDB, key: k, value: v) } }
                }
            }
            try env.sync(force: true)
            FileSystem.remove(temporary + "/" + completeMarker)
            try FileSystem.createExclusive(temporary + "/" + completeMarker, contents: Array("salvaged\n".utf8))
            try FileSystem.syncDirectory(temporary)
        }
    }
}

extension UInt64 {
    var toInt: Int { self > UInt64(Int.max) ? Int.max : Int(self) }
}
