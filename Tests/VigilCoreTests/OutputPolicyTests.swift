import Testing
import VigilCore
import VigilEvents

private let minute = LadderHarness.minute
private let hour = LadderHarness.hour

private typealias Decisions = [OutputLine: OutputDecision]

private extension Decisions {
    func pattern(_ line: OutputLine) -> OutputPattern? { self[line]?.pattern }
    func sequences(_ line: OutputLine) -> [[UInt64]] { self[line]?.reasons.map(\.sequences) ?? [] }
}

@Suite("Output policy")
struct OutputPolicyTests {
    static func running() -> (LadderHarness, radioOn: Event) {
        var h = LadderHarness()
        h.append(nodeStarted(id: 0xB0C5))
        let on = h.append(radio(.on))
        return (h, on)
    }

    @Test func everyLineHasADecision() {
        let (h, _) = Self.running()
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(Set(out.keys) == Set(OutputLine.allCases))
    }

    @Test func nothingGoingOnMeansGreenOnly() {
        let (h, on) = Self.running()
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.green) == .on)
        #expect(out.sequences(.green) == [[on.sequence]])
        #expect(out[.green]?.reasons.first?.text.contains("hci0") == true)
        for line in [OutputLine.red, .amber, .blue, .buzzer] {
            #expect(out[line] == OutputDecision(pattern: .off, reasons: []), "\(line)")
        }
    }

    @Test func aStoppedNodeDrivesNothing() {
        var (h, _) = Self.running()
        h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1)))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        h.run(until: h.now + 5 * hour)
        let out = OutputPolicy.decide(h.state, running: false)
        #expect(out.values.allSatisfy { $0 == OutputDecision(pattern: .off, reasons: []) })
        #expect(out.count == OutputLine.allCases.count)
    }

    @Test func theRadioNotOnShowsAmber() {
        var h = LadderHarness()
        #expect(OutputPolicy.decide(h.state, running: true).pattern(.amber) == .on)
        #expect(OutputPolicy.decide(h.state, running: true).sequences(.amber) == [[]]) // no event behind "unknown"
        let off = h.append(radio(.off))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.amber) == .on)
        #expect(out.sequences(.amber) == [[off.sequence]])
        #expect(out.pattern(.green) == .off)
    }

    @Test func anSOSRaisedHere() {
        var (h, _) = Self.running()
        let sos = h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1)))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.red) == .on)
        #expect(out.sequences(.red) == [[sos.sequence]])
        #expect(out.pattern(.buzzer) == OutputPolicy.sosTone)
        #expect(out.sequences(.buzzer) == [[sos.sequence]])
        #expect(out.pattern(.blue) == .off)
        #expect(OutputPolicy.soundingAlarms(h.state) == ["sos:\(AlertID(origin: 0xB0C5, counter: 1).text)"])

        // Cancelled: red and buzzer off.
        h.append(cancellation(origin: 0xB0C5, counter: 1, by: 0xB0C5))
        let after = OutputPolicy.decide(h.state, running: true)
        #expect(after.pattern(.red) == .off)
        #expect(after.pattern(.buzzer) == .off)
    }

    @Test func aMedicalAlertRaisedHereIsNotAnSOS() {
        var (h, _) = Self.running()
        h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1, kind: .medical)))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.red) == .off)
        #expect(out.pattern(.buzzer) == .off)
    }

    @Test func aReceivedAlert() {
        var (h, _) = Self.running()
        let first = h.append(.alertReceived(alert(origin: 0xFACE, counter: 7, kind: .flood, hops: 3)))
        h.append(.alertReceived(alert(origin: 0xFACE, counter: 7, kind: .flood, hops: 1))) // a duplicate
        let second = h.append(.alertReceived(alert(origin: 0xBEEF, counter: 1, hops: 0)))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.blue) == .on)
        #expect(out.sequences(.blue) == [[first.sequence], [second.sequence]]) // oldest first, duplicates dropped
        // Received alerts never light red here. Since issue 10 the unanswered call for help (the
        // SOS, not the flood warning) chirps; it is not one of this box's own alarms.
        #expect(out.pattern(.red) == .off)
        #expect(out.pattern(.buzzer) == OutputPolicy.callChirp)
        #expect(out.sequences(.buzzer) == [[second.sequence]])
        #expect(OutputPolicy.soundingAlarms(h.state) == ["received:\(AlertID(origin: 0xBEEF, counter: 1).text)"])
        #expect(OutputPolicy.soundingOwnAlarms(h.state).isEmpty)
    }

    @Test func anExpiredReceivedAlertTurnsBlueOff() {
        var (h, _) = Self.running()
        h.append(.alertReceived(alert(origin: 0xFACE, counter: 7, expiresAt: Double(h.now + 10 * minute) / 1e6)))
        #expect(OutputPolicy.decide(h.state, running: true).pattern(.blue) == .on)
        h.run(until: h.now + 11 * minute)
        h.append(radio(.on)) // any later event moves "now"
        #expect(OutputPolicy.decide(h.state, running: true).pattern(.blue) == .off)
    }

    @Test func promptingAndTexted() {
        var (h, _) = Self.running()
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", name: "Dora")))
        let prompt = h.run(until: h.now + 4 * hour)[0]
        var out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.amber) == OutputPolicy.promptBlink)
        #expect(out.sequences(.amber) == [[prompt.sequence]])
        #expect(out[.amber]?.reasons.first?.text.contains("Dora (r1)") == true)
        #expect(out.pattern(.buzzer) == OutputPolicy.chirp)
        #expect(out.sequences(.buzzer) == [[prompt.sequence]])
        #expect(out.pattern(.red) == .off)
        #expect(OutputPolicy.soundingAlarms(h.state).isEmpty) // a chirp is not an alarm

        let text = h.run(until: h.now + 20 * minute)[0]
        out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.amber) == OutputPolicy.promptBlink)
        #expect(out.sequences(.amber) == [[text.sequence]])
        // Issue 27: contacts hear only at the last step; the second asks the resident again.
        #expect(out[.amber]?.reasons.first?.text.contains("(asked again by SMS)") == true, "\(out[.amber]?.reasons ?? [])")
        #expect(out[.amber]?.reasons.first?.text.contains("contacts") == false)
    }

    @Test func alarmAndTriggered() {
        var (h, _) = Self.running()
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        let alarm = h.run(until: h.now + 4 * hour + 25 * minute).last!
        #expect(PlainDeadline(alarm)?.step == .alarm)
        var out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.red) == OutputPolicy.alarmBlink)
        #expect(out.sequences(.red) == [[alarm.sequence]])
        #expect(out[.red]?.reasons.first?.text.contains("loud alarm") == true)
        #expect(out.pattern(.buzzer) == OutputPolicy.loudAlarm)
        #expect(out.sequences(.buzzer) == [[alarm.sequence]])
        // The alarm is a call for help, and this box has no call tree: amber says nobody is told.
        #expect(out.pattern(.amber) == OutputPolicy.unreachableBlink)
        #expect(out[.amber]?.reasons.first?.text.contains("has nobody to tell") == true)

        let notify = h.run(until: h.now + 5 * minute)[0]
        out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.red) == OutputPolicy.alarmBlink)
        #expect(out.sequences(.red) == [[notify.sequence]])
        #expect(out[.red]?.reasons.first?.text.contains("emergency triggered") == true)
        #expect(out.pattern(.buzzer) == OutputPolicy.loudAlarm)
    }

    @Test func theLoudAlarmOutranksAnSOSAndAPromptOnTheBuzzer() {
        var (h, _) = Self.running()
        let t0 = h.now
        h.append(LadderEvents.enrolled(LadderEvents.resident("a1")))
        h.append(LadderEvents.enrolled(LadderEvents.resident("a2", interval: 4 * hour + 25 * minute)))
        let sos = h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1)))
        h.run(until: t0 + 4 * hour + 25 * minute) // a1 alarming, a2 prompted
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.buzzer) == OutputPolicy.loudAlarm)
        #expect(out.pattern(.red) == .on) // the SOS here wins red
        #expect(out.sequences(.red) == [[sos.sequence]])
        #expect(out.pattern(.amber) == OutputPolicy.promptBlink)
        #expect(out.sequences(.amber) == [[h.resident("a2")!.stepSequence]])
    }

    @Test func buttonHeldFeedback() {
        var (h, _) = Self.running()
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        h.run(until: h.now + 4 * hour) // prompting: amber slow blink
        let down = h.append(button(edge: .falling))
        var out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.amber) == OutputPolicy.heldBlink) // feedback outranks the prompt
        #expect(out.sequences(.amber) == [[down.sequence]])
        #expect(out.pattern(.buzzer) == OutputPolicy.chirp)
        h.append(button(edge: .rising))
        out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.amber) == OutputPolicy.promptBlink)
    }

    // MARK: Acknowledgements

    @Test func anAcknowledgementSilencesTheBuzzerButNotTheRedLED() {
        var (h, _) = Self.running()
        let t0 = h.now
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        let alarm = h.run(until: t0 + 4 * hour + 26 * minute).last!
        #expect(OutputPolicy.soundingAlarms(h.state) == ["ladder:r1/1"])
        let ack = h.append(LadderEvents.acknowledged())
        #expect(h.state.alarms.silenced == ["ladder:r1/1"])
        #expect(h.state.alarms.acknowledgements == 1)
        #expect(h.state.alarms.lastAcknowledgementSequence == ack.sequence)
        #expect(OutputPolicy.soundingAlarms(h.state).isEmpty)
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.buzzer) == .off)
        #expect(out.pattern(.red) == OutputPolicy.alarmBlink)
        #expect(out.sequences(.red) == [[alarm.sequence]])
        // The ladder itself goes on: contacts are still told.
        h.run(until: t0 + 4 * hour + 30 * minute)
        #expect(h.step("r1") == .notify)
        #expect(h.outbox.entries["r1/1/notify"] != nil)
        // The silence survives a checkpoint.
        let restored = try? Projections.decoded(h.state.encoded())
        #expect(restored.map { OutputPolicy.decide($0, running: true) } == OutputPolicy.decide(h.state, running: true))
    }

    @Test func anAcknowledgementSilencesOnlyWhatSoundsAtThatMoment() {
        var (h, _) = Self.running()
        let t0 = h.now
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r2", interval: 5 * hour)))
        let sos = h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1)))
        h.run(until: t0 + 4 * hour + 25 * minute)
        h.append(LadderEvents.acknowledged()) // silences r1's alarm and the SOS
        #expect(h.state.alarms.silenced == ["ladder:r1/1", "sos:\(AlertID(origin: 0xB0C5, counter: 1).text)"])
        var out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.buzzer) == .off)
        #expect(out.pattern(.red) == .on)
        #expect(out.sequences(.red) == [[sos.sequence]])

        // r2's alarm starts after the acknowledgement: it sounds.
        let alarm2 = h.run(until: t0 + 5 * hour + 25 * minute).last!
        #expect(PlainDeadline(alarm2) == PlainDeadline("r2", ladder: 1, step: .alarm, due: t0 + 5 * hour + 25 * minute))
        out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.buzzer) == OutputPolicy.loudAlarm)
        #expect(out.sequences(.buzzer) == [[alarm2.sequence]]) // only the unsilenced one is a reason
        #expect(OutputPolicy.soundingAlarms(h.state) == ["ladder:r2/1"])
    }

    @Test func aNewLadderAlarmAfterASilencedOneSoundsAgain() {
        var (h, _) = Self.running()
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", interval: 1 * hour)))
        h.run(until: h.now + 1 * hour + 25 * minute)
        h.append(LadderEvents.acknowledged())
        #expect(OutputPolicy.decide(h.state, running: true).pattern(.buzzer) == .off)
        h.append(checkIn("r1")) // over: the silenced key is forgotten
        #expect(h.state.alarms.silenced.isEmpty)
        #expect(OutputPolicy.decide(h.state, running: true).pattern(.red) == .off)

        let alarm = h.run(until: h.now + 1 * hour + 25 * minute).last!
        #expect(PlainDeadline(alarm)?.ladder == 2)
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.buzzer) == OutputPolicy.loudAlarm)
        #expect(out.sequences(.buzzer) == [[alarm.sequence]])
        #expect(OutputPolicy.soundingAlarms(h.state) == ["ladder:r1/2"])
    }

    @Test func aNewSOSAfterASilencedOneSoundsAgain() {
        var (h, _) = Self.running()
        h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1)))
        h.append(LadderEvents.acknowledged())
        #expect(OutputPolicy.decide(h.state, running: true).pattern(.buzzer) == .off)
        h.append(cancellation(origin: 0xB0C5, counter: 1, by: 0xB0C5))
        let second = h.append(.alertRaised(alert(origin: 0xB0C5, counter: 2)))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out.pattern(.buzzer) == OutputPolicy.sosTone)
        #expect(out.sequences(.buzzer) == [[second.sequence]])
    }

    @Test func anAcknowledgementWithNothingSoundingSilencesNothingLater() {
        var (h, _) = Self.running()
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        h.append(LadderEvents.acknowledged())
        #expect(h.state.alarms.silenced.isEmpty)
        #expect(h.state.alarms.acknowledgements == 1)
        h.run(until: h.now + 4 * hour + 25 * minute)
        #expect(OutputPolicy.decide(h.state, running: true).pattern(.buzzer) == OutputPolicy.loudAlarm)
    }

    // MARK: Patterns over time

    /// The level at every millisecond of `duration`, turned into (time, level) transitions.
    static func sampledTransitions(_ p: OutputPattern, over duration: UInt64) -> [(UInt64, Bool)] {
        var out: [(UInt64, Bool)] = [(0, p.level(atMilliseconds: 0))]
        for t in 1...duration where p.level(atMilliseconds: t) != p.level(atMilliseconds: t - 1) {
            out.append((t, p.level(atMilliseconds: t)))
        }
        return out
    }

    /// The same, walking `nextChange` like a driver's one timer.
    static func scheduledTransitions(_ p: OutputPattern, over duration: UInt64) -> [(UInt64, Bool)] {
        var out: [(UInt64, Bool)] = [(0, p.level(atMilliseconds: 0))]
        var t: UInt64 = 0
        while let next = p.nextChange(afterMilliseconds: t), next <= duration {
            #expect(next > t)
            #expect(p.level(atMilliseconds: next) != p.level(atMilliseconds: next - 1), "no change at \(next)")
            out.append((next, p.level(atMilliseconds: next)))
            t = next
            if out.count > 10_000 { break }
        }
        return out
    }

    static func same(_ a: [(UInt64, Bool)], _ b: [(UInt64, Bool)]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    @Test func theAlarmBlinkOverThreeSeconds() {
        let p = OutputPolicy.alarmBlink
        let expected: [(UInt64, Bool)] = [(0, true), (250, false), (500, true), (750, false), (1_000, true), (1_250, false),
                                         (1_500, true), (1_750, false), (2_000, true), (2_250, false), (2_500, true),
                                         (2_750, false), (3_000, true)]
        #expect(Self.same(Self.scheduledTransitions(p, over: 3_000), expected))
        #expect(Self.same(Self.sampledTransitions(p, over: 3_000), expected))
    }

    @Test func theLoudAlarmOverThreeSeconds() {
        let p = OutputPolicy.loudAlarm
        let expected: [(UInt64, Bool)] = [(0, true), (600, false), (1_000, true), (1_600, false), (2_000, true),
                                         (2_600, false), (3_000, true)]
        #expect(Self.same(Self.scheduledTransitions(p, over: 3_000), expected))
        #expect(Self.same(Self.sampledTransitions(p, over: 3_000), expected))
    }

    @Test func theChirpOverThreeSecondsAndAMinute() {
        let p = OutputPolicy.chirp
        #expect(Self.same(Self.scheduledTransitions(p, over: 3_000), [(0, true), (150, false)]))
        #expect(Self.same(Self.sampledTransitions(p, over: 3_000), [(0, true), (150, false)]))
        #expect(p.nextChange(afterMilliseconds: 150) == 60_000)
        #expect(p.nextChange(afterMilliseconds: 3_000) == 60_000)
        let minute: [(UInt64, Bool)] = [(0, true), (150, false), (60_000, true), (60_150, false), (120_000, true)]
        #expect(Self.same(Self.scheduledTransitions(p, over: 120_000), minute))
        #expect(Self.same(Self.sampledTransitions(p, over: 120_000), minute))
    }

    @Test func everyPolicyPatternIsAProperBlink() {
        for p in [OutputPolicy.alarmBlink, OutputPolicy.heldBlink, OutputPolicy.promptBlink, OutputPolicy.loudAlarm,
                  OutputPolicy.sosTone, OutputPolicy.chirp, OutputPolicy.acknowledgedPulse] {
            guard case .blink(let period, _) = p else {
                Issue.record("\(p) is not a blink")
                continue
            }
            let span = UInt64(period) * 3
            #expect(Self.same(Self.scheduledTransitions(p, over: span), Self.sampledTransitions(p, over: span)), "\(p)")
            #expect(Self.scheduledTransitions(p, over: span).count == 7, "\(p)") // on, off ×3, on
        }
    }

    @Test func steadyPatternsNeverChange() {
        for p in [OutputPattern.on, .off, .blink(periodMilliseconds: 500, onMilliseconds: 0),
                  .blink(periodMilliseconds: 500, onMilliseconds: 500), .blink(periodMilliseconds: 0, onMilliseconds: 0)] {
            #expect(p.nextChange(afterMilliseconds: 0) == nil, "\(p)")
            #expect(p.nextChange(afterMilliseconds: 12_345) == nil, "\(p)")
            let level = p.level(atMilliseconds: 0)
            #expect((0..<2_000).allSatisfy { p.level(atMilliseconds: $0) == level }, "\(p)")
        }
        #expect(OutputPattern.on.level(atMilliseconds: 7))
        #expect(!OutputPattern.off.level(atMilliseconds: 7))
    }
}
