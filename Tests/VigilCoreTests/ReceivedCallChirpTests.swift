import Testing
import VigilCore
import VigilEvents

/// Issue 10 item 9: a call for help heard from another box chirps until answered or silenced.
@Suite("Received call chirp")
struct ReceivedCallChirpTests {
    static func running() -> LadderHarness {
        var h = LadderHarness()
        h.append(nodeStarted(id: 0xB0C5))
        h.append(radio(.on))
        return h
    }

    static func answer(_ origin: UInt64, _ counter: UInt32, heardFrom: UInt64 = 0) -> EventBody {
        var a = AlertAcknowledged()
        a.id = AlertID(origin: origin, counter: counter)
        a.severity = .critical
        a.heardFrom = heardFrom
        return .alertAcknowledged(a)
    }

    /// Fails before issue 10: the buzzer stayed off for a received SOS (blue only).
    @Test func aReceivedSOSChirpsUntilItIsAnswered() {
        var h = Self.running()
        let sos = h.append(.alertReceived(alert(origin: 0xFACE, counter: 7, hops: 1)))
        var out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.buzzer]?.pattern == OutputPolicy.callChirp)
        #expect(out[.buzzer]?.reasons.map(\.sequences) == [[sos.sequence]])
        #expect(out[.blue]?.pattern == .on)
        #expect(OutputPolicy.soundingAlarms(h.state) == ["received:\(AlertID(origin: 0xFACE, counter: 7).text)"])
        // A short press answers it rather than silencing it: no alarm of this box's own sounds.
        #expect(OutputPolicy.soundingOwnAlarms(h.state).isEmpty)

        h.append(Self.answer(0xFACE, 7)) // answered (here, or by another box)
        out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.buzzer]?.pattern == .off)
        #expect(out[.blue]?.pattern == OutputPolicy.acknowledgedPulse)
    }

    @Test func vigilAckSilencesTheChirpButNotTheBlueLight() {
        var h = Self.running()
        h.append(.alertReceived(alert(origin: 0xFACE, counter: 7, kind: .medical)))
        h.append(LadderEvents.acknowledged(by: "cli"))
        #expect(h.state.alarms.silenced == ["received:\(AlertID(origin: 0xFACE, counter: 7).text)"])
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.buzzer]?.pattern == .off)
        #expect(out[.blue]?.pattern == .on, "still unanswered: blue stays on")
        #expect(h.state.alarms.silenced == (try? Projections.decoded(h.state.encoded()))?.alarms.silenced)
        // Answered later: the silenced key is forgotten.
        h.append(Self.answer(0xFACE, 7, heardFrom: 0xBEEF))
        #expect(h.state.alarms.silenced.isEmpty)
        // A new call sounds again.
        h.append(.alertReceived(alert(origin: 0xFACE, counter: 8)))
        #expect(OutputPolicy.decide(h.state, running: true)[.buzzer]?.pattern == OutputPolicy.callChirp)
    }

    @Test func warningsAndOwnAlarmsDoNotUseTheCallChirp() {
        var h = Self.running()
        h.append(.alertReceived(alert(origin: 0xFACE, counter: 1, kind: .flood)))
        #expect(OutputPolicy.decide(h.state, running: true)[.buzzer]?.pattern == .off, "warnings are heeded, not answered")
        h.append(.alertReceived(alert(origin: 0xFACE, counter: 2)))
        h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1)))
        // This box's own SOS outranks the chirp; a short press silences the own SOS first.
        #expect(OutputPolicy.decide(h.state, running: true)[.buzzer]?.pattern == OutputPolicy.sosTone)
        #expect(OutputPolicy.soundingOwnAlarms(h.state) == ["sos:\(AlertID(origin: 0xB0C5, counter: 1).text)"])
    }
}
