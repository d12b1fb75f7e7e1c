import Foundation
import Testing

/// A node SIGKILLed while a ladder step is due comes back at the right step: the earliest overdue
/// step fires at once and every later one waits its full duration from then (issue 10's
/// decision), each exactly once, and each message is delivered once.
@Suite(.serialized) struct LadderCrashTests {
    func ladderSteps(_ dir: TemporaryDirectory) throws -> [String] {
        try ladderEvents(dir).map(\.step)
    }

    /// The DeadlineReached events: step and the (simulated) time it was logged.
    func ladderEvents(_ dir: TemporaryDirectory) throws -> [(step: String, timeMicroseconds: UInt64)] {
        try CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "deadline-reached", "--json"]).lines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let step = (object["payload"] as? [String: Any])?["step"] as? String,
                  let time = (object["time_us"] as? NSNumber)?.uint64Value else { return nil }
            return (step, time)
        }
    }

    @Test func aNodeKilledWhileAStepIsDueResumesWithoutSkippingOrRepeating() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        // At 60x, each minute of the ladder is a second of real time.
        let add = try CLI.run(["resident", "add", "room-9", "--interval", "1m", "--confirm", "1m", "--text-to-alarm", "1m",
                               "--alarm-to-notify", "1m", "--contact", "Luis=+34600000000", "--address", "+34600000999", "--data", dir.path])
        #expect(add.status == 0, "\(add.stderr)")

        // A notifier that accepts every message: since issue 10 a box without one delivers nothing
        // (messages stay pending, "no way to tell anyone").
        let config = dir.path + "/notify.yaml"
        try "notify:\n  command: /bin/sh\n  arguments: [\"-c\", \"cat > /dev/null\"]\n".write(toFile: config, atomically: true, encoding: .utf8)
        let (first, _) = try CLI.start(["run", "--data", dir.path, "--config", config, "--time-scale", "60", "--duration", "30s"])
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        #expect(eventually(seconds: 15) { (try? ladderSteps(dir)) == ["LADDER_STEP_PROMPT"] })
        usleep(300_000) // the text step is due about 0.7 s from now
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        usleep(2_500_000) // down for 2.5 min of simulated time: text and alarm become overdue

        // Text fires at once, the alarm a full minute later, contacts are told a minute after that.
        let second = try CLI.run(["run", "--data", dir.path, "--config", config, "--time-scale", "60", "--duration", "3500ms"])
        #expect(second.status == 0)
        let steps = try ladderEvents(dir)
        #expect(steps.map(\.step) == ["LADDER_STEP_PROMPT", "LADDER_STEP_TEXT", "LADDER_STEP_ALARM", "LADDER_STEP_NOTIFY"])
        if steps.count == 4 {
            #expect(steps[2].timeMicroseconds - steps[1].timeMicroseconds >= 60_000_000, "the alarm waited its full minute")
            #expect(steps[3].timeMicroseconds - steps[2].timeMicroseconds >= 60_000_000, "so did the notification")
        }

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
