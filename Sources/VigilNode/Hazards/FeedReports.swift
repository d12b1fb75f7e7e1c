import VigilCore
import VigilEvents
import VigilHex
import VigilJ2735

/// What the hazard feed makes of a decoded message: the `HazardReported` it would log, or nil
/// for nothing the projection holds. Pure: the site, the box's own PSM ids and the time are given.
enum FeedReports {
    /// The ITIS codes (SAE J2540-2) that make a TIM a work zone, or the back of a queue.
    static let roadWorkCodes: ClosedRange<Int> = 1_025...1_037
    static let queueCodes: Set<Int> = [257, 258, 259, 262, 263]

    /// A pedestrian, public safety worker or cyclist with a position; not one of the box's own.
    static func report(_ psm: PersonalSafetyMessage, ownIDs: [[UInt8]]) -> HazardReported? {
        let kind: HazardKind
        switch psm.userType {
        case .pedestrian, .publicSafetyWorker, .unavailable: kind = .pedestrian
        case .pedalCyclist: kind = .cyclist
        default: return nil
        }
        guard psm.hasPosition, !ownIDs.contains(psm.temporaryID) else { return nil }
        var report = HazardReported()
        report.id = Hex.encode(psm.temporaryID).uppercased()
        report.kind = kind
        report.source = .mqtt
        report.latitudeE7 = psm.latitude
        report.longitudeE7 = psm.longitude
        if let degrees = psm.headingDegrees { report.headingCentidegrees = UInt32((degrees * 100).rounded()) % 36_000 }
        if psm.speed != PersonalSafetyMessage.speedUnavailable { report.speedCmPerS = UInt32(psm.speed) * 2 }
        report.messageType = "PSM"
        return report
    }

    /// One entry per data frame: a work zone or queue at the point of its regions nearest the
    /// site, expiring when its start and duration say, with a signature that changes when any
    /// of that does; nil for a frame that is neither, has no place, or is not current.
    static func reports(_ tim: TravelerInformation, topicID: String, site: HazardSite?,
                        nowMicroseconds wall: UInt64) -> [(HazardReported, signature: String)?] {
        tim.frames.enumerated().map { index, frame in
            let kind: HazardKind
            if frame.content == .workZone || frame.itisCodes.contains(where: roadWorkCodes.contains) {
                kind = .workZone
            } else if frame.itisCodes.contains(where: queueCodes.contains) {
                kind = .trafficJam
            } else {
                return nil
            }
            let places = frame.regions.flatMap(\.places)
            guard var place = places.first, let start = frame.startMicroseconds(nowMicroseconds: wall) else { return nil }
            if let site {
                // The point of the zone nearest the site is where it matters to the site.
                func meters(_ p: Position3D) -> Double {
                    HazardGeometry.meters(fromLatitude: Double(p.latitude) / 1e7, longitude: Double(p.longitude) / 1e7,
                                          toLatitude: site.latitude, longitude: site.longitude)
                }
                place = places.min { meters($0) < meters($1) } ?? place
            }
            // 32000 minutes is "until further notice": the zone lives while its message repeats.
            let end = frame.durationMinutes >= 32_000 ? 0 : start &+ UInt64(frame.durationMinutes) * 60_000_000
            guard start <= wall &+ 60_000_000, end == 0 || end > wall else { return nil } // not started, or over
            var report = HazardReported()
            let base = tim.packetID.map { Hex.encode($0).uppercased() } ?? topicID
            report.id = tim.frames.count > 1 ? "\(base)/\(index)" : base
            report.kind = kind
            report.source = .mqtt
            report.latitudeE7 = place.latitude
            report.longitudeE7 = place.longitude
            report.expiresUs = end
            report.messageType = "TIM"
            return (report, "\(place.latitude),\(place.longitude),\(end),\(kind.rawValue)")
        }
    }

    /// Whether a road user's report would warn at `site` (DriveAZ's rules, `HazardRelevance`).
    static func isRelevant(_ report: HazardReported, to site: HazardSite?) -> Bool {
        guard let site else { return false }
        let verdict = HazardRelevance.judge(
            kind: report.kind, latitude: Double(report.latitudeE7) / 1e7, longitude: Double(report.longitudeE7) / 1e7,
            headingDegrees: report.hasHeadingCentidegrees ? Double(report.headingCentidegrees) / 100 : nil,
            speedMetersPerSecond: report.hasSpeedCmPerS ? Double(report.speedCmPerS) / 100 : nil, site: site)
        if case .relevant = verdict { return true }
        return false
    }
}

/// Which of the feed's reports are worth the card (docs/hazards.md "The regional feed over MQTT"): a
/// road user at most once per `roadUserInterval`, at once when it becomes relevant; a zone when
/// it changes, or once per `zoneInterval`. Road users and zones are remembered apart, so a flood
/// of road users fills its own memory (then shed), never the zones'. Pure: times are given.
struct FeedMemory {
    struct Logged { var atMicroseconds: UInt64; var relevant: Bool; var signature: String }
    enum Verdict: Equatable { case worthLogging, repeatOfLogged, full }

    let roadUserIntervalMicroseconds: UInt64
    let zoneIntervalMicroseconds: UInt64
    static let roadUserLimit = 4_096
    static let zoneLimit = 1_024
    private(set) var roadUsers: [String: Logged] = [:]
    private(set) var zones: [String: Logged] = [:]

    func judge(_ key: String, roadUser: Bool, relevant: Bool, signature: String, atMicroseconds t: UInt64) -> Verdict {
        let last = roadUser ? roadUsers[key] : zones[key]
        if let last {
            let quiet = roadUser ? roadUserIntervalMicroseconds : zoneIntervalMicroseconds
            let newlyRelevant = relevant && !last.relevant
            let changed = !roadUser && last.signature != signature
            return t &- last.atMicroseconds < quiet && !newlyRelevant && !changed ? .repeatOfLogged : .worthLogging
        }
        let room = roadUser ? roadUsers.count < Self.roadUserLimit : zones.count < Self.zoneLimit
        return room ? .worthLogging : .full
    }

    mutating func logged(_ key: String, roadUser: Bool, relevant: Bool, signature: String, atMicroseconds t: UInt64) {
        let entry = Logged(atMicroseconds: t, relevant: relevant, signature: signature)
        if roadUser { roadUsers[key] = entry } else { zones[key] = entry }
    }

    /// A road user is remembered while it could still be in the projection (its lifetime after
    /// its last logged report), a zone for its interval: what is older would be logged anew.
    mutating func forget(atMicroseconds t: UInt64) {
        let roadUserAge = max(roadUserIntervalMicroseconds, HazardBook.roadUserLifetimeMicroseconds)
        roadUsers = roadUsers.filter { t &- $0.value.atMicroseconds < roadUserAge }
        zones = zones.filter { t &- $0.value.atMicroseconds < zoneIntervalMicroseconds }
    }
}
