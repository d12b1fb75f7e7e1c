import Testing
import VigilSystem

@Suite("Clocks")
struct ClockTests {
    /// Records what observers saw, from whichever thread advanced the clock.
    final class Seen: Sendable {
        let values = LockedValue<[UInt64]>([])
        func append(_ v: UInt64) { values.withLock { $0.append(v) } }
        var all: [UInt64] { values.withLock { $0 } }
    }

    func readable(_ timer: ClockTimer) throws -> Bool {
        let epoll = try Epoll()
        try epoll.add(timer.fd, token: 1)
        return try !epoll.wait(timeoutMilliseconds: 0).isEmpty
    }

    @Test func aManualClockMovesWallAndMonotonicTimeTogetherOnlyWhenTold() {
        let clock = ManualClock(startMicroseconds: 1_000, monotonicStartNanoseconds: 5_000)
        #expect(clock.nowMicroseconds() == 1_000 && clock.nowNanoseconds() == 5_000)
        #expect(clock.nowMicroseconds() == 1_000, "reading does not move it")
        clock.advance(byMicroseconds: 500)
        #expect(clock.nowMicroseconds() == 1_500 && clock.nowNanoseconds() == 505_000)
        clock.advance(byNanoseconds: 2_500)
        #expect(clock.nowMicroseconds() == 1_502, "whole microseconds of a nanosecond advance")
        #expect(clock.nowNanoseconds() == 507_500)
        #expect(clock.isManual)
    }

    @Test func settingTheWallClockLeavesMonotonicTimeAlone() {
        let clock = ManualClock(startMicroseconds: 1_000, monotonicStartNanoseconds: 5_000)
        clock.set(10)
        #expect(clock.nowMicroseconds() == 10, "a step back, as NTP may make")
        #expect(clock.nowNanoseconds() == 5_000)
    }

    @Test func everyObserverIsToldOfEveryMoveAfterItAndMayReadTheClock() {
        let clock = ManualClock(startMicroseconds: 0, monotonicStartNanoseconds: 0)
        let first = Seen(), second = Seen()
        // Reading the clock from the observer also shows the advance does not hold its lock then.
        clock.onAdvance { first.append(clock.nowNanoseconds()) }
        clock.onAdvance { second.append(clock.nowMicroseconds()) }
        clock.advance(byMicroseconds: 3)
        clock.advance(byNanoseconds: 2_000)
        clock.set(100)
        #expect(first.all == [3_000, 5_000, 5_000])
        #expect(second.all == [3, 5, 100])
    }

    @Test func anObserverAddedLaterHearsOnlyLaterMoves() {
        let clock = ManualClock(startMicroseconds: 0, monotonicStartNanoseconds: 0)
        clock.advance(byMicroseconds: 1)
        let seen = Seen()
        clock.onAdvance { seen.append(clock.nowMicroseconds()) }
        clock.advance(byMicroseconds: 1)
        #expect(seen.all == [2])
    }

    @Test func theSystemMonotonicClockNeverGoesBackAndIsNotManual() {
        let clock = SystemMonotonicClock()
        let a = clock.nowNanoseconds()
        let b = clock.nowNanoseconds()
        #expect(b >= a && a > 0)
        #expect(!clock.isManual)
        clock.onAdvance { Issue.record("the system's clock never calls observers") } // accepted, never called
    }

    @Test func aTimerOnAManualClockBecomesReadableExactlyWhenTheClockReachesItsDeadline() throws {
        let clock = ManualClock()
        let timer = try ClockTimer(clock: clock)
        try timer.arm(afterNanoseconds: 1_000)
        #expect(try !readable(timer))
        clock.advance(byNanoseconds: 999)
        #expect(try !readable(timer), "one nanosecond early")
        clock.advance(byNanoseconds: 1)
        #expect(try readable(timer))
        timer.drain()
        #expect(try !readable(timer), "drained")
        clock.advance(byNanoseconds: 10_000)
        #expect(try !readable(timer), "one-shot: fired once")
    }

    @Test func aTimerArmedForAPastDeadlineIsReadableAtOnce() throws {
        let clock = ManualClock()
        let timer = try ClockTimer(clock: clock)
        try timer.arm(atNanoseconds: clock.nowNanoseconds())
        #expect(try readable(timer))
        timer.drain()
        try timer.arm(atNanoseconds: 0)
        #expect(try readable(timer))
    }

    @Test func rearmingATimerReplacesItsDeadline() throws {
        let clock = ManualClock()
        let timer = try ClockTimer(clock: clock)
        try timer.arm(afterNanoseconds: 1_000)
        try timer.arm(afterNanoseconds: 5_000)
        clock.advance(byNanoseconds: 1_000)
        #expect(try !readable(timer), "the first deadline is gone")
        clock.advance(byNanoseconds: 4_000)
        #expect(try readable(timer))
    }

    @Test func aDisarmedTimerIsNeverReadableEvenIfItWasDue() throws {
        let clock = ManualClock()
        let timer = try ClockTimer(clock: clock)
        try timer.arm(afterNanoseconds: 1_000)
        try timer.disarm()
        clock.advance(byNanoseconds: 2_000)
        #expect(try !readable(timer))
        try timer.arm(afterNanoseconds: 0)
        try timer.disarm()
        #expect(try !readable(timer), "already due, then disarmed")
    }

    @Test func aTimerOutlivedByItsClockIsForgotten() throws {
        let clock = ManualClock()
        weak var gone: ClockTimer?
        do {
            let timer = try ClockTimer(clock: clock)
            try timer.arm(afterNanoseconds: 1)
            gone = timer
        }
        #expect(gone == nil, "the clock's observer does not keep the timer (and its descriptors) alive")
        clock.advance(byNanoseconds: 10) // and its observer does nothing
    }

    @Test func aTimerOnTheSystemClockFiresAfterItsDelay() throws {
        // The kernel's timer itself: a bounded wait for it to fire, no assertion on how long it took.
        let timer = try ClockTimer(clock: SystemMonotonicClock())
        try timer.arm(afterNanoseconds: 1_000_000)
        let epoll = try Epoll()
        try epoll.add(timer.fd, token: 1)
        #expect(try epoll.wait(timeoutMilliseconds: 5_000).count == 1)
        timer.drain()
        #expect(try epoll.wait(timeoutMilliseconds: 0).isEmpty)
    }
}
