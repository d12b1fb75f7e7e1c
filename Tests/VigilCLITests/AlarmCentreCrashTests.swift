import Foundation
import Testing
import VigilTestSupport

/// Issue 27, item 8: a node SIGKILLed between sending a call for help to the alarm centre and the
/// centre's ACK sends it again after the restart — to the centre that is up by then, with the
/// same DC-09 sequence number (a repeat the centre can recognise), and records it once.
@Suite(.serialized) struct AlarmCentreCrashTests {
    static func configuration(_ dir: TemporaryDirectory, port: Int) throws -> String {
        let path = dir.path + "/arc-\(port).yaml"
        try """
            notify:
              command: /bin/sh
              arguments: ["-c", "cat > /dev/null"]
              staff: ["+34600111222"]
            calls:
              test_every: 0s
            arc:
              receivers: ["127.0.0.1:\(port)"]
              account: "1234"
              receiver: "1"
              reply_timeout: 60s
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The DC-09 sequence number of a frame as the centre printed it.
    static func sequence(ofFrame line: String) -> String? {
        guard let range = line.range(of: "\"ADM-CID\"") else { return nil }
        let digits = line[range.upperBound...].prefix(4)
        return digits.count == 4 && digits.allSatisfy(\.isNumber) ? String(digits) : nil
    }

    @Test func aKillBeforeTheCentresACKSendsTheSameReportAgainOnceAfterTheRestart() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        // The first centre takes the frame and never answers.
        let silent = try ReceiverProcess(account: "1234", mode: "silent")
        let (first, _) = try CLI.start(["run", "--data", dir.path, "--config", try Self.configuration(dir, port: silent.port), "--duration", "60s"])
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        #expect(eventually(seconds: 15) { (try? CLI.run(["sim", "press", "sos", "--data", dir.path]).status) == 0 })
        let frame = try #require(silent.next("frame", timeout: 20), "the silent centre got the SOS")
        let sent = try #require(Self.sequence(ofFrame: frame["line"] as? String ?? ""), "\(frame)")
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        _ = silent.stop()

        // Back up with a centre that answers: the report goes again, same number, once.
        let centre = try ReceiverProcess(account: "1234")
        let (second, _) = try CLI.start(["run", "--data", dir.path, "--config", try Self.configuration(dir, port: centre.port), "--duration", "60s"])
        defer { if second.isRunning { kill(second.processIdentifier, SIGKILL) } }
        let event = try #require(centre.next("event", timeout: 30), "the working centre got the report after the restart")
        #expect(event["event_type"] as? String == "120")
        #expect(event["sequence"] as? String == sent, "the same DC-09 sequence number as before the kill")
        let status = try CLI.run(["status", "--data", dir.path])
        #expect(status.stdout.contains("alarm centre: 127.0.0.1:\(centre.port) (UNENCRYPTED: set arc.key)"), "\(status.stdout)")
        kill(second.processIdentifier, SIGTERM)
        second.waitUntilExit()
        _ = centre.stop()

        let attempts = try CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "outbox-attempt", "--json"]).lines
            .compactMap { line -> [String: Any]? in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["payload"] as? [String: Any]
            }
            .filter { ($0["notifier"] as? String ?? "").hasPrefix("arc") }
        #expect(attempts.count == 1, "the killed attempt is not recorded; the one after the restart is: \(attempts)")
        #expect(attempts.first?["delivered"] as? Bool == true)
        #expect(try CLI.run(["replay", "--data", dir.path]).status == 0)
    }
}
