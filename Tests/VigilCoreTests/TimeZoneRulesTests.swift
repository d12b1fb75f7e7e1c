import Foundation
import Testing
import VigilCore
import VigilEvents

private let minute = LadderHarness.minute
private let hour = LadderHarness.hour

/// Microseconds since the epoch of a UTC civil time.
func utc(_ y: Int64, _ mo: Int64, _ d: Int64, _ h: Int64 = 0, _ mi: Int64 = 0) -> UInt64 {
    UInt64((CivilTime.days(year: y, month: mo, day: d) * 86_400 + h * 3_600 + mi * 60) * 1_000_000)
}

/// Issue 10, item 8: TZif parsing (pure, from bytes), and quiet times in a resident's zone that
/// follow daylight saving. Uses the real tz database (Debian's tzdata, scripts/setup).
@Suite("Time zone rules")
struct TimeZoneRulesTests {
    static func madrid() throws -> TimeZoneRules {
        let data = try #require(FileManager.default.contents(atPath: "/usr/share/zoneinfo/Europe/Madrid"),
                                "tzdata is not installed (scripts/setup installs it)")
        return try TimeZoneRules(tzif: Array(data))
    }

    @Test func civilTimeMatchesKnownDates() {
        #expect(CivilTime.days(year: 2026, month: 1, day: 1) * 86_400 == 1_767_225_600)
        let t = CivilTime(utcSeconds: 951_827_696) // 2000-02-29 12:34:56, a Tuesday
        #expect([t.year, t.month, t.day, t.hour, t.minute, t.second, t.weekday] == [2000, 2, 29, 12, 34, 56, 1])
        #expect(CivilTime(utcSeconds: -1).text == "1969-12-31 23:59")
        #expect(CivilTime(utcSeconds: 0).weekday == 3) // Thursday
    }

    @Test func madridOffsetsFollowDaylightSaving() throws {
        let rules = try Self.madrid()
        func at(_ t: UInt64) -> Int32 { rules.offset(atUTC: Int64(t / 1_000_000)) }
        #expect(at(utc(2026, 1, 15)) == 3_600)
        #expect(at(utc(2026, 7, 15)) == 7_200)
        // 2026-03-29 01:00 UTC the clocks go forward; 2026-10-25 01:00 UTC back.
        #expect(at(utc(2026, 3, 29, 0, 59)) == 3_600)
        #expect(at(utc(2026, 3, 29, 1, 0)) == 7_200)
        #expect(at(utc(2026, 10, 25, 0, 59)) == 7_200)
        #expect(at(utc(2026, 10, 25, 1, 0)) == 3_600)
        // Past any table: the footer's rule (CET-1CEST,M3.5.0,M10.5.0/3).
        #expect(at(utc(2100, 7, 15)) == 7_200)
        #expect(at(utc(2100, 1, 15)) == 3_600)
        #expect(at(utc(2100, 3, 28, 1, 0)) == 7_200) // last Sunday of March 2100 is the 28th
        #expect(at(utc(2100, 3, 28, 0, 59)) == 3_600)
        #expect(rules.footer?.standardOffset == 3_600)
    }

    @Test func versionOneFilesAndGarbage() throws {
        func be32(_ v: Int32) -> [UInt8] { withUnsafeBytes(of: v.bigEndian, Array.init) }
        var v1 = Array("TZif".utf8) + [0] + Array(repeating: 0, count: 15)
        v1 += [0, 0, 0, 1, 2, 4].flatMap { be32(Int32($0)) } // isut, isstd, leap, time, type, char
        v1 += be32(1_000) + [1]
        v1 += be32(0) + [0, 0] + be32(3_600) + [1, 0]
        v1 += Array("UTC\0".utf8)
        let rules = try TimeZoneRules(tzif: v1)
        #expect(rules.offset(atUTC: 999) == 0)
        #expect(rules.offset(atUTC: 1_000) == 3_600)
        #expect(throws: TimeZoneRules.ParseError.notTZif) { try TimeZoneRules(tzif: Array(repeating: 0x41, count: 60)) }
        #expect(throws: TimeZoneRules.ParseError.truncated) { try TimeZoneRules(tzif: Array(v1.prefix(50))) }
        // Every prefix of a real file fails cleanly, never traps.
        let real = Array(try #require(FileManager.default.contents(atPath: "/usr/share/zoneinfo/Europe/Madrid")))
        for n in stride(from: 0, to: real.count - 1, by: 7) { _ = try? TimeZoneRules(tzif: Array(real.prefix(n))) }
    }

    @Test func posixRulesParse() throws {
        let eastern = try #require(PosixRule("EST5EDT,M3.2.0,M11.1.0"))
        #expect(eastern.standardOffset == Int32(-5 * 3_600))
        #expect(eastern.daylightOffset == Int32(-4 * 3_600))
        let sydney = try #require(PosixRule("AEST-10AEDT,M10.1.0,M4.1.0/3"))
        let january = sydney.offset(atUTC: Int64(utc(2026, 1, 15) / 1_000_000))
        let july = sydney.offset(atUTC: Int64(utc(2026, 7, 15) / 1_000_000))
        #expect(january == Int32(11 * 3_600)) // southern summer: the rule wraps the year
        #expect(july == Int32(10 * 3_600))
        #expect(try #require(PosixRule("<+0330>-3:30")).standardOffset == Int32(12_600))
        #expect(PosixRule("nonsense,") == nil)
    }

    static func harness(at time: UInt64, zone: Bool = true, weekly: [(UInt32, UInt32, UInt32)] = [],
                        night: (start: UInt32, end: UInt32, utcOffset: Int32)? = (22 * 60, 7 * 60, 60)) throws -> LadderHarness {
        var settings = ProjectionSettings()
        if zone { settings.ladder.zones["Europe/Madrid"] = try madrid() }
        var h = LadderHarness(state: Projections(settings: settings), now: time)
        var r = LadderEvents.resident("z1", night: night)
        r.timeZone = "Europe/Madrid"
        r.weeklyPauses = weekly.map { var w = WeeklySlot(); w.days = $0.0; w.startMinute = $0.1; w.endMinute = $0.2; return w }
        h.append(LadderEvents.enrolled(r))
        return h
    }

    /// A night window 22:00-07:00 in Europe/Madrid ends at 06:00 UTC in winter (CET) and at
    /// 05:00 UTC in summer (CEST). Fails on the old code: the fixed offset gave 06:00 all year.
    @Test func theNightWindowFollowsDaylightSaving() throws {
        // Prompts due at 00:00 UTC (01:00 CET / 02:00 CEST), inside the night.
        let winter = try Self.harness(at: utc(2026, 1, 14, 20))
        #expect(winter.plainDeadline("z1")?.due == utc(2026, 1, 15, 6))
        let summer = try Self.harness(at: utc(2026, 7, 14, 20))
        #expect(summer.plainDeadline("z1")?.due == utc(2026, 7, 15, 5))
        // The night the clocks go forward: 22:00 CET to 07:00 CEST.
        let spring = try Self.harness(at: utc(2026, 3, 28, 20))
        #expect(spring.plainDeadline("z1")?.due == utc(2026, 3, 29, 5))
        // And the night they go back: 22:00 CEST to 07:00 CET.
        let autumn = try Self.harness(at: utc(2026, 10, 24, 20))
        #expect(autumn.plainDeadline("z1")?.due == utc(2026, 10, 25, 6))
        // Before 22:00 local in summer (20:30 CEST = 18:30 UTC): not in the night.
        let evening = try Self.harness(at: utc(2026, 7, 14, 14, 30))
        #expect(evening.plainDeadline("z1")?.due == utc(2026, 7, 14, 18, 30))
        let late = try Self.harness(at: utc(2026, 7, 14, 16, 30)) // due 22:30 CEST
        #expect(late.plainDeadline("z1")?.due == utc(2026, 7, 15, 5))
    }

    /// Replay without the zone's rules degrades clearly: the night's fixed offset, and the zone
    /// is named as missing.
    @Test func withoutTheRulesTheFixedOffsetIsUsedAndSaid() throws {
        let summer = try Self.harness(at: utc(2026, 7, 14, 20), zone: false)
        #expect(summer.plainDeadline("z1")?.due == utc(2026, 7, 15, 6))
        #expect(summer.escalations.missingZones == ["Europe/Madrid"])
        let withRules = try Self.harness(at: utc(2026, 7, 14, 20))
        #expect(withRules.escalations.missingZones.isEmpty)
    }

    /// Weekly pauses: "Mon-Fri 09:00-12:00" in the resident's zone, and a slot past midnight.
    /// Fails on the old code: weekly pauses were ignored.
    @Test func weeklyPausesRecur() throws {
        let monFri: UInt32 = 0b001_1111
        // Wednesday 2026-01-14, due 08:30 UTC = 09:30 CET: deferred to 12:00 CET = 11:00 UTC.
        let wednesday = try Self.harness(at: utc(2026, 1, 14, 4, 30), weekly: [(monFri, 9 * 60, 12 * 60)], night: nil)
        #expect(wednesday.plainDeadline("z1")?.due == utc(2026, 1, 14, 11))
        // The same in summer: 12:00 CEST = 10:00 UTC.
        let july = try Self.harness(at: utc(2026, 7, 15, 3, 30), weekly: [(monFri, 9 * 60, 12 * 60)], night: nil)
        #expect(july.plainDeadline("z1")?.due == utc(2026, 7, 15, 10))
        // Saturday 2026-01-17: no pause.
        let saturday = try Self.harness(at: utc(2026, 1, 17, 4, 30), weekly: [(monFri, 9 * 60, 12 * 60)], night: nil)
        #expect(saturday.plainDeadline("z1")?.due == utc(2026, 1, 17, 8, 30))
        // Friday 22:00-02:00 runs into Saturday: due Sat 01:00 CET (00:00 UTC) -> 02:00 CET.
        let friday: UInt32 = 1 << 4
        let night = try Self.harness(at: utc(2026, 1, 16, 20), weekly: [(friday, 22 * 60, 2 * 60)], night: nil)
        #expect(night.plainDeadline("z1")?.due == utc(2026, 1, 17, 1))
        // ... but not Sunday 01:00 (Saturday is not in the slot's days).
        let sunday = try Self.harness(at: utc(2026, 1, 17, 20), weekly: [(friday, 22 * 60, 2 * 60)], night: nil)
        #expect(sunday.plainDeadline("z1")?.due == utc(2026, 1, 18, 0))
        // A slot touching the night chains: night to 07:00, then 07:00-09:00 every day.
        let chained = try Self.harness(at: utc(2026, 1, 14, 20), weekly: [(0x7F, 7 * 60, 9 * 60)])
        #expect(chained.plainDeadline("z1")?.due == utc(2026, 1, 15, 8))
    }

    @Test func checkpointWithZonesEqualsReplay() throws {
        var h = try Self.harness(at: utc(2026, 3, 28, 12), weekly: [(0b001_1111, 9 * 60, 12 * 60)])
        h.run(until: utc(2026, 4, 2))
        var restarted = try h.restartedFromCheckpoint()
        restarted.run(until: utc(2026, 4, 5))
        var settings = ProjectionSettings()
        settings.ladder.zones["Europe/Madrid"] = try Self.madrid()
        var fresh = Projections(settings: settings)
        for e in restarted.log { fresh.apply(e) }
        #expect(try fresh.encoded() == restarted.state.encoded())
        #expect(restarted.escalations.staleDeadlines == 0)
    }
}
