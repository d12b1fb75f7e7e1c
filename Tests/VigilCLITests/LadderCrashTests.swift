import Foundation
import Testing

/// A node SIGKILLed while a ladder step is due comes back at the right step: the overdue steps
/// fire at once, in order, each exactly once, and each message is delivered once.
@Suite(.serialized) struct LadderCrashTests {
    func ladderSteps(_ dir: TemporaryDirectory) throws -> [String] {
        try CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "deadline-reached", "--json"]).lines.compactMap { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (object?["payload"] as? [String: Any])?["step"] as? String
        }
    }

    @Test func aNodeKilledWhileAStepIsDueResumesWithoutSkippingOrRepeating() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        // At 60x, each minute of the ladder is a second of real time.
        let add = try CLI.run(["resident", "add", "room-9", "--interval", "1m", "--confirm", "1m", "--text-to-alarm", "1m",
                               "--alarm-to-notify", "1m", "--contact", "Luis=+34600000000", "--data", dir.path])
        #expect(add.status == 0, "\(add.stderr)")

        let (first, _) = try CLI.start(["run", "--data", dir.path, "--time-scale", "60", "--duration", "30s"])
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        #expect(eventually(seconds: 15) { (try? ladderSteps(dir)) == ["LADDER_STEP_PROMPT"] })
        usleep(300_000) // the text step is due about 0.7 s from now
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        usleep(2_500_000) // down for 2.5 min of simulated time: text and alarm become overdue

        let second = try CLI.run(["run", "--data", dir.path, "--time-scale", "60", "--duration", "2s"])
        #expect(second.status == 0)
        #expect(try ladderSteps(dir) == ["LADDER_STEP_PROMPT", "LADDER_STEP_TEXT", "LADDER_STEP_ALARM", "LADDER_STEP_NOTIFY"])

        let attempts = try CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "outbox-attempt", "--json"]).lines
        let delivered = attempts.compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let payload = object["payload"] as? [String: Any], payload["delivered"] as? Bool == true else { return nil }
            return payload["entry"] as? String
        }
        #expect(delivered.sorted() == ["room-9/1/notify", "room-9/1/prompt", "room-9/1/text"])
        #expect(try CLI.run(["replay", "--data", dir.path]).status == 0)
        let why = try CLI.run(["why", "--data", dir.path])
        #expect(why.stdout.contains("emergency triggered for room-9"))
    }
}
