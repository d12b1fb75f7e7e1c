import Testing
import VigilCore
import VigilEvents

private let second = LadderHarness.second
private let minute = LadderHarness.minute
private let hour = LadderHarness.hour

/// A time given as local wall-clock time on day `day` after the harness origin (day 10, 00:00 UTC),
/// in a zone `offset` minutes east of UTC.
private func local(day: Int = 0, _ h: Int, _ m: Int, s: Int = 0, offset: Int) -> UInt64 {
    let minutes = Int64(day * 1_440 + h * 60 + m - offset)
    return UInt64(Int64(LadderHarness.origin) + minutes * Int64(minute) + Int64(s) * Int64(second))
}

/// Pauses and the night window: no prompt and no escalation step inside them; data still counts.
@Suite("Quiet time")
struct QuietTimeTests {
    static func enrol(at time: UInt64, mode: CheckInMode = .time, interval: UInt64 = 4 * hour,
                      pauses: [(start: UInt64, end: UInt64)] = [],
                      night: (start: UInt32, end: UInt32, utcOffset: Int32)? = nil) -> LadderHarness {
        var h = LadderHarness(now: time)
        h.append(LadderEvents.enrolled(LadderEvents.resident("q1", mode: mode, interval: interval, pauses: pauses, night: night)))
        return h
    }

    // MARK: Pauses

