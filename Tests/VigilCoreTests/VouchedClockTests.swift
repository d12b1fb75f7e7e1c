import Testing
import VigilCore

/// The time a box can vouch for: the system's when synchronised, the hub's, or two signers'
/// agreeing frames (forward only, never older than the box's own clock allows), or none.
@Suite struct VouchedClockTests {
    static let hour: UInt64 = 3_600_000_000
    static let minute: UInt64 = 60_000_000

    @Test func aSynchronisedSystemClockIsTheTimeAndFramesDoNotMoveIt() {
        var clock = VouchedClock()
        clock.systemClock(synchronised: true)
        let first = clock.heardVouchedFrame(signer: 1, signedAtMicroseconds: 100 * Self.hour, wallMicroseconds: 50 * Self.hour, monotonicMicroseconds: 1)
        let second = clock.heardVouchedFrame(signer: 2, signedAtMicroseconds: 100 * Self.hour, wallMicroseconds: 50 * Self.hour, monotonicMicroseconds: 2)
        #expect(!first && !second)
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
        _ = clock.heardVouchedFrame(signer: 1, signedAtMicroseconds: 2_000 * Self.hour, wallMicroseconds: 0, monotonicMicroseconds: 6_000_000)
        let moved = clock.heardVouchedFrame(signer: 2, signedAtMicroseconds: 2_000 * Self.hour, wallMicroseconds: 0, monotonicMicroseconds: 6_000_000)
        #expect(!moved)
        #expect(clock.now(wallMicroseconds: 0, monotonicMicroseconds: 65_000_000) == .init(microseconds: 1_000 * Self.hour + 60_000_000, source: .hub))
    }

    /// One stolen box cannot move a box's time: it takes two signers that agree.
    @Test func oneSignerAloneNeverMovesTheClockTwoThatAgreeDo() {
        var clock = VouchedClock()
        let wall = 100 * Self.hour
        let thief1 = clock.heardVouchedFrame(signer: 9, signedAtMicroseconds: 900 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 0)
        let thief2 = clock.heardVouchedFrame(signer: 9, signedAtMicroseconds: 900 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 1)
        #expect(!thief1 && !thief2)
        #expect(clock.now(wallMicroseconds: wall, monotonicMicroseconds: 2).source == .none)
        // Two boxes six hours ahead of this one, a minute apart: the earlier time is taken.
        _ = clock.heardVouchedFrame(signer: 1, signedAtMicroseconds: 106 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 10 * Self.minute)
        let agreed = clock.heardVouchedFrame(signer: 2, signedAtMicroseconds: 106 * Self.hour + Self.minute, wallMicroseconds: wall,
                                             monotonicMicroseconds: 10 * Self.minute)
        #expect(agreed)
        #expect(clock.now(wallMicroseconds: wall, monotonicMicroseconds: 11 * Self.minute) == .init(microseconds: 106 * Self.hour + Self.minute, source: .frame))
        #expect(!clock.now(wallMicroseconds: wall, monotonicMicroseconds: 11 * Self.minute).vouched, "a time learned from frames is not passed on as vouched")
    }

    @Test func twoSignersThatDisagreeMoveNothing() {
        var clock = VouchedClock()
        _ = clock.heardVouchedFrame(signer: 1, signedAtMicroseconds: 106 * Self.hour, wallMicroseconds: 100 * Self.hour, monotonicMicroseconds: 0)
        let moved = clock.heardVouchedFrame(signer: 2, signedAtMicroseconds: 107 * Self.hour, wallMicroseconds: 100 * Self.hour, monotonicMicroseconds: 0)
        #expect(!moved)
    }

    @Test func aFrameAnchorOnlyMovesForwardAndNeverToATimeOlderThanTheWallClockAllows() {
        var clock = VouchedClock(maximumFrameAgeMicroseconds: Self.hour)
        let wall = 100 * Self.hour
        // Two replayed frames, two hours older than this box's clock: not adopted.
        _ = clock.heardVouchedFrame(signer: 1, signedAtMicroseconds: 98 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 0)
        let old = clock.heardVouchedFrame(signer: 2, signedAtMicroseconds: 98 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 0)
        #expect(!old)
        _ = clock.heardVouchedFrame(signer: 1, signedAtMicroseconds: 105 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 0)
        let ahead = clock.heardVouchedFrame(signer: 2, signedAtMicroseconds: 105 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 0)
        #expect(ahead)
        // Agreeing frames behind the anchor do not set it back.
        _ = clock.heardVouchedFrame(signer: 3, signedAtMicroseconds: 104 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 0)
        let back = clock.heardVouchedFrame(signer: 4, signedAtMicroseconds: 104 * Self.hour, wallMicroseconds: wall, monotonicMicroseconds: 0)
        #expect(!back)
        #expect(clock.now(wallMicroseconds: wall, monotonicMicroseconds: 0).microseconds == 105 * Self.hour)
    }
}
