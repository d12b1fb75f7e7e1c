import Foundation
import Testing
import VigilLog
import VigilSystem

/// A failing card, as the issue measured it: random 8-byte writes into data.mdb.
@Suite("Checking and salvaging a damaged log")
struct SalvageTests {
    /// Records of varied sizes: most small like scan hits, some over a page (overflow pages).
    static func records(_ count: Int) -> [LogRecord] {
        (0..<count).map { sampleRecord($0, payloadBytes: $0 % 97 == 5 ? 5_000 : 24 + $0 % 40) }
    }

    static func makeLog(_ records: [LogRecord], at directory: String) async throws {
        let log = try EventLog.open(LogConfiguration(directory: directory))
        for chunk in stride(from: 0, to: records.count, by: 500) {
            _ = await appendAll(log, Array(records[chunk..<min(chunk + 500, records.count)]), priority: .critical)
        }
        log.close()
    }

    /// `writes` 8-byte runs of random bytes at random offsets past the meta pages, from `seed`.
    static func damage(_ path: String, writes: Int, seed: UInt64) throws -> [UInt8] {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var random = SplitMix64(seed: seed)
        for _ in 0..<writes {
            let at = Int.random(in: 8_192..<(bytes.count - 8), using: &random)
            for i in 0..<8 { bytes[at + i] = UInt8.random(in: 0...255, using: &random) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return bytes
    }

    @Test func aHealthyLogChecksCleanAndEveryRecordIsCounted() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            try await Self.makeLog(Self.records(3_000), at: directory)
            let report = try LogCheck.check(directory: directory)
            #expect(report.isHealthy, "\(report.damagedPages) \(report.corruptRecords)")
            #expect(report.records == 3_000)
            #expect(report.unchecked == 0)
            #expect(report.firstSequence == 1 && report.lastSequence == 3_000)
        }
    }

    @Test(arguments: (0..<24).map { (writes: [1, 20, 200, 400][$0 % 4], seed: UInt64($0)) })
    func salvageKeepsOnlyWhatWasWrittenReportsTheRestAndTheLogOpensAgain(writes: Int, seed: UInt64) async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let originals = Self.records(3_000)
            try await Self.makeLog(originals, at: directory)
            let damaged = try Self.damage(directory + "/data.mdb", writes: writes, seed: seed)

            let check = try LogCheck.check(directory: directory)
            let salvage = try LogSalvage.salvage(directory: directory, now: 1_800_000_000_000_000)

            // The damaged file is kept aside, byte for byte.
            #expect(salvage.keptAside == directory + "/corrupt-1800000000")
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: salvage.keptAside + "/data.mdb"))) == damaged)
            #expect(!FileManager.default.fileExists(atPath: directory + "/salvage-tmp"))

            let log = try EventLog.open(LogConfiguration(directory: directory))
            let contents = try readAll(log)
            // Nothing guessed: every record in the fresh log is the one written under its sequence.
            #expect(contents.corrupt.isEmpty)
            for stored in contents.records {
                #expect(stored.record == originals[Int(stored.sequence) - 1], "sequence \(stored.sequence)")
            }
            #expect(UInt64(contents.records.count) == salvage.recovered)
            // Every sequence up to the highest recovered is either recovered or reported lost.
            var accounted = Set(contents.records.map(\.sequence))
            for range in salvage.lost { for s in range.first...range.last { #expect(accounted.insert(s).inserted) } }
            let missing = Set(1..<(salvage.highestRecovered + 1)).subtracting(accounted)
            #expect(missing.isEmpty, "\(missing.count) sequences neither recovered nor reported lost, from \(missing.min() ?? 0); check: \(check.damagedPages.prefix(5)) unreachable \(check.unreachable)")
            #expect(salvage.recovered > 2_000, "\(writes) writes left \(salvage.recovered) records; check \(check.damagedPages.prefix(3))")
            if check.isHealthy { #expect(salvage.lost.isEmpty && salvage.recovered == 3_000) }
            // The new epoch starts past anything the old log may have held.
            #expect(salvage.nextSequence >= salvage.highestRecovered + LogSalvage.epochGap + 1)
            #expect(try await log.appendDurably(sampleRecord(9), priority: .critical) == salvage.nextSequence)
            log.close()
            #expect(try LogCheck.check(directory: directory).isHealthy)
        }
    }

    @Test func aMangledFirstMetaPageIsReadThroughTheSecond() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            try await Self.makeLog(Self.records(200), at: directory)
            let path = directory + "/data.mdb"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            for i in 0..<64 { bytes[i] = 0xA5 }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            // Meta page 1 holds an earlier transaction: the check reads that one, and the salvage
            // finds the later records in their leaf pages by their checksums.
            let report = try LogCheck.check(directory: directory)
            #expect(report.transaction > 0)
            let salvage = try LogSalvage.salvage(directory: directory, now: 1)
            #expect(salvage.recovered == 200)
            #expect(try readAll(try EventLog.openReadOnly(directory: directory)).records.map(\.record) == Self.records(200))
        }
    }

    @Test func aSalvageCutShortAfterTheFreshLogWasSyncedIsFinishedAtTheNextStart() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            try await Self.makeLog(Self.records(100), at: directory)
            _ = try LogSalvage.salvage(directory: directory, now: 1)
            // Replay the moment between "moved aside" and "moved into place".
            try FileManager.default.createDirectory(atPath: directory + "/salvage-tmp", withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: directory + "/data.mdb", toPath: directory + "/salvage-tmp/data.mdb")
            try Data("salvaged\n".utf8).write(to: URL(fileURLWithPath: directory + "/salvage-tmp/complete"))
            try LogSalvage.finishInterrupted(directory: directory)
            #expect(FileManager.default.fileExists(atPath: directory + "/data.mdb"))
            #expect(!FileManager.default.fileExists(atPath: directory + "/salvage-tmp"))
            #expect(try readAll(try EventLog.openReadOnly(directory: directory)).records.count == 100)
        }
    }
}