    @Test func aPromptDueInsideAPauseHappensAtItsEnd() {
        let t0 = LadderHarness.origin
        var h = Self.enrol(at: t0, pauses: [(t0 + 3 * hour, t0 + 5 * hour)])
        #expect(h.plainDeadline("q1") == PlainDeadline("q1", ladder: 1, step: .prompt, due: t0 + 5 * hour))
        #expect(h.run(until: t0 + 5 * hour - 1).isEmpty) // nothing inside the pause
        let appended = h.run(until: t0 + 5 * hour + 30 * minute).compactMap(PlainDeadline.init)
        // The ladder counts from the deferred prompt.
        #expect(appended == [
            PlainDeadline("q1", ladder: 1, step: .prompt, due: t0 + 5 * hour),
            PlainDeadline("q1", ladder: 1, step: .text, due: t0 + 5 * hour + 20 * minute),
            PlainDeadline("q1", ladder: 1, step: .alarm, due: t0 + 5 * hour + 25 * minute),
            PlainDeadline("q1", ladder: 1, step: .notify, due: t0 + 5 * hour + 30 * minute),
        ])
    }

    @Test func pauseBoundariesStartInclusiveEndExclusive() {
        let t0 = LadderHarness.origin
        // Due exactly at the start of a pause: deferred.
        let atStart = Self.enrol(at: t0, pauses: [(t0 + 4 * hour, t0 + 4 * hour + 30 * minute)])
        #expect(atStart.plainDeadline("q1")?.due == t0 + 4 * hour + 30 * minute)
        // Due exactly at the end of a pause: not deferred.
        let atEnd = Self.enrol(at: t0, pauses: [(t0 + 3 * hour, t0 + 4 * hour)])
        #expect(atEnd.plainDeadline("q1")?.due == t0 + 4 * hour)
        // An empty or inverted pause is no pause.
        let empty = Self.enrol(at: t0, pauses: [(t0 + 4 * hour, t0 + 4 * hour), (t0 + 5 * hour, t0 + 3 * hour)])
        #expect(empty.plainDeadline("q1")?.due == t0 + 4 * hour)
        #expect(empty.resident("q1")?.pauses.isEmpty == true)
    }

    @Test func touchingPausesDeferToTheEndOfTheLastOne() {
        let t0 = LadderHarness.origin
        // Listed out of order, touching and overlapping.
        let h = Self.enrol(at: t0, pauses: [(t0 + 5 * hour, t0 + 6 * hour), (t0 + 3 * hour, t0 + 5 * hour),
                                            (t0 + 5 * hour + 30 * minute, t0 + 7 * hour)])
        #expect(h.plainDeadline("q1")?.due == t0 + 7 * hour)
    }

    @Test func aRunningLaddersNextStepDueInsideAPauseIsDeferred() {
        let t0 = LadderHarness.origin
        var h = Self.enrol(at: t0)
        h.run(until: t0 + 4 * hour + 5 * minute)
        #expect(h.step("q1") == .prompt)
        // The resident goes out (a pause added by an update) before the text is due.
        let pause = (start: t0 + 4 * hour + 10 * minute, end: t0 + 6 * hour)
        h.append(LadderEvents.updated(LadderEvents.resident("q1", pauses: [pause])))
        #expect(h.step("q1") == .prompt)
        #expect(h.plainDeadline("q1") == PlainDeadline("q1", ladder: 1, step: .text, due: pause.end))
        #expect(h.run(until: pause.end - 1).isEmpty) // no escalation inside the pause
        let appended = h.run(until: pause.end + 10 * minute).compactMap(PlainDeadline.init)
        #expect(appended == [
            PlainDeadline("q1", ladder: 1, step: .text, due: pause.end),
            PlainDeadline("q1", ladder: 1, step: .alarm, due: pause.end + 5 * minute),
            PlainDeadline("q1", ladder: 1, step: .notify, due: pause.end + 10 * minute),
        ])
    }

    @Test(arguments: [CheckInMode.time, .pulse])
    func aCheckInInsideAPauseIsStillRecorded(mode: CheckInMode) {
        let t0 = LadderHarness.origin
        let pause = (start: t0 + 1 * hour, end: t0 + 7 * hour)
        var h = Self.enrol(at: t0, mode: mode, pauses: [pause])
        let body = mode == .pulse ? LadderEvents.heartRate("q1", bpm: 66, flags: 0b110) : checkIn("q1")
        let ok = h.at(t0 + 2 * hour, body)
        let r = h.resident("q1")
        #expect(r?.lastPositiveMicroseconds == t0 + 2 * hour)
        #expect(r?.lastPositiveSequence == ok.sequence)
        #expect(r?.anchorMicroseconds == t0 + 2 * hour)
        #expect(h.state.checkIns.residents["q1"]?.sequence == ok.sequence)
        // Anchor + interval = 6 h, inside the pause: at its end.
        #expect(h.plainDeadline("q1") == PlainDeadline("q1", ladder: 1, step: .prompt, due: pause.end))
        // A second check-in after the pause moves the anchor again.
        h.at(pause.end - 30 * minute, checkIn("q1"))
        #expect(h.plainDeadline("q1")?.due == pause.end - 30 * minute + 4 * hour)
    }

    // MARK: The night window

    /// (offset east of UTC, night start, night end, enrolment, expected prompt), all local times.
    static let nights: [(label: String, offset: Int, start: (Int, Int), end: (Int, Int), enrol: (Int, Int), prompt: (day: Int, h: Int, m: Int))] = [
        ("UTC+2, crossing midnight, due at the start", 120, (22, 0), (7, 0), (18, 0), (1, 7, 0)),
        ("UTC+2, crossing midnight, due after midnight", 120, (22, 0), (7, 0), (21, 0), (1, 7, 0)),
        ("UTC-5, crossing midnight, due before midnight", -300, (22, 0), (7, 0), (19, 30), (1, 7, 0)),
        ("UTC+5:30, crossing midnight, odd minutes", 330, (23, 30), (6, 15), (20, 0), (1, 6, 15)),
        ("UTC-9:30, not crossing midnight", -570, (13, 0), (15, 45), (10, 0), (0, 15, 45)),
        ("UTC+14, due just before the end", 840, (22, 0), (7, 0), (2, 59), (0, 7, 0)),
        ("UTC, due at the end: not moved", 0, (22, 0), (7, 0), (3, 0), (0, 7, 0)),
        ("UTC+1, due just before the start: not moved", 60, (22, 0), (7, 0), (17, 59), (0, 21, 59)),
        ("start = end: no window", 120, (22, 0), (22, 0), (18, 0), (0, 22, 0)),
    ]

    @Test(arguments: nights.indices)
    func aPromptDueAtNightHappensAtTheWindowsEnd(_ index: Int) {
        let n = Self.nights[index]
        let enrolAt = local(n.enrol.0, n.enrol.1, offset: n.offset)
        let night = (UInt32(n.start.0 * 60 + n.start.1), UInt32(n.end.0 * 60 + n.end.1), Int32(n.offset))
        var h = Self.enrol(at: enrolAt, night: night)
        let expected = local(day: n.prompt.day, n.prompt.h, n.prompt.m, offset: n.offset)
        #expect(h.plainDeadline("q1") == PlainDeadline("q1", ladder: 1, step: .prompt, due: expected), "\(n.label)")
        #expect(h.run(until: expected - 1).isEmpty, "\(n.label)")
        #expect(h.run(until: expected).count == 1, "\(n.label)")
    }

    @Test func aDeadlineWithinTheLastMinuteOfTheNightMovesToTheExactEnd() {
        // Enrolled at 02:59:30 local: due 06:59:30, inside the night's last minute.
        let enrolAt = local(2, 59, s: 30, offset: -180)
        let h = Self.enrol(at: enrolAt, night: (22 * 60, 7 * 60, -180))
        #expect(h.plainDeadline("q1")?.due == local(7, 0, offset: -180))
        // Enrolled at 03:00:30: due 07:00:30, outside.
        let after = Self.enrol(at: local(3, 0, s: 30, offset: -180), night: (22 * 60, 7 * 60, -180))
        #expect(after.plainDeadline("q1")?.due == local(7, 0, s: 30, offset: -180))
    }

    @Test func aRunningLadderWaitsForTheMorning() {
        // Prompted at 21:50 local; the text would be due at 22:10, inside the night.
        let offset = 60
        let enrolAt = local(17, 50, offset: offset)
        var h = Self.enrol(at: enrolAt, night: (22 * 60, 6 * 60, Int32(offset)))
        h.run(until: local(21, 50, offset: offset))
        #expect(h.step("q1") == .prompt)
        let morning = local(day: 1, 6, 0, offset: offset)
        #expect(h.plainDeadline("q1") == PlainDeadline("q1", ladder: 1, step: .text, due: morning))
        #expect(h.run(until: morning - 1).isEmpty)
        #expect(h.run(until: morning + 10 * minute).compactMap(PlainDeadline.init).map(\.due)
            == [morning, morning + 5 * minute, morning + 10 * minute])
    }

    @Test func theNightRepeatsEveryDay() {
        let offset = 120
        // Enrolled at noon local with a 10 h interval: 22:00 local every time it is due.
        var h = Self.enrol(at: local(12, 0, offset: offset), interval: 10 * hour, night: (21 * 60, 6 * 60, Int32(offset)))
        for day in 1...3 {
            let morning = local(day: day, 6, 0, offset: offset)
            #expect(h.plainDeadline("q1")?.due == morning, "day \(day)")
            h.run(until: morning)
            #expect(h.step("q1") == .prompt)
            h.at(local(day: day, 12, 0, offset: offset), checkIn("q1"))
        }
    }

    // MARK: Pauses and nights together

    @Test func aDeadlinePushedOutOfAPauseThatEndsInsideTheNightWaitsForTheMorning() {
        let offset = 120
        let enrolAt = local(15, 0, offset: offset)
        let pause = (start: local(18, 0, offset: offset), end: local(23, 0, offset: offset))
        var h = Self.enrol(at: enrolAt, pauses: [pause], night: (22 * 60, 7 * 60, Int32(offset)))
        // Due 19:00 local → end of the pause, 23:00 → inside the night → 07:00 next morning.
        let morning = local(day: 1, 7, 0, offset: offset)
        #expect(h.plainDeadline("q1") == PlainDeadline("q1", ladder: 1, step: .prompt, due: morning))
        #expect(h.run(until: morning - 1).isEmpty)
        #expect(h.run(until: morning).count == 1)
    }

    @Test func aNightEndingInsideAPauseWaitsForThePausesEnd() {
        let offset = -240
        let enrolAt = local(20, 0, offset: offset)
        // Night 22:00–07:00; the resident is away 06:00–09:30 the next morning, and a second pause
        // starts exactly as the first ends.
        let pauses = [(start: local(day: 1, 6, 0, offset: offset), end: local(day: 1, 9, 30, offset: offset)),
                      (start: local(day: 1, 9, 30, offset: offset), end: local(day: 1, 10, 0, offset: offset))]
        let h = Self.enrol(at: enrolAt, pauses: pauses, night: (22 * 60, 7 * 60, Int32(offset)))
        #expect(h.plainDeadline("q1")?.due == local(day: 1, 10, 0, offset: offset))
    }

    @Test func pulseModeRespectsQuietTimeToo() {
        let offset = 0
        var h = Self.enrol(at: local(20, 0, offset: offset), mode: .pulse, interval: 3 * hour,
                           night: (22 * 60, 6 * 60, Int32(offset)))
        // Due 23:00, at night: 06:00. A reading at 01:00 (inside the night) still counts: due 04:00 → 06:00.
        #expect(h.plainDeadline("q1")?.due == local(day: 1, 6, 0, offset: offset))
        h.at(local(day: 1, 1, 0, offset: offset), LadderEvents.heartRate("q1", bpm: 58, flags: 0))
        #expect(h.resident("q1")?.anchorMicroseconds == local(day: 1, 1, 0, offset: offset))
        #expect(h.plainDeadline("q1")?.due == local(day: 1, 6, 0, offset: offset))
        // A reading at 04:00 moves it to 07:00, outside.
        h.at(local(day: 1, 4, 0, offset: offset), LadderEvents.heartRate("q1", bpm: 58, flags: 0))
        #expect(h.plainDeadline("q1")?.due == local(day: 1, 7, 0, offset: offset))
    }
}
