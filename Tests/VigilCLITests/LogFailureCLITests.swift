import Foundation
import Testing

/// A card that stops taking writes, for real: the node runs under a file-size limit (prlimit
/// RLIMIT_FSIZE), so once data.mdb would grow past it the kernel fails LMDB's write (EFBIG; LMDB
/// reports the short write as EIO), as a worn-out card fails them. The VM test
/// `Tests/vm/disk-eio.sh` does the same with EIO from a device-mapper error target.
@Suite("A log that stops taking writes", .enabled(if: FileManager.default.isExecutableFile(atPath: LimitedNode.prlimit)))
struct LogFailureCLITests {
    @Test func theButtonAndAlarmsWorkFromMemoryAndNothingAcknowledgedBeforeIsLost() throws {
        let dir = TemporaryDirectory()
        let config = try LimitedNode.configuration(in: dir.path)
        let node = try LimitedNode.start(config: config, fileSizeLimit: 200_000)
        defer { node.kill() }
        #expect(eventually(seconds: 20) { FileManager.default.fileExists(atPath: dir.path + "/d/control.sock") })

        #expect(try CLI.run(["resident", "add", "r1", "--config", config]).status == 0)
        let stored = try CLI.run(["checkin", "r1", "--config", config])
        #expect(stored.status == 0, "\(stored.stderr)")
        let storedSequence = stored.stdout.split(separator: " ").last.map { $0.filter(\.isNumber) } ?? ""
        #expect(!storedSequence.isEmpty, "\(stored.stdout)")

        // Scan hits fill the file up to the limit: the write fails and the node runs on.
        #expect(eventually(seconds: 60) { LimitedNode.live(config)?["fromMemory"] != nil })
        #expect(node.process.isRunning)

        // A check-in and an SOS still take effect: the red light and the buzzer come on.
        let unlogged = try CLI.run(["checkin", "r1", "--config", config])
        #expect(unlogged.status == 0 && unlogged.stderr.contains("held only in memory"), "\(unlogged.stderr)")
        #expect(try CLI.run(["sim", "press", "sos", "--config", config]).status == 0)
        #expect(eventually(seconds: 20) {
            let outputs = LimitedNode.live(config)?["outputs"] as? [String: Bool]
            return outputs?["red"] == true && outputs?["buzzer"] == true
        })
        let status = try CLI.run(["status", "--config", config])
        #expect(status.stdout.contains("log FAILED since") && status.stdout.contains("running from memory"), "\(status.stdout)")
        let why = try CLI.run(["why", "--config", config])
        #expect(why.stdout.contains("the card stopped taking writes"), "\(why.stdout)")

        // It holds what a restart would lose, so it would stay up past log.failed_restart_after
        // (`withNothingHeld…` below shows the exit when nothing is held).
        let memory = LimitedNode.live(config)?["fromMemory"] as? [String: Any]
        #expect((memory?["critical"] as? Int ?? 0) >= 2, "\(String(describing: memory))")
        #expect(node.process.isRunning)

        // An orderly stop does not wait for a durability that cannot come.
        kill(node.process.processIdentifier, SIGTERM)
        #expect(eventually(seconds: 15) { !node.process.isRunning })

        // What was acknowledged before the failure is on the card, and the card reads sound.
        #expect(try CLI.run(["log", "check", "--config", config]).status == 0)
        let checkIns = try CLI.run(["log", "tail", "--kind", "check-in", "--config", config])
        #expect(checkIns.lines.contains { $0.hasPrefix(storedSequence + "\t") }, "\(checkIns.stdout)")
        #expect(checkIns.lines.count == 1, "the check-in taken in memory is not on the card: \(checkIns.stdout)")
    }

    /// Issue 27: the alarm centre hears that the box's card failed (Contact ID 1300, "running from
    /// memory"), once, although the log that would hold the report takes no writes.
    @Test func theAlarmCentreHearsThatTheCardFailed() throws {
        let dir = TemporaryDirectory()
        let centre = try ReceiverProcess(account: "1234")
        defer { _ = centre.stop() }
        let config = try LimitedNode.configuration(in: dir.path, extra: """
            calls:
              test_every: 0s
            arc:
              receivers: ["127.0.0.1:\(centre.port)"]
              account: "1234"
              receiver: "1"
            """)
        let node = try LimitedNode.start(config: config, fileSizeLimit: 200_000)
        defer { node.kill() }
        #expect(eventually(seconds: 60) { LimitedNode.live(config)?["fromMemory"] != nil })
        let event = try #require(centre.next("event", timeout: 30), "the centre heard the trouble")
        #expect(event["event_type"] as? String == "300" && event["event_qualifier"] as? String == "1", "\(event)")
        #expect(eventually(seconds: 20) {
            ((LimitedNode.live(config)?["alarmCentre"] as? [String: Any])?["runningFromMemoryReported"] as? Bool) == true
        })
        #expect(centre.next("event", timeout: 3) == nil, "once per run")
    }

    @Test func withNothingHeldOnlyInMemoryTheNodeExitsSoSystemdTriesTheCardAgain() throws {
        let dir = TemporaryDirectory()
        let config = try LimitedNode.configuration(in: dir.path, restartAfter: "2s")
        // A log that already fills the limit: the node's first commit fails.
        let first = try LimitedNode.start(config: config, fileSizeLimit: nil)
        #expect(eventually(seconds: 20) { FileManager.default.fileExists(atPath: dir.path + "/d/control.sock") })
        #expect(eventually(seconds: 60) { (LimitedNode.fileSize(dir.path + "/d/data.mdb") ?? 0) > 160_000 })
        kill(first.process.processIdentifier, SIGTERM)
        first.process.waitUntilExit()

        let node = try LimitedNode.start(config: config, fileSizeLimit: 150_000)
        defer { node.kill() }
        #expect(eventually(seconds: 30) { !node.process.isRunning }, "the node exits after log.failed_restart_after")
        #expect(node.process.terminationStatus != 0)
        let stderr = String(decoding: node.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.contains("running from memory") && stderr.contains("mdb_txn_commit"), "\(stderr)")
        #expect(try CLI.run(["log", "check", "--config", config]).status == 0)
    }
}