@Suite("Checking a healthy log over many commits, and salvaging twice")
struct SalvageEdgeTests {
    /// The free-page list's keys are transaction ids, ordered as integers: 256 comes after 255,
    /// which byte order would call damage. Hundreds of commits, some while a reader holds an old
    /// snapshot (so the list grows), must check clean at every step.
    @Test func aLogCommittedHundredsOfTimesChecksCleanThroughout() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            var configuration = LogConfiguration(directory: directory)
            configuration.sync = .none
            let log = try EventLog.open(configuration)
            for i in 0..<700 {
                if i % 300 == 10 {
                    // A reader held across 300 commits: the pages they free wait in the free-page
                    // list, one entry per transaction, so its keys cross a multiple of 256.
                    try log.read { _ in
                        for j in 0..<300 {
                            let done = DispatchSemaphore(value: 0)
                            try log.append(sampleRecord(100_000 + i * 1_000 + j), priority: .critical) { _ in done.signal() }
                            done.wait()
                        }
                    }
                }
                _ = try await log.appendDurably(sampleRecord(i), priority: .critical)
                if i % 50 == 49 {
                    let report = try LogCheck.check(directory: directory)
                    #expect(report.isHealthy, "after \(i + 1) commits: \(report.damagedPages.prefix(2))")
                }
            }
            log.close()
        }
    }

    @Test func aSecondSalvageNeverStartsBelowTheFirstOnesEpoch() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            try await SalvageTests.makeLog(SalvageTests.records(3_000), at: directory)
            let first = try LogSalvage.salvage(directory: directory, now: 1)
            // Lose the fresh log's last leaf: the second salvage recovers a lower highest sequence.
            let path = directory + "/data.mdb"
            let reader = try LMDBFileReader.open(path: path)
            let meta = try #require(reader.newestMeta())
            let events = try #require(reader.namedDatabases(meta) { _ in }.first { $0.name == "events" })
            var leaves: [UInt64] = []
            reader.walk(root: try #require(events.root), depth: events.depth, lastPage: meta.lastPage,
                        entry: { _, _, _, _ in }, damage: { _ in }, page: { number, _ in leaves.append(number) })
            let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            try file.seek(toOffset: try #require(leaves.last) * UInt64(reader.pageSize) + 12)
            try file.write(contentsOf: Data([0xF0, 0xFF]))
            try file.close()
            let second = try LogSalvage.salvage(directory: directory, now: 2)
            #expect(second.highestRecovered < first.highestRecovered || second.recovered < first.recovered)
            #expect(second.nextSequence >= first.nextSequence)
        }
    }
}
