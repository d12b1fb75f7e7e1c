import Testing
import VigilCore

/// The time a box can vouch for: the system's when synchronised, the hub's, a vouched frame's
/// (forward only, and never a first anchor older than the box's own clock allows), or none.
@Suite struct VouchedClockTests {
    static let hour: UInt64 = 3_600_000_000

    @Test func aSynchronisedSystemClockIsTheTimeAndFramesDoNotMoveIt() {
        var clock = VouchedClock()
        clock.systemClock(synchronised: true)
        let moved1 = clock.heardVouchedFrame(signedAtMicroseconds: 100 * Self.hour, wallMicroseconds: 50 * Self.hour, monotonicMicroseconds: 1)
        #expect(!moved1)
        #expect(clock.now(wallMicroseconds: 50 * Self.hour, monotonicMicroseconds: 2) == .init(microseconds: 50 * Self.hour, source: .system))
    }

    @Test func withoutAnySourceTheWallClockIsShownAsNotVouched() {
        let reading = VouchedClock().now(wallMicroseconds: 7, monotonicMicroseconds: 9)
        #expect(reading.microseconds == 7)
        #expect(!reading.vouched)
    }

    @Test func theHubsTimeRunsOnTheMonotonicClockAndOutranksFrames() {
        var clock = VouchedClock()
        clock.hubTime(1_000 * Self.hour, monotonicMicroseconds: 5_000_000)
        let moved2 = clock.heardVouchedFrame(signedAtMicroseconds: 2_000 * Self.hour, wallMicroseconds: 0, monotonicMicroseconds: 6_000_000)
        #expect(!moved2)
        #expect(clock.now(wallMicroseconds: 0, monotonicMicroseconds: 65_000_000) == .init(microseconds: 1_000 * Self.hour + 60_000_000, source: .hub))
    }

    @Test func aFrameAnchorOnlyMovesForward() {
        var clock = VouchedClock()
        let wall = 100 * Self.hour
        let moved3 = clock.heardVouchedFrame(signedAtMicroseconds: 106 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 0)
        #expect(moved3)
        let moved4 = clock.heardVouchedFrame(signedAtMicroseconds: 105 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 1)
        #expect(!moved4)
        let moved5 = clock.heardVouchedFrame(signedAtMicroseconds: 107 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 2)
        #expect(moved5)
        #expect(clock.now(wallMicroseconds: wall, monotonicMicroseconds: 2) == .init(microseconds: 107 * Self.hour, source: .frame))
    }

    @Test func aFirstAnchorOlderThanTheBoxsOwnClockByMoreThanTheFrameAgeIsNotAdopted() {
        var clock = VouchedClock(maximumFrameAgeMicroseconds: Self.hour)
        let moved6 = clock.heardVouchedFrame(signedAtMicroseconds: 98 * Self.hour, wallMicroseconds: 100 * Self.hour, monotonicMicroseconds: 0)
        #expect(!moved6)
        let moved7 = clock.heardVouchedFrame(signedAtMicroseconds: 99 * Self.hour + 1, wallMicroseconds: 100 * Self.hour, monotonicMicroseconds: 0)
        #expect(moved7)
    }
}
