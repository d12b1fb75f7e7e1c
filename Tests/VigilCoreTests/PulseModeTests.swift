import Testing
import VigilCore
import VigilEvents

private let minute = LadderHarness.minute
private let hour = LadderHarness.hour
private let tag: UInt64 = 0xD4_2A_11_00_BE_EF

/// Pulse mode: the emergency is always one interval ahead of the last positive datum.
@Suite("Pulse mode")
struct PulseModeTests {
    static func pulse(interval: UInt64 = 2 * hour) -> LadderHarness {
        var h = LadderHarness()
        h.append(radio(.on))
        h.append(LadderEvents.enrolled(LadderEvents.resident("p1", name: "Fay", mode: .pulse, interval: interval, tag: tag)))
        return h
    }

    @Test func theEmergencyIsOneIntervalAfterEnrolmentWithoutData() {
        var h = Self.pulse()
        let t0 = h.now
        #expect(h.plainDeadline("p1") == PlainDeadline("p1", ladder: 1, step: .prompt, due: t0 + 2 * hour))
        #expect(h.run(until: t0 + 2 * hour - 1).isEmpty)
        #expect(h.run(until: t0 + 2 * hour).count == 1)
        #expect(h.step("p1") == .prompt)
    }

    /// Each kind of positive datum, at +30 min: the emergency moves to +30 min + interval.
    static let positives: [(String, EventBody)] = [
        ("check-in", checkIn("p1", source: .checkInButton)),
        ("heart rate, contact not supported", LadderEvents.heartRate("p1", bpm: 64, flags: 0)),
        ("heart rate, no flags byte", LadderEvents.heartRate("p1", bpm: 64, flags: nil)),
        ("heart rate, contact supported and detected", LadderEvents.heartRate("p1", bpm: 64, flags: 0b110)),
        ("heart rate, other flag bits, contact supported and detected", LadderEvents.heartRate("p1", bpm: 120, flags: 0b1_0111)),
        ("heart rate at the plausible minimum", LadderEvents.heartRate("p1", bpm: EscalationBook.plausibleHeartRate.lowerBound, flags: 0b110)),
        ("heart rate at the plausible maximum", LadderEvents.heartRate("p1", bpm: EscalationBook.plausibleHeartRate.upperBound, flags: 0)),
    ]

    @Test(arguments: positives.indices)
    func aPositiveDatumPostponesTheEmergency(_ index: Int) {
        let (label, body) = Self.positives[index]
        var h = Self.pulse()
        let t0 = h.now
        let datum = h.at(t0 + 30 * minute, body)
        let r = h.resident("p1")
        #expect(r?.anchorMicroseconds == t0 + 30 * minute, "\(label)")
        #expect(r?.lastPositiveMicroseconds == t0 + 30 * minute, "\(label)")
        #expect(r?.lastPositiveSequence == datum.sequence, "\(label)")
        #expect(h.escalations.implausibleData == 0, "\(label)")
        #expect(h.plainDeadline("p1") == PlainDeadline("p1", ladder: 1, step: .prompt, due: t0 + 30 * minute + 2 * hour), "\(label)")
        #expect(h.run(until: t0 + 30 * minute + 2 * hour - 1).isEmpty, "\(label)")
        #expect(h.run(until: t0 + 30 * minute + 2 * hour).count == 1, "\(label)")
    }

    /// Data that is not a sign of life: no postponement, and the heart-rate ones are counted.
    static let negatives: [(String, EventBody, UInt64)] = [
        ("heart rate, contact supported but not detected", LadderEvents.heartRate("p1", bpm: 64, flags: 0b100), 1),
        ("heart rate, contact supported but not detected, other bits", LadderEvents.heartRate("p1", bpm: 64, flags: 0b1_0101), 1),
        ("heart rate 0 bpm", LadderEvents.heartRate("p1", bpm: 0, flags: 0b110), 1),
        ("heart rate 400 bpm", LadderEvents.heartRate("p1", bpm: 400, flags: 0), 1),
        ("heart rate just below plausible", LadderEvents.heartRate("p1", bpm: EscalationBook.plausibleHeartRate.lowerBound - 0.5, flags: 0), 1),
        ("heart rate NaN", LadderEvents.heartRate("p1", bpm: .nan, flags: 0), 1),
        ("heart rate without a value", LadderEvents.heartRate("p1", bpm: nil, flags: 0b110), 1),
        ("another device's scan hit", LadderEvents.tagSeen(tag ^ 1), 0),
        ("the tag in a window without reports", LadderEvents.tagSeen(tag, count: 0), 0),
        ("another resident's check-in", checkIn("p2"), 0),
    ]

    @Test(arguments: negatives.indices)
    func dataThatIsNotASignOfLifeDoesNotPostpone(_ index: Int) {
        let (label, body, implausible) = Self.negatives[index]
        var h = Self.pulse()
        let t0 = h.now
        h.at(t0 + 30 * minute, body)
        #expect(h.resident("p1")?.anchorMicroseconds == t0, "\(label)")
        #expect(h.resident("p1")?.lastPositiveSequence == 0, "\(label)")
        #expect(h.escalations.implausibleData == implausible, "\(label)")
        #expect(h.plainDeadline("p1") == PlainDeadline("p1", ladder: 1, step: .prompt, due: t0 + 2 * hour), "\(label)")
        #expect(h.run(until: t0 + 2 * hour).count == 1, "\(label)")
    }

