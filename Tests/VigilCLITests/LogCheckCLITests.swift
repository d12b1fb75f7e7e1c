import Foundation
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
}
