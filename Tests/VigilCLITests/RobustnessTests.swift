import Foundation
import Testing
import VigilSystem

/// Found by review: ways a running node could be killed or wedged from outside.
@Suite(.serialized) struct RobustnessTests {
    @Test func clientsThatHangUpOrFloodTheControlSocketCannotKillOrWedgeTheNode() throws {
        let dir = TemporaryDirectory("flood") // a socket address holds at most 107 bytes
        let (node, _) = try CLI.start(["run", "--data", dir.path, "--duration", "60s"])
        defer { if node.isRunning { kill(node.processIdentifier, SIGKILL) } }
        let socket = dir.path + "/control.sock"
        #expect(eventually(seconds: 20) { FileManager.default.fileExists(atPath: socket) })

        // Ask and hang up before the reply: once this was a SIGPIPE that ended the node.
        for _ in 0..<20 {
            let fd = try UnixSocket.connect(path: socket)
            // The node may already have dropped a connection over its limit: that is the point.
            try? fd.writeAll(Array(#"{"command":"status"}"#.utf8) + [0x0A])
        }
        // More idle connections than the node has slots, then gone.
        do {
            var idle: [Int32] = []
            for _ in 0..<24 { idle.append(try UnixSocket.connect(path: socket).rawValueLeaked()) }
            usleep(200_000)
            for fd in idle { close(fd) }
        }
        #expect(eventually(seconds: 10) {
            ((try? CLI.run(["status", "--json", "--data", dir.path]))?.stdout.contains(#""live":{"#)) == true
        }, "the node still answers")
        #expect(node.isRunning)
        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()
        #expect(node.terminationStatus == 0)
    }

    @Test func aNodeWhoseSocketPathIsTooLongStillRuns() throws {
        let dir = TemporaryDirectory(String(repeating: "deep", count: 30))
        let run = try CLI.run(["run", "--data", dir.path, "--duration", "500ms"])
        #expect(run.status == 0)
        #expect(run.stderr.contains("no control socket"))
        #expect(try CLI.run(["log", "tail", "-n", "1", "--data", dir.path]).stdout.contains("node-stopped"))
    }

    @Test func absurdDurationsInTheConfigurationAreErrorsNotCrashes() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let file = dir.path + "/vigil.yaml"
        try "alarms:\n  sos_expiry: 1e15s\n".write(toFile: file, atomically: true, encoding: .utf8)
        let r = try CLI.run(["run", "--config", file, "--data", dir.path, "--duration", "1s"])
        #expect(r.status == 78)
        #expect(r.stderr.contains("\(file):2:"))
    }

    @Test func replayUsesTheSettingsTheNodeRanWith() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let file = dir.path + "/vigil.yaml"
        try "notify:\n  retry_base: 7s\nprojections:\n  device_prune_after: 90s\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try CLI.run(["run", "--config", file, "--data", dir.path, "--duration", "300ms"]).status == 0)
        let replay = try CLI.run(["replay", "--data", dir.path])
        #expect(replay.status == 0, "\(replay.stdout)\(replay.stderr)")
        #expect(replay.stdout.contains("OK: identical"))
    }
}

extension FileDescriptor {
    /// For a test that keeps descriptors open in an array: hands over the raw descriptor.
    consuming func rawValueLeaked() -> Int32 {
        let fd = dup(rawValue)
        return fd
    }
}
