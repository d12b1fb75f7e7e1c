import Foundation
import Testing
import VigilCore
import VigilEvents

/// Active hazards as DriveAZ sees them, with the shelter in the place of the phone: the banner
/// rules with exact figures, pins that leave 10 s after their last message, work zones that last
/// as their message says, one warning and then 30 s of quiet.
@Suite struct HazardBookTests {
    /// A shelter by an east-west road (Phoenix, near DriveAZ's reference point).
    let site = HazardSite(latitude: 33.4351, longitude: -112.0108)
    let origin: UInt64 = 1_800_000_000_000_000
    var sequence: UInt64 = 0
    static let metersPerFoot = 0.3048
    static let mph = 0.447_04 // m/s

    mutating func event(_ body: EventBody, at seconds: Double) -> Event {
        sequence += 1
        return Event(sequence: sequence, timeMicroseconds: origin + UInt64(seconds * 1_000_000), body: body)
    }

    /// A point `north` and `east` feet from the site.
    func offset(north: Double, east: Double) -> (latitude: Double, longitude: Double) {
        let metersPerDegree = 111_195.08 // the sphere's: 2πR / 360
        return (site.latitude + north * Self.metersPerFoot / metersPerDegree,
                site.longitude + east * Self.metersPerFoot / (metersPerDegree * cos(site.latitude * .pi / 180)))
    }

    func report(_ kind: HazardKind, id: String = "a", north: Double, east: Double, heading: Double? = nil,
                mph: Double? = nil, expiresUs: UInt64 = 0) -> EventBody {
        let p = offset(north: north, east: east)
        var h = HazardReported()
        h.id = id
        h.kind = kind
        h.source = .mqtt
        h.messageType = kind == .workZone || kind == .trafficJam ? "TIM" : "PSM"
        h.latitudeE7 = Int32((p.latitude * 1e7).rounded())
        h.longitudeE7 = Int32((p.longitude * 1e7).rounded())
        if let heading { h.headingCentidegrees = UInt32(heading * 100) }
        if let mph { h.speedCmPerS = UInt32((mph * Self.mph * 100).rounded()) }
        h.expiresUs = expiresUs
        return .hazardReported(h)
    }

    func deadline(_ seconds: Double) -> EventBody {
        var d = HazardDeadline()
        d.dueUs = origin + UInt64(seconds * 1_000_000)
        return .hazardDeadline(d)
    }

    func judge(_ kind: HazardKind, north: Double, east: Double, heading: Double?, mph: Double?, site: HazardSite? = nil) -> HazardRelevance.Verdict {
        let p = offset(north: north, east: east)
        return HazardRelevance.judge(kind: kind, latitude: p.latitude, longitude: p.longitude, headingDegrees: heading,
                                     speedMetersPerSecond: mph.map { $0 * Self.mph }, site: site ?? self.site)
    }

    func isRelevant(_ v: HazardRelevance.Verdict) -> Bool { if case .relevant = v { true } else { false } }

    @Test func theAlertDistanceIsOneStoppingFormulaThroughDriveAZsFigures() {
        // DriveAZ: about 300 ft at 25 mph, 700 at 55, 950 at 70.
        #expect(abs(HazardRelevance.alertDistanceFeet(mph: 25) - 296.9) < 0.1)
        #expect(abs(HazardRelevance.alertDistanceFeet(mph: 55) - 711.2) < 0.1)
        #expect(abs(HazardRelevance.alertDistanceFeet(mph: 70) - 941.9) < 0.1)
        for (mph, driveAZ) in [(25.0, 300.0), (55, 700), (70, 950)] {
            #expect(abs(HazardRelevance.alertDistanceFeet(mph: mph) - driveAZ) / driveAZ < 0.02, "within 2% of DriveAZ's \(driveAZ) ft")
        }
        #expect(HazardRelevance.alertDistanceFeet(mph: 0) == 0)
    }

