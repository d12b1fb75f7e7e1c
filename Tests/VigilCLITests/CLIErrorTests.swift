import Foundation
import Testing

@Suite struct CLIErrorTests {
    @Test func missingDataDirectoryIsOneClearLineAndANonZeroExit() throws {
        let r = try CLI.run(["status", "--data", "/tmp/vigil-does-not-exist-\(UInt32.random(in: 0...UInt32.max))"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("no event log in"))
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func configErrorsNameTheFileAndLine() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let file = dir.path + "/bad.yaml"
        try "radio:\n  scan_window: 2s\nlog:\n  sync: sometimes\n".write(toFile: file, atomically: true, encoding: .utf8)
        let r = try CLI.run(["run", "--config", file, "--duration", "1s"])
        #expect(r.status == 78)
        #expect(r.stderr.contains("\(file):4:"))
        #expect(r.stderr.contains("log.sync"))

        try "radio:\n  scan_windw: 2s\n".write(toFile: file, atomically: true, encoding: .utf8)
        let typo = try CLI.run(["run", "--config", file])
        #expect(typo.status == 78)
        #expect(typo.stderr.contains("\(file):2: unknown setting radio.scan_windw"))
    }

    @Test func aCorruptEnvironmentIsReportedNotCrashedOnAndANodeSetsItAside() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let garbage = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: dir.path + "/data.mdb"))
        for command in [["status"], ["log", "tail"], ["log", "stats"], ["replay"]] {
            let r = try CLI.run(command + ["--data", dir.path])
            #expect(r.status == 1, "\(command)")
            #expect(r.stderr.contains("corrupt"), "\(command): \(r.stderr)")
        }
        // `vigil log check` says so, without crashing.
        let check = try CLI.run(["log", "check", "--data", dir.path])
        #expect(check.status == 3 || check.status == 1, "\(check.stderr)")
        // A node moves it aside, untouched, and runs on a fresh log (the button must work).
        let run = try CLI.run(["run", "--data", dir.path, "--duration", "1s"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("salvaged"))
        let aside = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("corrupt-") }
        #expect(aside.count == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + (aside.first ?? "") + "/data.mdb")) == garbage,
                "nothing stored is touched")
        let tail = try CLI.run(["log", "tail", "--data", dir.path, "-n", "100000"])
        #expect(tail.stdout.contains("log-salvaged"))
    }

    @Test func badArgumentsAreRefused() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "soon"]).status == 64)
        #expect(try CLI.run(["log", "tail", "--data", dir.path, "--kind", "nonsense"]).status != 0)
        let press = try CLI.run(["sim", "press", "sos", "--data", dir.path])
        #expect(press.status != 0)
        #expect(press.stderr.contains("no node is running"))
    }
}
