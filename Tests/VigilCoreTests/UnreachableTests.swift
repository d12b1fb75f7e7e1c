import Testing
import VigilCore
import VigilEvents

private let second = LadderHarness.second
private let minute = LadderHarness.minute
private let hour = LadderHarness.hour

private func attempt(_ entry: String, _ n: UInt32, notifier: String, error: String) -> EventBody {
    var a = OutboxAttempt()
    a.entry = entry
    a.attempt = n
    a.delivered = false
    a.notifier = notifier
    a.error = error
    return .outboxAttempt(a)
}

/// Issue 10 item 5: a box that can reach nobody says so ("no way to tell anyone" on amber).
@Suite("No way to tell anyone")
struct UnreachableTests {
    /// A resident's ladder reached the text, then the resident checked in: two messages pending,
    /// nothing else on amber.
    static func twoPending() -> LadderHarness {
        var h = LadderHarness()
        h.append(nodeStarted(id: 0xB0C5))
        h.append(radio(.on))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        h.run(until: h.now + 4 * hour + 20 * minute)
        h.append(checkIn("r1"))
        return h
    }

    /// Fails before issue 10: nothing on amber said messages could not reach anyone.
    @Test func noNotifierShowsAtOnceWithItsOwnPatternAndReasons() {
        var h = Self.twoPending()
        #expect(OutputPolicy.decide(h.state, running: true)[.amber]?.pattern == .off)
        let a = h.append(attempt("r1/1/prompt", 1, notifier: "none", error: "no notify.command is configured"))
        #expect(h.outbox.pending.map(\.id).prefix(2) == ["r1/1/prompt", "r1/1/text"], "still pending")
        #expect(h.outbox.unreachable(h.outbox.entries["r1/1/prompt"]!) == .noNotifier)
        let amber = OutputPolicy.decide(h.state, running: true)[.amber]
        #expect(amber?.pattern == OutputPolicy.unreachableBlink)
        #expect(amber?.reasons.count == 1)
        #expect(amber?.reasons.first?.text.contains("no way to tell anyone") == true)
        #expect(amber?.reasons.first?.text.contains("r1/1/prompt") == true)
        #expect(amber?.reasons.first?.sequences.last == a.sequence)
        // Checkpoint + tail = replay.
        let restored = try? Projections.decoded(h.state.encoded())
        #expect(restored.map { OutputPolicy.decide($0, running: true) } == OutputPolicy.decide(h.state, running: true))
    }

    @Test func failuresCountOnlyOnceTheyHaveLastedTheConfiguredTime() {
        var h = Self.twoPending()
        h.state.outbox.unreachableAfterMicroseconds = 15 * minute
        h.append(attempt("r1/1/text", 1, notifier: "command", error: "modem busy"))
        h.run(until: h.now + 14 * minute)
        h.append(attempt("r1/1/text", 2, notifier: "command", error: "modem busy"))
        #expect(h.outbox.unreachableEntries.isEmpty, "14 minutes of failures: not yet")
        #expect(OutputPolicy.decide(h.state, running: true)[.amber]?.pattern == .off)
        h.run(until: h.now + 1 * minute)
        h.append(attempt("r1/1/text", 3, notifier: "command", error: "modem busy"))
        #expect(h.outbox.unreachableEntries.map(\.entry.id) == ["r1/1/text"])
        let amber = OutputPolicy.decide(h.state, running: true)[.amber]
        #expect(amber?.pattern == OutputPolicy.unreachableBlink)
        #expect(amber?.reasons.first?.text.contains("modem busy") == true)
        // Delivered at last: amber goes off.
        h.append(LadderEvents.attempt("r1/1/text", 4, delivered: true))
        #expect(OutputPolicy.decide(h.state, running: true)[.amber]?.pattern == .off)
    }

    @Test func heldButtonAndPromptOutrankItAndItOutranksTheRadio() {
        var h = Self.twoPending()
        h.append(attempt("r1/1/prompt", 1, notifier: "none", error: "none"))
        h.append(radio(.off))
        #expect(OutputPolicy.decide(h.state, running: true)[.amber]?.pattern == OutputPolicy.unreachableBlink)
        h.append(button(edge: .falling))
        #expect(OutputPolicy.decide(h.state, running: true)[.amber]?.pattern == OutputPolicy.heldBlink)
        h.append(button(edge: .rising))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r2", interval: 1 * hour)))
        h.run(until: h.now + 1 * hour + 1 * minute)
        #expect(OutputPolicy.decide(h.state, running: true)[.amber]?.pattern == OutputPolicy.promptBlink)
    }

    @Test func everyAmberPatternIsDistinct() {
        let patterns: [OutputPattern] = [OutputPolicy.cancelHoldBlink, OutputPolicy.heldBlink, OutputPolicy.promptBlink,
                                         OutputPolicy.unreachableBlink, .on]
        #expect(Set(patterns.map(\.description)).count == patterns.count)
        let buzzer: [OutputPattern] = [OutputPolicy.loudAlarm, OutputPolicy.sosTone, OutputPolicy.callChirp, OutputPolicy.chirp]
        #expect(Set(buzzer.map(\.description)).count == buzzer.count)
    }
}