    @Test func aRoadUserHeadingForTheSiteWithinItsDistanceIsRelevant() {
        // 280 ft south, driving north at 25 mph (297 ft): relevant; 320 ft: not yet.
        #expect(isRelevant(judge(.vehicle, north: -280, east: 0, heading: 0, mph: 25)))
        #expect(!isRelevant(judge(.vehicle, north: -320, east: 0, heading: 0, mph: 25)))
        // At 55 mph the same car is relevant from 700 ft.
        #expect(isRelevant(judge(.vehicle, north: -700, east: 0, heading: 0, mph: 55)))
        #expect(!isRelevant(judge(.vehicle, north: -720, east: 0, heading: 0, mph: 55)))
        #expect(isRelevant(judge(.vehicle, north: -930, east: 0, heading: 0, mph: 70)))
        #expect(!isRelevant(judge(.vehicle, north: -960, east: 0, heading: 0, mph: 70)))
        // The cone: 22.5° either side of the bearing to the site.
        #expect(isRelevant(judge(.vehicle, north: -200, east: 0, heading: 22, mph: 25)))
        #expect(isRelevant(judge(.vehicle, north: -200, east: 0, heading: 338, mph: 25)))
        #expect(!isRelevant(judge(.vehicle, north: -200, east: 0, heading: 23, mph: 25)))
        #expect(!isRelevant(judge(.vehicle, north: -200, east: 0, heading: 180, mph: 25)), "driving away")
        // Not moving: no warning, however close.
        #expect(judge(.vehicle, north: -20, east: 0, heading: 0, mph: 0) == .notRelevant("not moving"))
        #expect(judge(.pedestrian, north: -20, east: 0, heading: nil, mph: 3) == .notRelevant("no course"))
        // A cyclist at 12 mph: 137 ft.
        #expect(isRelevant(judge(.cyclist, north: 0, east: -130, heading: 90, mph: 12)))
        #expect(!isRelevant(judge(.cyclist, north: 0, east: -150, heading: 90, mph: 12)))
    }

    @Test func aWorkZoneOrJamIsRelevantWithin1600FeetWhateverTheSpeed() {
        #expect(isRelevant(judge(.workZone, north: 1_200, east: 1_000, heading: nil, mph: nil)))   // 1,562 ft
        #expect(!isRelevant(judge(.workZone, north: 1_300, east: 1_000, heading: nil, mph: nil)))  // 1,640 ft
        #expect(isRelevant(judge(.trafficJam, north: 0, east: -1_500, heading: nil, mph: nil)))
    }

    @Test func alongTheRoadTowardTheEntranceCountsWhenTheRoadsDirectionIsKnown() {
        // 100 ft west and 50 ft north of the entrance, in the far lane, driving east along the
        // road: the bearing to the site is 117°, 27° off its course.
        #expect(!isRelevant(judge(.vehicle, north: 50, east: -100, heading: 90, mph: 25)))
        let byTheRoad = HazardSite(latitude: site.latitude, longitude: site.longitude, roadDirectionDegrees: 90)
        #expect(isRelevant(judge(.vehicle, north: 50, east: -100, heading: 90, mph: 25, site: byTheRoad)))
        #expect(isRelevant(judge(.vehicle, north: -50, east: 100, heading: 270, mph: 25, site: byTheRoad)), "either way along the road")
        #expect(!isRelevant(judge(.vehicle, north: 50, east: 100, heading: 90, mph: 25, site: byTheRoad)), "past the entrance: behind it")
        #expect(!isRelevant(judge(.vehicle, north: 50, east: -100, heading: 0, mph: 25, site: byTheRoad)), "crossing the road")
        // A parallel street 150 ft away is not the road, whatever its direction.
        #expect(!isRelevant(judge(.vehicle, north: 150, east: -200, heading: 90, mph: 25, site: byTheRoad)))
    }

    @Test mutating func roadUsersLeaveTenSecondsAfterTheirLastMessageAndZonesWhenTheySay() throws {
        var book = HazardBook(site: site)
        book.apply(event(report(.pedestrian, id: "p1", north: 900, east: 0, heading: 90, mph: 3), at: 0))
        book.apply(event(report(.pedestrian, id: "p1", north: 900, east: 10, heading: 90, mph: 3), at: 5))
        book.apply(event(report(.workZone, id: "z1", north: 5_000, east: 0, expiresUs: origin + 3_600_000_000), at: 6))
        book.apply(event(report(.trafficJam, id: "j1", north: 5_000, east: 100), at: 7))
        #expect(book.hazards.count == 3)
        let p1 = try #require(book.active.first { $0.id == "p1" })
        #expect(p1.messages == 2 && p1.firstMicroseconds == origin && p1.lastMicroseconds == origin + 5_000_000)
        #expect(p1.expiresMicroseconds == origin + 15_000_000)
        #expect(book.nextDueMicroseconds == origin + 15_000_000)

        book.apply(event(deadline(14.9), at: 14.9))
        #expect(book.hazards.count == 3)
        book.apply(event(deadline(15), at: 15))
        #expect(book.hazards.count == 2 && !book.active.contains { $0.id == "p1" })
        // A jam without an end lasts an hour from its last message; the zone until its end.
        #expect(book.active.first { $0.id == "j1" }?.expiresMicroseconds == origin + 7_000_000 + 3_600_000_000)
        book.apply(event(deadline(3_600), at: 3_600))
        #expect(book.active.map(\.id) == ["j1"])
        // A message saying the jam has ended removes it.
        book.apply(event(report(.trafficJam, id: "j1", north: 5_000, east: 100, expiresUs: origin + 1), at: 3_601))
        #expect(book.hazards.isEmpty && book.nextDueMicroseconds == nil)
    }

