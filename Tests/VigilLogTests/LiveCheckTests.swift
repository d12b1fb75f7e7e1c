import Foundation
import Testing
@testable import VigilLog
import VigilSystem

/// `vigil log check` beside a node that writes: the node stops and salvages on a "damaged" verdict,
/// so a meta page read while the writer replaced it must never pass for a failing card. (A radio VM
/// test saw exactly that: a page "outside the file" that a moment later was inside it.)
@Suite("Checking a log a node is writing")
struct LiveCheckTests {
    /// A small sound log's data file, and the newest meta page's transaction and page.
    static func soundLog() async throws -> (bytes: [UInt8], transaction: UInt64, metaPage: UInt64, pageSize: Int) {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let log = try EventLog.open(LogConfiguration(directory: directory))
            for i in 0..<40 { _ = try await log.appendDurably(sampleRecord(i), priority: .critical) }
            log.close()
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/data.mdb")))
            let reader = try LMDBFileReader.inMemory(bytes)
            let meta = try #require(reader.newestMeta())
            return (bytes, meta.transaction, meta.page, reader.pageSize)
        }
    }

    /// `bytes` with the main database's root in meta page `page` set to `root`: what a read that
    /// overlapped the writer's rewrite of that page can see (another snapshot's root).
    /// With `transaction`, the page also names that transaction: the writer's rewrite of the slot.
    static func withMainRoot(_ bytes: [UInt8], metaPage page: UInt64, pageSize: Int, root: UInt64,
                             transaction: UInt64? = nil) -> [UInt8] {
        var torn = bytes
        let at = Int(page) * pageSize + 16 + 24 + 48 + 40
        for i in 0..<8 { torn[at + i] = UInt8(truncatingIfNeeded: root >> (8 * UInt64(i))) }
        if let transaction {
            let txn = Int(page) * pageSize + 144
            for i in 0..<8 { torn[txn + i] = UInt8(truncatingIfNeeded: transaction >> (8 * UInt64(i))) }
        }
        return torn
    }

    /// Hands out the given file images in turn, then the last one for ever.
    final class Opens {
        private var images: [[UInt8]]
        private(set) var count = 0
        init(_ images: [[UInt8]]) { self.images = images }
        func next() throws(LogError) -> LMDBFileReader {
            count += 1
            let image = images.count > 1 ? images.removeFirst() : images[0]
            return try LMDBFileReader.inMemory(image)
        }
    }

    @Test func aMetaPageThatChangesBetweenTwoReadsIsReadAgainNotReportedAsDamage() async throws {
        let log = try await Self.soundLog()
        let torn = Self.withMainRoot(log.bytes, metaPage: log.metaPage, pageSize: log.pageSize, root: 9_999)
        #expect(!(try LogCheck.check(reader: .inMemory(torn), transaction: log.transaction).isHealthy),
                "the torn image, checked as it is, shows damage")
        let opens = Opens([torn, log.bytes])
        var released = 0
        let report = try #require(try LogCheck.checkPinned(
            pin: { LogCheck.PinnedSnapshot(transaction: log.transaction, release: { released += 1 }) },
            open: opens.next))
        #expect(report.isHealthy && report.pinned && report.records == 40)
        #expect(opens.count == 4, "the first attempt read the meta twice, saw it change and tried again")
        #expect(released == 2, "every pinned snapshot is released")
    }

    /// A data file whose meta pages read as `before` twice (page 0 and page 1 once each: one
    /// `metas()`) and as `after` from then on, as if the writer committed twice meanwhile.
    final class MetaRewrittenAfterOneRead {
        let before: [UInt8], after: [UInt8]
        private var metaReads = 0
        init(before: [UInt8], after: [UInt8]) { self.before = before; self.after = after }
        func reader(pageSize: Int) -> LMDBFileReader {
            LMDBFileReader(readPage: { number, count in
                var image = self.before
                if number < 2 {
                    self.metaReads += 1
                    if self.metaReads > 2 { image = self.after }
                }
                return Array(image[Int(number) * pageSize..<(Int(number) + count) * pageSize])
            }, pageSize: pageSize, pageCount: UInt64(before.count / pageSize))
        }
    }

    @Test func theWalkUsesTheMetaItCheckedNotWhatThePageHoldsTwoCommitsLater() async throws {
        // Two commits on, the writer overwrites the pinned snapshot's meta page with its own (the
        // pinned transaction + 2). A walk that read the meta pages again would not find the pinned
        // one and would follow the newest instead: its roots past the size the file had when it was
        // opened (here 9,999), the "page outside the file" the VM test saw.
        let log = try await Self.soundLog()
        let later = Self.withMainRoot(log.bytes, metaPage: log.metaPage, pageSize: log.pageSize, root: 9_999,
                                      transaction: log.transaction + 2)
        #expect(!(try LogCheck.check(reader: .inMemory(later), transaction: log.transaction).isHealthy),
                "read again, the pages show the newer snapshot, past the file")
        var opens = 0
        let report = try #require(try LogCheck.checkPinned(
            pin: { LogCheck.PinnedSnapshot(transaction: log.transaction, release: {}) },
            open: { () throws(LogError) -> LMDBFileReader in
                opens += 1
                return opens == 1 ? try LMDBFileReader.inMemory(log.bytes)
                    : MetaRewrittenAfterOneRead(before: log.bytes, after: later).reader(pageSize: log.pageSize)
            }))
        #expect(report.isHealthy && report.records == 40, "\(report.damagedPages)")
        #expect(opens == 2)
    }

    @Test func aSnapshotWhoseMetaIsAlreadyOverwrittenIsPinnedAfresh() async throws {
        let log = try await Self.soundLog()
        var pins: [UInt64] = [log.transaction - 2, log.transaction]
        let opens = Opens([log.bytes])
        let report = try #require(try LogCheck.checkPinned(
            pin: { LogCheck.PinnedSnapshot(transaction: pins.removeFirst(), release: {}) }, open: opens.next))
        #expect(report.pinned && report.transaction == log.transaction && report.isHealthy)
    }

    @Test func noSnapshotPinnedInTimeIsNoReport() async throws {
        let log = try await Self.soundLog()
        let opens = Opens([log.bytes])
        let report = try LogCheck.checkPinned(attempts: 3, pin: {
            LogCheck.PinnedSnapshot(transaction: log.transaction + 5, release: {})
        }, open: opens.next)
        #expect(report == nil)
        #expect(opens.count == 3)
    }

    static func report(pinned: Bool, damaged: [String]) -> LogCheckReport {
        var report = LogCheckReport()
        report.pinned = pinned
        report.damagedPages = damaged
        return report
    }

    @Test func damageOneLookSawAndTheNextDidNotIsKeptAsUnconfirmedNotTheVerdict() throws {
        var looks = [Self.report(pinned: true, damaged: ["page 22: outside"]), Self.report(pinned: true, damaged: [])]
        let report = try LogCheck.confirmingDamage { looks.removeFirst() }
        #expect(report.isHealthy)
        #expect(report.unconfirmedDamage == ["page 22: outside"])
        #expect(looks.isEmpty)
    }

    @Test func damageTwoLooksSeeIsTheVerdict() throws {
        var looks = [Self.report(pinned: true, damaged: ["page 7: unreadable"]),
                     Self.report(pinned: true, damaged: ["page 7: unreadable"])]
        let report = try LogCheck.confirmingDamage { looks.removeFirst() }
        #expect(report.damagedPages == ["page 7: unreadable"] && report.unconfirmedDamage.isEmpty)
    }

    @Test func aSoundFirstLookIsNotLookedAtTwiceButUnpinnedDamageIs() throws {
        var calls = 0
        _ = try LogCheck.confirmingDamage { calls += 1; return Self.report(pinned: true, damaged: []) }
        #expect(calls == 1)
        // No snapshot could be pinned: pages recycled meanwhile can look damaged, so look again.
        var looks = [Self.report(pinned: false, damaged: ["page 3: keys out of order"]), Self.report(pinned: true, damaged: [])]
        let report = try LogCheck.confirmingDamage { looks.removeFirst() }
        #expect(report.isHealthy && report.unconfirmedDamage == ["page 3: keys out of order"])
    }

    @Test func aPageThatCouldNotBeReadAtTheFirstLookIsTheVerdictWhateverTheSecondSays() throws {
        // An I/O error is the card's doing, never a misreading: a failing card's first errors come
        // and go, and the node must hear of them.
        var first = Self.report(pinned: true, damaged: ["page 9: \(LMDBFileReader.unreadable): EIO"])
        first.unreadablePages = 1
        var looks = [first, Self.report(pinned: true, damaged: [])]
        let report = try LogCheck.confirmingDamage { looks.removeFirst() }
        #expect(report.damagedPages.count == 1 && report.unreadablePages == 1)
        #expect(looks.count == 1, "no second look")
    }

    @Test func aPageReadFailingInTheWalkIsCountedAsUnreadable() async throws {
        let log = try await Self.soundLog()
        let sound = try LMDBFileReader.inMemory(log.bytes)
        let failing = LMDBFileReader(readPage: { number, count in
            if number >= 2 { throw LogError.system(SystemError("pread", errno: Errno(rawValue: 5))) }
            return try sound.readPage(number, count)
        }, pageSize: sound.pageSize, pageCount: sound.pageCount)
        let report = try LogCheck.check(reader: failing, transaction: nil)
        // The pages that could not be read, not what followed from them (a main database that no
        // longer names the events).
        let unreadable = report.damagedPages.filter { $0.contains(": \(LMDBFileReader.unreadable): ") }
        #expect(report.unreadablePages > 0 && report.unreadablePages == unreadable.count, "\(report.damagedPages)")
        #expect(report.damagedPages.count > unreadable.count)
    }
}
