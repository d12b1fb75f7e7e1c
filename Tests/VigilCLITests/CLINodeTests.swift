import Foundation
import Testing

@Suite(.serialized) struct CLINodeTests {
    @Test func runThenStatusTailStatsAndReplayAgree() throws {
        let dir = TemporaryDirectory()
        let run = try CLI.run(["run", "--data", dir.path, "--duration", "1500ms"])
        #expect(run.status == 0, "\(run.stderr)")

        let status = try CLI.run(["status", "--data", dir.path, "--json"])
        #expect(status.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let state = try #require(object["state"] as? [String: Any])
        let applied = try #require(state["appliedThrough"] as? Int)
        #expect(applied > 3)

        let tail = try CLI.run(["log", "tail", "--data", dir.path, "-n", "3", "--json"])
        #expect(tail.status == 0)
        let records = try tail.lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(records.count == 3)
        #expect(records.compactMap { $0["seq"] as? Int } == [applied - 2, applied - 1, applied])
        #expect(records.last?["kind"] as? String == "node-stopped")

        // A window's hits are one scan-batch record, shown as the hits it holds.
        let hits = try CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "scan-batch", "--json"])
        #expect(!hits.lines.isEmpty && hits.lines.allSatisfy { $0.contains(#""kind":"scan-batch""#) && $0.contains(#""rssi_max""#) })

        let stats = try CLI.run(["log", "stats", "--data", dir.path, "--json"])
        let statsObject = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        #expect(statsObject["entries"] as? Int == applied)
        #expect(statsObject["unreadable"] as? Int == 0)

        let replay = try CLI.run(["replay", "--data", dir.path])
        #expect(replay.status == 0)
        #expect(replay.stdout.contains("OK: identical"))
    }

    @Test func simPressReachesARunningNodeAndSIGTERMStopsItCleanly() throws {
        let dir = TemporaryDirectory()
        let (node, _) = try CLI.start(["run", "--data", dir.path, "--duration", "60s"])
        defer { if node.isRunning { kill(node.processIdentifier, SIGKILL) } }
        #expect(eventually(seconds: 20) { FileManager.default.fileExists(atPath: dir.path + "/control.sock") })

        let press = try CLI.run(["sim", "press", "sos", "--hold", "300ms", "--data", dir.path])
        #expect(press.status == 0, "\(press.stderr)")
        // The release edge arrives 300 ms later; wait until both edges are in the log.
        #expect(eventually(seconds: 10) {
            ((try? CLI.run(["log", "tail", "--data", dir.path, "--kind", "button-input", "-n", "10"]))?.lines.count ?? 0) == 2
        })
        let live = try CLI.run(["status", "--data", dir.path, "--json"])
        #expect(live.stdout.contains(#""live":{"#), "a running node answers over its control socket")

        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()
        #expect(node.terminationStatus == 0)
        let last = try CLI.run(["log", "tail", "--data", dir.path, "-n", "1", "--json"])
        #expect(last.stdout.contains(#""kind":"node-stopped""#))
        #expect(last.stdout.contains(#""reason":"signal""#))
        #expect(try CLI.run(["replay", "--data", dir.path]).status == 0)
    }

    @Test func tailFollowPrintsEventsAsANodeCommitsThem() throws {
        let dir = TemporaryDirectory()
        // A log must exist before it can be followed.
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "300ms"]).status == 0)
        let firstRunLast = try #require(Int(try CLI.run(["log", "tail", "--data", dir.path, "-n", "1"]).stdout.split(separator: "\t").first ?? ""))
        let (follower, out) = try CLI.start(["log", "tail", "-f", "-n", "0", "--json", "--data", dir.path])
        defer { if follower.isRunning { kill(follower.processIdentifier, SIGKILL) } }

        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "500ms"]).status == 0)
        let reader = out.fileHandleForReading
        var text = ""
        #expect(eventually(seconds: 10) {
            text += String(decoding: reader.availableData, as: UTF8.self)
            return text.contains(#""kind":"node-stopped""#)
        })
        kill(follower.processIdentifier, SIGTERM)
        follower.waitUntilExit()
        let records = text.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
        let sequences = records.compactMap { $0["seq"] as? Int }
        // -n 0 prints nothing of the first run; -f then prints every later event once, in order
        // (the follower may start after the second node's first commits: "from now" is a race).
        #expect(!sequences.isEmpty)
        #expect(sequences.allSatisfy { $0 > firstRunLast })
        #expect(sequences == Array((sequences.first ?? 0)...(sequences.last ?? 0)))
        #expect(records.last?["kind"] as? String == "node-stopped")
    }
}