/// A card the kernel turned read-only (ext4's errors=remount-ro after an I/O error, or a card at
/// the end of its life) before the node starts: a real read-only tmpfs mount.
@Suite("A log on a read-only card", .enabled(if: SmallFileSystem.canMount, "mounting a tmpfs needs root"))
struct ReadOnlyCardCLITests {
    @Test func theNodeStartsFromMemoryAndNeverExitsForARestartThatCannotHelp() throws {
        try SmallFileSystem.withMounted(megabytes: 64) { mount in
            let config = try LimitedNode.configuration(in: mount, restartAfter: "2s")
            // The usual way: the card fails under a running node, which dies (here: SIGKILL), so
            // the markers of an unclean stop are left behind where they cannot be replaced.
            let first = try LimitedNode.start(config: config, fileSizeLimit: nil)
            #expect(eventually(seconds: 20) { FileManager.default.fileExists(atPath: mount + "/d/control.sock") })
            #expect(try CLI.run(["resident", "add", "r1", "--config", config]).status == 0)
            kill(first.process.processIdentifier, SIGKILL)
            first.process.waitUntilExit()
            #expect(FileManager.default.fileExists(atPath: mount + "/d/log-check-pending"))
            try SmallFileSystem.makeReadOnly(mount)

            let node = try LimitedNode.start(config: config, fileSizeLimit: nil)
            defer { node.kill() }
            // Past log.failed_restart_after (2 s) it is still up: a restart would find the card
            // read-only again, with the button dead while it tries.
            #expect(!eventually(seconds: 6) { !node.process.isRunning }, "the node must run on a read-only card")
            // The log still reads, for people, without its lock file.
            let status = try CLI.run(["status", "--config", config])
            #expect(status.status == 0 && status.stdout.contains("resident-enrolled 1"), "\(status.stdout) \(status.stderr)")
            #expect(try CLI.run(["log", "check", "--config", config]).status == 0)
            kill(node.process.processIdentifier, SIGTERM)
            #expect(eventually(seconds: 15) { !node.process.isRunning })
            let stderr = String(decoding: node.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(stderr.contains("read-only") && stderr.contains("running from memory"), "\(stderr)")
        }
    }
}

/// `vigil run` under prlimit, with a crowd on the simulated radio so the log grows fast.
struct LimitedNode {
    static let prlimit = "/usr/bin/prlimit"
    let process: TestProcess
    let stderr: Pipe

    func kill() { if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) } }

    /// `restartAfter`: log.failed_restart_after (short only where the test waits for the exit).
    static func configuration(in directory: String, restartAfter: String = "60s", extra: String = "") throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/vigil.yaml"
        try """
        data: \(directory)/d
        simulation:
          advertisers: 300
          min_interval: 100ms
          max_interval: 300ms
        log:
          disk_reserve: 0
          failed_restart_after: \(restartAfter)
        \(extra)
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func start(config: String, fileSizeLimit: Int?) throws -> LimitedNode {
        let process = TestProcess()
        if let limit = fileSizeLimit {
            process.executableURL = URL(fileURLWithPath: prlimit)
            process.arguments = ["--fsize=\(limit):\(limit)", CLI.binary, "run", "--config", config]
        } else {
            process.executableURL = URL(fileURLWithPath: CLI.binary)
            process.arguments = ["run", "--config", config]
        }
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        return LimitedNode(process: process, stderr: err)
    }

    /// The running node's live status (`vigil status --json`'s "live"), or nil.
    static func live(_ config: String) -> [String: Any]? {
        guard let result = try? CLI.run(["status", "--json", "--config", config]), result.status == 0,
              let object = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else { return nil }
        return object["live"] as? [String: Any]
    }

    static func fileSize(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
    }
}
