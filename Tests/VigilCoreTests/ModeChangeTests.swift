import Testing
import VigilCore
import VigilEvents

private let minute = LadderHarness.minute
private let hour = LadderHarness.hour

/// Turning checks off and on, and tags shared between residents.
@Suite struct ModeChangeTests {
    @Test func turningChecksOffEndsARunningLadder() {
        var h = LadderHarness()
        let t0 = h.now
        _ = h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        _ = h.run(until: t0 + 4 * hour + 26 * minute)
        #expect(h.step("r1") == .alarm)
        _ = h.append(LadderEvents.updated(LadderEvents.resident("r1", mode: .off)))
        #expect(h.step("r1") == LadderStep.none)
        #expect(h.nextDeadline("r1") == nil)
        #expect(OutputPolicy.decide(h.state, running: true)[.buzzer]?.pattern == .off)
    }

    @Test func turningChecksBackOnStartsFromNowNotFromAnOldAnchor() {
        var h = LadderHarness()
        let t0 = h.now
        _ = h.append(LadderEvents.enrolled(LadderEvents.resident("r1", mode: .off)))
        _ = h.run(until: t0 + 2 * LadderHarness.day)
        let on = h.at(t0 + 2 * LadderHarness.day, LadderEvents.updated(LadderEvents.resident("r1")))
        // Without the reset, prompt, text, alarm and notify would all be overdue at once.
        #expect(h.plainDeadline("r1") == PlainDeadline("r1", ladder: 1, step: .prompt, due: on.timeMicroseconds + 4 * hour))
        #expect(h.run(until: on.timeMicroseconds + hour).isEmpty)
    }

    @Test func aSharedTagCreditsEveryOwnerTheSameWayOnEveryReplay() throws {
        var h = LadderHarness()
        let t0 = h.now
        let tag: UInt64 = 0xC0_00_00_00_00_07
        _ = h.append(LadderEvents.enrolled(LadderEvents.resident("b", mode: .pulse, interval: hour, tag: tag)))
        _ = h.append(LadderEvents.enrolled(LadderEvents.resident("a", mode: .pulse, interval: hour, tag: tag)))
        let seen = h.at(t0 + 30 * minute, LadderEvents.tagSeen(tag))
        #expect(h.resident("a")?.lastPositiveSequence == seen.sequence)
        #expect(h.resident("b")?.lastPositiveSequence == seen.sequence)
        #expect(try h.state.encoded() == h.replayed().encoded())
    }
}

@Suite struct ResidentBoundsTests {
    @Test func absurdDurationsAreClampedSoNoDeadlineOverflows() throws {
        var h = LadderHarness()
        var r = LadderEvents.resident("r1", interval: UInt64.max - 1_000, confirm: UInt64.max / 2,
                                      night: (22 * 60, 7 * 60, 840))
        r.textToAlarmUs = 1
        _ = h.append(LadderEvents.enrolled(r))
        let s = try #require(h.resident("r1"))
        #expect(s.intervalMicroseconds == EscalationBook.intervalBounds.upperBound)
        #expect(s.confirmMicroseconds == EscalationBook.stepBounds.upperBound)
        #expect(s.textToAlarmMicroseconds == EscalationBook.stepBounds.lowerBound)
        let due = try #require(h.nextDeadline("r1")).dueMicroseconds
        #expect(due > h.now && due < h.now + 400 * 86_400_000_000)
    }
}

@Suite struct TimeModeTests {
    @Test func inTimeModeOnlyAnExplicitCheckInAnswersButPassiveDataAreRecorded() throws {
        var h = LadderHarness()
        let t0 = h.now
        let tag: UInt64 = 0xC0_00_00_00_00_09
        _ = h.append(LadderEvents.enrolled(LadderEvents.resident("r1", mode: .time, tag: tag)))
        _ = h.run(until: t0 + 4 * hour + 1 * minute)
        #expect(h.step("r1") == .prompt)
        // The resident's tag is in range and a heart-rate reading comes in: recorded, not an answer.
        let seen = h.at(t0 + 4 * hour + 2 * minute, LadderEvents.tagSeen(tag))
        _ = h.append(LadderEvents.heartRate("r1", bpm: 70, flags: 0b110))
        #expect(h.step("r1") == .prompt)
        #expect(h.resident("r1")?.lastPositiveSequence ?? 0 > seen.sequence - 1)
        _ = h.run(until: t0 + 4 * hour + 21 * minute)
        #expect(h.step("r1") == .text, "passive data do not stop a time-mode ladder")
        // An explicit check-in does.
        _ = h.append(checkIn("r1"))
        #expect(h.step("r1") == LadderStep.none)
    }
}
