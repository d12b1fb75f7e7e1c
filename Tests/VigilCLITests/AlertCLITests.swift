import Foundation
import Testing

/// `vigil alert raise|cancel` against a running node: the node gives the alert this box's id,
/// puts it on the air, and refuses what it cannot send.
@Suite("vigil alert")
struct AlertCLITests {
    @Test func aHazardRaisedAtTheBoxGoesOnTheAirUntilItIsCancelled() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        #expect(try CLI.run(["radio", "keygen", "--out", dir.path + "/shelter.key"]).status == 0)
        // Without a node there is no radio to send it: refused, nothing logged.
        let early = try CLI.run(["alert", "raise", "flood", "--data", dir.path])
        #expect(early.status == 69 && early.stderr.contains("no node is running"))

        let (node, _) = try CLI.start(["run", "--data", dir.path, "--duration", "60s"])
        defer { if node.isRunning { kill(node.processIdentifier, SIGKILL) } }
        #expect(eventually(seconds: 20) { FileManager.default.fileExists(atPath: dir.path + "/control.sock") })

        let raised = try CLI.run(["alert", "raise", "road-hazard", "--at", "52.5163,13.3777", "--expires", "2h",
                                  "--text", "bridge closed", "--data", dir.path])
        #expect(raised.status == 0, "\(raised.stderr)")
        let nodeID = try String(contentsOfFile: dir.path + "/node-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(raised.stdout.contains("road-hazard alert \(nodeID):1 "), "\(raised.stdout)")
        let event = try CLI.run(["log", "tail", "--kind", "alert-raised", "--json", "--data", dir.path])
        #expect(event.stdout.contains(#""latitude_e7":525163000"#) && event.stdout.contains(#""severity":"SEVERITY_WARNING""#),
                "\(event.stdout)")
        #expect(eventually(seconds: 10) {
            ((try? CLI.run(["status", "--data", dir.path]))?.stdout.contains("on the air: \(nodeID):1 hops 0")) == true
        })

        // What cannot go on the air is refused with the reason, exit 65; bad arguments exit 64.
        let tooLong = try CLI.run(["alert", "raise", "fire", "--expires", "48h", "--data", dir.path])
        #expect(tooLong.status == 65 && tooLong.stderr.contains("max_lifetime"))
        #expect(try CLI.run(["alert", "raise", "info", "--at", "91,0", "--data", dir.path]).status == 64)
        let notOurs = try CLI.run(["alert", "cancel", "deadbeef:3", "--data", dir.path])
        #expect(notOurs.status == 65 && notOurs.stderr.contains("no active alert raised at this box"))

        let unanswerable = try CLI.run(["alert", "ack", "\(nodeID):1", "--data", dir.path])
        #expect(unanswerable.status == 65 && unanswerable.stderr.contains("no active call for help"), "our own hazard is not answered")

        let cancelled = try CLI.run(["alert", "cancel", "\(nodeID):1", "--data", dir.path])
        #expect(cancelled.status == 0, "\(cancelled.stderr)")
        #expect(try CLI.run(["alert", "cancel", "\(nodeID):1", "--data", dir.path]).status == 65, "only once")
        #expect(eventually(seconds: 10) {
            ((try? CLI.run(["status", "--data", dir.path]))?.stdout.contains("on the air: cancel \(nodeID):1 hops 0")) == true
        })
        // A hazard raised here has no SOS broadcast entries in the outbox.
        let status = try CLI.run(["status", "--json", "--data", dir.path])
        #expect(!status.stdout.contains("sos/\(nodeID):1"))
        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()
        #expect(node.terminationStatus == 0)
    }
}