    /// A collapsed resident's tag lying on the table is heard all the same: a tag in range is
    /// recorded as last seen, and postpones nothing (issue 10; before, it postponed the emergency).
    @Test(arguments: [("the resident's BLE tag", LadderEvents.tagSeen(tag)),
                      ("the resident's BLE tag heard once", LadderEvents.tagSeen(tag, count: 1)),
                      ("a tag check-in", checkIn("p1", source: .checkInBleTag))])
    func aTagInRangeIsSeenButPostponesNothing(_ label: String, _ body: EventBody) {
        var h = Self.pulse()
        let t0 = h.now
        let seen = h.at(t0 + 30 * minute, body)
        #expect(h.resident("p1")?.anchorMicroseconds == t0, "\(label)")
        #expect(h.resident("p1")?.lastPositiveSequence == seen.sequence, "\(label): still visible as last seen")
        #expect(h.plainDeadline("p1") == PlainDeadline("p1", ladder: 1, step: .prompt, due: t0 + 2 * hour), "\(label)")
        #expect(h.run(until: t0 + 2 * hour).count == 1, "\(label): the emergency comes on time")
    }

    @Test func aStreamOfReadingsKeepsTheEmergencyOneIntervalAhead() {
        var h = Self.pulse(interval: 30 * minute)
        let t0 = h.now
        // A reading every 10 minutes for 8 hours, a bad one every third time: never an emergency.
        for i in 1...48 {
            let t = t0 + UInt64(i) * 10 * minute
            let flags: UInt32 = i % 3 == 0 ? 0b100 : 0b110
            h.at(t, LadderEvents.heartRate("p1", bpm: 58 + Double(i % 7), flags: flags))
            #expect(h.step("p1") == LadderStep.none)
        }
        #expect(h.escalations.implausibleData == 16)
        // The last good reading was at i = 47.
        let last = t0 + 47 * 10 * minute
        #expect(h.plainDeadline("p1") == PlainDeadline("p1", ladder: 1, step: .prompt, due: last + 30 * minute))
        #expect(h.outbox.entries.isEmpty)
    }

    @Test(arguments: [LadderStep.prompt, .text, .alarm, .notify])
    func aPositiveDatumDuringTheLadderStopsIt(at step: LadderStep) {
        var h = Self.pulse()
        let t0 = h.now
        let due: [LadderStep: UInt64] = [.prompt: 0, .text: 20 * minute, .alarm: 25 * minute, .notify: 30 * minute]
        h.run(until: t0 + 2 * hour + due[step]!)
        #expect(h.step("p1") == step)

        let seen = h.at(t0 + 2 * hour + due[step]! + 1 * minute, LadderEvents.heartRate("p1", bpm: 64, flags: 0b110))
        #expect(h.step("p1") == LadderStep.none)
        #expect(h.resident("p1")?.lastPositiveSequence == seen.sequence)
        #expect(h.plainDeadline("p1") == PlainDeadline("p1", ladder: 2, step: .prompt, due: seen.timeMicroseconds + 2 * hour))
        #expect((h.outbox.entries["p1/1/ok"] != nil) == (step.rawValue >= LadderStep.notify.rawValue)) // contacts are told only at the last step
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.red]?.pattern == .off)
        #expect(out[.buzzer]?.pattern == .off)
        #expect(out[.amber]?.pattern == .off)
    }

    @Test func anImplausibleReadingDuringTheLadderDoesNotStopIt() {
        var h = Self.pulse()
        let t0 = h.now
        h.run(until: t0 + 2 * hour + 21 * minute)
        #expect(h.step("p1") == .text)
        h.append(LadderEvents.heartRate("p1", bpm: 72, flags: 0b100))
        h.append(LadderEvents.heartRate("p1", bpm: 0, flags: 0b110))
        #expect(h.step("p1") == .text)
        #expect(h.escalations.implausibleData == 2)
        #expect(h.run(until: t0 + 2 * hour + 25 * minute).map { PlainDeadline($0)?.step } == [.alarm])
    }

    @Test func theTagSurvivesACheckpointAndAnUpdate() throws {
        var h = Self.pulse()
        let t0 = h.now
        var restarted = try h.restartedFromCheckpoint()
        let seen = restarted.at(t0 + 1 * hour, LadderEvents.tagSeen(tag))
        #expect(restarted.resident("p1")?.lastPositiveSequence == seen.sequence)

        // A new tag replaces the old one.
        let newTag: UInt64 = 0x11_22_33_44_55_66
        h.append(LadderEvents.updated(LadderEvents.resident("p1", name: "Fay", mode: .pulse, interval: 2 * hour, tag: newTag)))
        h.at(t0 + 1 * hour, LadderEvents.tagSeen(tag))
        #expect(h.resident("p1")?.lastPositiveSequence == 0, "the old tag is nobody's")
        let seenNew = h.at(t0 + 90 * minute, LadderEvents.tagSeen(newTag))
        #expect(h.resident("p1")?.lastPositiveSequence == seenNew.sequence)
        #expect(h.resident("p1")?.anchorMicroseconds == t0, "seen, not a sign of life")
        // Removal forgets the tag.
        h.append(LadderEvents.removed("p1"))
        h.at(t0 + 100 * minute, LadderEvents.tagSeen(newTag))
        #expect(h.escalations.residents.isEmpty)
        #expect(!h.escalations.hasTags)
    }
}
