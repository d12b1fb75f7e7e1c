import Foundation
import Synchronization
import Testing
import VigilLog

/// `vigil log check` and `vigil log salvage`, as a person at a box uses them (issue 12).
@Suite struct LogCheckCLITests {
    /// A node's log with a few hundred scan hits and its lifecycle events.
    static func nodeLog() throws -> TemporaryDirectory {
        let dir = TemporaryDirectory()
        let run = try CLI.run(["run", "--data", dir.path, "--duration", "2s"])
        #expect(run.status == 0, "\(run.stderr)")
        return dir
    }

    @Test func aSoundLogChecksCleanAndSalvageSaysThereIsNothingToDo() throws {
        let dir = try Self.nodeLog()
        let check = try CLI.run(["log", "check", "--data", dir.path])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("sound"))
        let json = try CLI.run(["log", "check", "--data", dir.path, "--json"])
        let report = try JSONDecoder().decode(LogCheckReport.self, from: Data(json.stdout.utf8))
        #expect(report.isHealthy && report.records > 3)
        let salvage = try CLI.run(["log", "salvage", "--data", dir.path])
        #expect(salvage.status == 0)
        #expect(salvage.stdout.contains("nothing to salvage"))
    }

    @Test func aDamagedPageIsReportedAndSalvagedAndStatusSaysSo() throws {
        let dir = try Self.nodeLog()
        let before = try CLI.run(["log", "tail", "--data", dir.path, "-n", "100000", "--json"]).lines.count
        // Mangle the events tree's root page: LMDB would follow wild offsets from it.
        let path = dir.path + "/data.mdb"
        let reader = try LMDBFileReader.open(path: path)
        let meta = try #require(reader.newestMeta())
        let events = try #require(reader.namedDatabases(meta) { _ in }.first { $0.name == "events" })
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try file.seek(toOffset: try #require(events.root) * UInt64(reader.pageSize) + 12)
        try file.write(contentsOf: Data([0xF0, 0xFF]))
        try file.close()

        let check = try CLI.run(["log", "check", "--data", dir.path])
        #expect(check.status == 3)
        #expect(check.stderr.contains("DAMAGED"))
        let salvage = try CLI.run(["log", "salvage", "--data", dir.path, "--json"])
        #expect(salvage.status == 0, "\(salvage.stderr)")
        let report = try JSONDecoder().decode(SalvageReport.self, from: Data(salvage.stdout.utf8))
        #expect(FileManager.default.fileExists(atPath: report.keptAside + "/data.mdb"))
        #expect(try CLI.run(["log", "check", "--data", dir.path]).status == 0)
        // A small log's root is its only leaf: what older copies of it hold is found again by
        // checksum, the rest is reported; nothing else is in the fresh log but the salvage event.
        let after = try CLI.run(["log", "tail", "--data", dir.path, "-n", "100000", "--json"]).lines
        #expect(after.count == Int(report.recovered) + 1)
        #expect(Int(report.recovered + report.lostCount) <= before)
        #expect(report.tailUnknown || report.recovered + report.lostCount == UInt64(before))
        #expect(after.last?.contains("\"log-salvaged\"") == true)
        let status = try CLI.run(["status", "--data", dir.path])
        #expect(status.stdout.contains("log SALVAGED once"), "\(status.stdout)")
    }

    /// The node checks its own log while it writes, and stops to salvage on a "damaged" verdict:
    /// a check racing a writer that commits without pause, growing the file, must find it sound
    /// every time (a radio VM test once read a pinned snapshot's meta page as the writer replaced
    /// it, and stopped a sound node).
    @Test func aLogWrittenWithoutPauseChecksSoundEveryTimeFromAnotherProcess() throws {
        let dir = TemporaryDirectory()
        var configuration = LogConfiguration(directory: dir.path)
        configuration.sync = .none
        // A commit every half millisecond, ten times the node's pace: the meta pages are rewritten
        // thousands of times a second. (Not faster: while a check pins a snapshot the writer cannot
        // reuse pages, and at tens of thousands of commits a second the file grows by gigabytes.)
        configuration.commitWindowMicroseconds = 500
        let log = try EventLog.open(configuration)
        let stop = Mutex(false)
        let finished = DispatchSemaphore(value: 0)
        let writer = Thread {
            defer { finished.signal() }
            var i = 0
            while !stop.withLock({ $0 }) {
                let done = DispatchSemaphore(value: 0)
                let record = LogRecord(kind: 1, timeMicroseconds: 1_767_225_600_000_000 + UInt64(i),
                                       payload: [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: i % 53 == 0 ? 6_000 : 40))
                do { try log.append(record, priority: .critical) { _ in done.signal() } } catch { return }
                done.wait()
                i += 1
            }
        }
        writer.start()
        defer {
            stop.withLock { $0 = true }
            finished.wait()
            log.close()
        }
        for round in 0..<60 {
            let check = try CLI.run(["log", "check", "--data", dir.path, "--json"])
            #expect(check.status == 0, "check \(round): \(check.stderr)")
            let report = try JSONDecoder().decode(LogCheckReport.self, from: Data(check.stdout.utf8))
            #expect(report.pinned && report.isHealthy, "check \(round): \(report.damagedPages.prefix(2))")
            #expect(report.unconfirmedDamage.isEmpty, "check \(round) needed a second look: \(report.unconfirmedDamage.prefix(2))")
        }
        let written = try log.read { txn in try txn.lastSequence() }
        #expect(written > 500, "the writer kept writing: \(written) records")
    }
}
