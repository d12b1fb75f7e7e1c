import Foundation
import Testing
import VigilLog

/// A full file system (ENOSPC), for real: a size-limited tmpfs mounted for the test. Mounting needs
/// CAP_SYS_ADMIN (root on CI and in the VM); elsewhere the suite is skipped, and the VM test
/// `Tests/vm/disk-full.sh` covers the same on ext4 with the real node.
@Suite("A full disk", .enabled(if: SmallFileSystem.canMount, "mounting a tmpfs needs root"))
struct DiskFullTests {
    @Test func theWriterKeepsItsReserveBesideTheLog() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.diskReserveBytes = 3 << 20
            let log = try EventLog.open(config)
            _ = await appendAll(log, [sampleRecord(0)], priority: .critical)
            #expect(log.statistics.diskReserveBytes == 3 << 20)
            #expect(!log.statistics.diskFull)
            let size = try FileManager.default.attributesOfItem(atPath: config.directory + "/disk-reserve")[.size] as? Int
            #expect(size == 3 << 20)
            log.close()
        }
    }

    /// `leaving`: bytes left free by the filler. 0: every write fails with ENOSPC; a few KiB: the
    /// commit's write is cut short, which LMDB reports as EIO.
    @Test(arguments: [0, 8 << 10])
    func onAFullDiskScanHitsAreRefusedAndCriticalEventsStillStored(leaving: Int) async throws {
        try await SmallFileSystem.withMounted(megabytes: 12) { mount in
            var config = LogConfiguration(directory: mount + "/log")
            config.initialMapSize = 64 << 20
            config.diskReserveBytes = 2 << 20
            config.commitWindowMicroseconds = 500
            config.diskReserveRetryMicroseconds = 0 // retry at every commit once space is back
            let log = try EventLog.open(config)
            let before = await appendAll(log, (0..<200).map { sampleRecord($0) }, priority: .critical)
            let acknowledgedBefore = before.compactMap(\.successValue)
            #expect(acknowledgedBefore.count == 200)

            // Someone else fills the card.
            let filler = mount + "/filler"
            try SmallFileSystem.fill(filler, leaving: leaving)

            // Sheddable records until the disk is full: they are refused, never the log.
            var sheddableRefused = 0
            for round in 0..<40 {
                let results = await appendAll(log, (0..<500).map { sampleRecord(1_000 + round * 500 + $0, payloadBytes: 200) },
                                              priority: .sheddable)
                sheddableRefused += results.filter { $0.successValue == nil }.count
                if log.statistics.diskFull { break }
            }
            #expect(log.statistics.diskFull)
            #expect(sheddableRefused > 0)
            #expect(log.statistics.diskFullEpisodes == 1)
            #expect(log.statistics.diskReserveBytes == 0)
            #expect(log.statistics.writeErrors == 0)

            // Critical records still go in, from the reserve's room; sheddable ones stay refused.
            let critical = await appendAll(log, (0..<300).map { sampleRecord(50_000 + $0, payloadBytes: 100) }, priority: .critical)
            let acknowledgedCritical = critical.compactMap(\.successValue)
            #expect(acknowledgedCritical.count == 300)
            let shed = await appendAll(log, (0..<50).map { sampleRecord(60_000 + $0) }, priority: .sheddable)
            #expect(shed.allSatisfy { $0.successValue == nil })
            #expect(log.statistics.refusedDiskFull >= 50)

            // Space comes back: the reserve is taken again and sheddable records are accepted.
            try FileManager.default.removeItem(atPath: filler)
            let after = await appendAll(log, (0..<10).map { sampleRecord(70_000 + $0) }, priority: .sheddable)
            #expect(after.allSatisfy { $0.successValue != nil })
            #expect(!log.statistics.diskFull)
            #expect(log.statistics.diskReserveBytes == 2 << 20)
            log.close()

            // Everything acknowledged is there after a reopen.
            let reopened = try EventLog.openReadOnly(directory: config.directory)
            let stored = Set(try readAll(reopened).sequences)
            for sequence in acknowledgedBefore + acknowledgedCritical + after.compactMap(\.successValue) {
                #expect(stored.contains(sequence))
            }
        }
    }
}