    @Test mutating func aWarningLastsFiveSecondsThenNoneForThirty() throws {
        var p = Projections()
        p.hazards.site = site
        let towardSite = report(.vehicle, id: "car", north: -250, east: 0, heading: 0, mph: 25)
        p.apply(event(towardSite, at: 0))
        let warning = try #require(p.hazards.warning)
        #expect(warning.startMicroseconds == origin && warning.endsMicroseconds == origin + 5_000_000 && warning.sequence == 1)
        var outputs = OutputPolicy.decide(p, running: true)
        #expect(outputs[.amber]?.pattern == OutputPolicy.hazardFlash && outputs[.buzzer]?.pattern == OutputPolicy.hazardFlash)
        #expect(outputs[.amber]?.reasons.first?.sequences == [1])
        #expect(outputs[.amber]?.reasons.first?.text.contains("vehicle heading for the site, 250 ft away") == true)

        p.apply(event(towardSite, at: 2))                  // while it sounds
        #expect(p.hazards.warningsHeldBack == 1)
        p.apply(event(deadline(5), at: 5))
        #expect(p.hazards.warning == nil)
        outputs = OutputPolicy.decide(p, running: true)
        #expect(outputs[.buzzer]?.pattern == .off)
        p.apply(event(towardSite, at: 20))                 // the quiet time: 5 s + 30 s
        #expect(p.hazards.warning == nil && p.hazards.warningsHeldBack == 2)
        p.apply(event(towardSite, at: 35))
        #expect(p.hazards.warning?.startMicroseconds == origin + 35_000_000 && p.hazards.warningsStarted == 2)
        // A road user not heading for the site never warns.
        var q = Projections()
        q.hazards.site = site
        q.apply(event(report(.vehicle, id: "away", north: -250, east: 0, heading: 180, mph: 25), at: 0))
        #expect(q.hazards.warning == nil && q.hazards.hazards.count == 1)
        // Without a site nothing is relevant.
        var r = Projections()
        r.apply(event(towardSite, at: 0))
        #expect(r.hazards.warning == nil)
    }

    @Test mutating func theBookIsBoundedAndDropsRoadUsersNotZones() {
        var book = HazardBook(site: nil)
        book.apply(event(report(.workZone, id: "zone", north: 0, east: 0), at: 0))
        for i in 0 ..< HazardBook.limit + 10 {
            book.apply(event(report(.pedestrian, id: "p\(i)", north: 900, east: Double(i), heading: 0, mph: 3), at: 1 + Double(i) / 1_000))
        }
        #expect(book.hazards.count == HazardBook.limit)
        #expect(book.dropped == 11)
        #expect(book.active.contains { $0.id == "zone" })
        #expect(!book.active.contains { $0.id == "p0" }, "the road user heard longest ago goes first")
        // A zone takes a road user's place; with only zones left, a road user is not taken.
        book.apply(event(report(.workZone, id: "zone-2", north: 0, east: 10), at: 3))
        #expect(book.hazards.count == HazardBook.limit && book.dropped == 12 && book.active.contains { $0.id == "zone-2" })
        var zones = HazardBook(site: nil)
        for i in 0 ..< HazardBook.limit { zones.apply(event(report(.workZone, id: "z\(i)", north: Double(i), east: 0), at: 1)) }
        zones.apply(event(report(.vehicle, id: "car", north: 0, east: 0, heading: 0, mph: 25), at: 2))
        #expect(zones.hazards.count == HazardBook.limit && zones.dropped == 1 && !zones.active.contains { $0.id == "car" })
        // An id longer than any feed's is not kept.
        var long = HazardBook(site: nil)
        long.apply(event(report(.vehicle, id: String(repeating: "x", count: HazardBook.idLimit + 1), north: 0, east: 0), at: 1))
        #expect(long.hazards.isEmpty && long.reports == 0)
    }

