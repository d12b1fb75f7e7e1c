import Testing
@testable import VigilAlarmCentre

@Suite struct SequenceTests {
    @Test func sequenceRunsFrom0001To9999AndWrapsTo0001() {
        #expect(DC09Sequence.first.description == "0001")
        #expect(DC09Sequence(41)!.next().description == "0042")
        #expect(DC09Sequence(9999)!.next() == DC09Sequence.first)
    }

    @Test("sequence numbers outside 1...9999 are refused", arguments: [0, -1, 10_000, Int.max, Int.min])
    func sequenceOutOfRangeIsRefused(value: Int) {
        #expect(DC09Sequence(value) == nil)
    }
}

@Suite struct TimestampTests {
    @Test func timestampOfKnownMomentMatchesPython() {
        let time = DC09Timestamp(utcSeconds: Fixture.utcSeconds)!
        #expect(String(decoding: time.ascii, as: UTF8.self) == "_02:38:32,11-28-2026")
        #expect(time.utcSeconds == Fixture.utcSeconds)
    }

    @Test("calendar edges convert both ways", arguments: [
        (Int64(0), "00:00:00,01-01-1970"),
        (951_782_400, "00:00:00,02-29-2000"),        // a leap day in a 400-year leap year
        (4_107_542_399, "23:59:59,02-28-2100"),      // 2100 is not a leap year...
        (4_107_542_400, "00:00:00,03-01-2100"),      // ...so March follows February 28
        (253_402_300_799, "23:59:59,12-31-9999"),
    ])
    func calendarEdgesConvert(seconds: Int64, text: String) {
        let time = DC09Timestamp(utcSeconds: seconds)!
        #expect(time.description == text)
        #expect(time.utcSeconds == seconds)
        #expect(DC09Timestamp.parse(Array(("_" + text).utf8)[...]) == time)
    }

    @Test func everyDayOfFourCenturiesRoundTrips() {
        var seconds: Int64 = 0
        while seconds < 13_000_000_000 {  // to about 2381, one step of 1 day 1 h 1 min 1 s
            let time = DC09Timestamp(utcSeconds: seconds)!
            #expect(time.utcSeconds == seconds)
            seconds += 90_061
        }
    }

    @Test("times before 1970 or past 9999 are refused", arguments: [Int64(-1), 253_402_300_800, .max, .min])
    func timeOutOfRangeIsRefused(seconds: Int64) {
        #expect(DC09Timestamp(utcSeconds: seconds) == nil)
    }

    @Test("malformed or impossible timestamps are refused", arguments: [
        "_24:00:00,01-01-2026", "_23:60:00,01-01-2026", "_23:59:61,01-01-2026", "_12:00:00,13-01-2026",
        "_12:00:00,02-29-2026", "_12:00:00,04-31-2026", "_12:00:00,01-00-2026", "_12:00:00,01-01-1969",
        "_1:00:00,01-01-2026X", "12:00:00,01-01-2026_", "_12-00:00,01-01-2026", "_+1:00:00,01-01-2026",
        "_12:00:00,01-01-20266", "",
    ])
    func malformedTimestampIsRefused(text: String) {
        #expect(DC09Timestamp.parse(Array(text.utf8)[...]) == nil)
    }

    @Test func leapSecondFromReceiverIsAccepted() {
        #expect(DC09Timestamp.parse(Array("_23:59:60,12-31-2016".utf8)[...]) != nil)
    }
}