    @Test mutating func aZoneWarnsOnceWhileItLastsAndRoadUsersEveryThirtyFiveSeconds() {
        var book = HazardBook(site: site)
        book.apply(event(report(.workZone, id: "z", north: 300, east: 0), at: 0))
        #expect(book.warningsStarted == 1)
        for t in stride(from: 40.0, through: 400, by: 40) { book.apply(event(report(.workZone, id: "z", north: 300, east: 0), at: t)) }
        #expect(book.warningsStarted == 1, "its message repeats; the people at the shelter were told once")
        // Gone (it said it ended) and back: a new zone, told again.
        book.apply(event(report(.workZone, id: "z", north: 300, east: 0, expiresUs: origin + 1), at: 401))
        book.apply(event(report(.workZone, id: "z", north: 300, east: 0), at: 440))
        #expect(book.warningsStarted == 2)
        book.apply(event(report(.vehicle, id: "car", north: -250, east: 0, heading: 0, mph: 25), at: 480))
        book.apply(event(report(.vehicle, id: "car", north: -250, east: 0, heading: 0, mph: 25), at: 485))
        book.apply(event(report(.vehicle, id: "car", north: -250, east: 0, heading: 0, mph: 25), at: 520))
        #expect(book.warningsStarted == 4 && book.warningsHeldBack == 1)
    }

    @Test mutating func aClockSteppedBackEndsTheWarningAndItsQuietTime() {
        var book = HazardBook(site: site)
        let car = report(.vehicle, id: "car", north: -250, east: 0, heading: 0, mph: 25)
        book.apply(event(car, at: 1_000))
        #expect(book.warning != nil)
        // The clock goes back ten minutes (an RTC-less box corrected by NTP).
        book.apply(event(report(.vehicle, id: "car", north: -200, east: 0, heading: 0, mph: 25), at: 400))
        #expect(book.warningsStarted == 2, "a new warning at once, not after the old timeline's 35 s")
        #expect(book.warning?.startMicroseconds == origin + 400_000_000)
        #expect(book.hazards.count == 1 && book.active.first?.firstMicroseconds == origin + 400_000_000,
                "the old timeline's record of it went with the step; this report starts it again")
        book.apply(event(deadline(405), at: 405))
        #expect(book.warning == nil)
        book.apply(event(deadline(411), at: 411))
        #expect(book.hazards.isEmpty, "10 s after its last report in the new timeline, not ten minutes")
    }

    @Test mutating func theSiteIsTheOneTheLastStartLogged() {
        var p = Projections()
        var started = NodeStarted()
        started.siteLatitudeE7 = Int32((site.latitude * 1e7).rounded())
        started.siteLongitudeE7 = Int32((site.longitude * 1e7).rounded())
        started.roadDirectionCentidegrees = 9_000
        p.apply(event(.nodeStarted(started), at: 0))
        #expect(p.hazards.site?.roadDirectionDegrees == 90)
        #expect(abs((p.hazards.site?.latitude ?? 0) - site.latitude) < 1e-7)
        p.apply(event(report(.vehicle, id: "car", north: -250, east: 0, heading: 0, mph: 25), at: 1))
        #expect(p.hazards.warningsStarted == 1)
        // A start without a site: nothing is judged relevant from then on.
        p.apply(event(.nodeStarted(NodeStarted()), at: 100))
        #expect(p.hazards.site == nil)
        p.apply(event(report(.vehicle, id: "car", north: -250, east: 0, heading: 0, mph: 25), at: 200))
        #expect(p.hazards.warningsStarted == 1)
    }

    @Test mutating func replayThroughACheckpointGivesTheSameBook() throws {
        var events: [Event] = []
        events.append(event(report(.vehicle, id: "car", north: -250, east: 0, heading: 0, mph: 25), at: 0))
        events.append(event(report(.workZone, id: "z", north: 100, east: 0, expiresUs: origin + 60_000_000), at: 1))
        events.append(event(deadline(5), at: 5))
        events.append(event(deadline(10), at: 10.2))
        events.append(event(report(.cyclist, id: "bike", north: 0, east: -100, heading: 90, mph: 12), at: 40))
        var live = Projections()
        live.hazards.site = site
        for e in events.prefix(2) { live.apply(e) }
        var restored = try Projections.decoded(try live.encoded())
        for e in events.dropFirst(2) { live.apply(e); restored.apply(e) }
        var replayed = Projections()
        replayed.hazards.site = site
        for e in events { replayed.apply(e) }
        #expect(try live.encoded() == replayed.encoded())
        #expect(try restored.encoded() == replayed.encoded())
        #expect(replayed.hazards.warningsStarted == 2)
    }
}
