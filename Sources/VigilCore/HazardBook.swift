#if canImport(FoundationEssentials)
import FoundationEssentials
#endif
import Foundation // sin, cos, atan2 (Glibc through Foundation)
import VigilEvents

/// Where the shelter is, for judging hazards (`site.location`, `site.road_direction`).
public struct HazardSite: Sendable, Equatable, Codable {
    public var latitude: Double
    public var longitude: Double
    /// The road's direction at the entrance, degrees clockwise from north (traffic either way),
    /// when configured: a road user driving along the road toward the entrance is heading for
    /// the site even when its course does not point at the site's exact spot.
    public var roadDirectionDegrees: Double?

    public init(latitude: Double, longitude: Double, roadDirectionDegrees: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.roadDirectionDegrees = roadDirectionDegrees
    }
}

/// Great-circle distance and bearing on a sphere of the Earth's mean radius: within 0.5% of the
/// ellipsoid's, far finer than a warning distance of hundreds of feet needs.
public enum HazardGeometry {
    static let earthRadiusMeters = 6_371_008.8
    public static let feetPerMeter = 3.280_839_895

    public static func meters(fromLatitude lat1: Double, longitude lon1: Double, toLatitude lat2: Double, longitude lon2: Double) -> Double {
        let φ1 = lat1 * .pi / 180, φ2 = lat2 * .pi / 180
        let Δφ = φ2 - φ1, Δλ = (lon2 - lon1) * .pi / 180
        let a = sin(Δφ / 2) * sin(Δφ / 2) + cos(φ1) * cos(φ2) * sin(Δλ / 2) * sin(Δλ / 2)
        return 2 * earthRadiusMeters * asin(min(1, a.squareRoot()))
    }

    /// The initial bearing from the first point to the second, degrees clockwise from north, 0..<360.
    public static func bearingDegrees(fromLatitude lat1: Double, longitude lon1: Double, toLatitude lat2: Double, longitude lon2: Double) -> Double {
        let φ1 = lat1 * .pi / 180, φ2 = lat2 * .pi / 180, Δλ = (lon2 - lon1) * .pi / 180
        let y = sin(Δλ) * cos(φ2)
        let x = cos(φ1) * sin(φ2) - sin(φ1) * cos(φ2) * cos(Δλ)
        let θ = atan2(y, x) * 180 / .pi
        return (θ + 360).truncatingRemainder(dividingBy: 360)
    }

    /// The angle between two directions, 0...180 degrees.
    public static func angleBetween(_ a: Double, _ b: Double) -> Double {
        let d = abs(a - b).truncatingRemainder(dividingBy: 360)
        return d > 180 ? 360 - d : d
    }
}

/// DriveAZ's banner rules, with the shelter in the place of the phone: who must be warned of
/// what (docs/hazards.md "Active hazards").
public enum HazardRelevance {
    /// A road user heading within ±22.5° of the bearing to the site (a 45° cone) is heading for it.
    public static let coneHalfAngleDegrees = 22.5
    /// A work zone or the back of a queue within this of the site is relevant, whatever the speed.
    public static let zoneFeet = 1_600.0
    /// Slower than this (a walking pace's fifth) a road user is not moving: no warning.
    public static let movingMetersPerSecond = 0.3
    static let mphPerMeterPerSecond = 2.236_936_292
    /// How far from the road's line through the site a road user still counts as on the road
    /// (its lanes and sidewalks), when `site.road_direction` is set.
    public static let roadHalfWidthFeet = 100.0

    /// The distance at which a road user moving at `mph` is worth a warning: DriveAZ's stopping
    /// distances (about 300 ft at 25 mph, 700 at 55, 950 at 70) as one formula, 7.5 s of travel
    /// plus braking at a friction of 0.95 (v²/30f feet): 297 ft at 25 mph, 711 at 55, 942 at 70.
    public static func alertDistanceFeet(mph: Double) -> Double {
        let feetPerSecondPerMph = 5_280.0 / 3_600
        return feetPerSecondPerMph * mph * 7.5 + mph * mph / (30 * 0.95)
    }

    public enum Verdict: Equatable, Sendable {
        case relevant(distanceFeet: Double)
        case notRelevant(String)
    }

    public static func judge(kind: HazardKind, latitude: Double, longitude: Double, headingDegrees: Double?,
                             speedMetersPerSecond: Double?, site: HazardSite) -> Verdict {
        let feet = HazardGeometry.meters(fromLatitude: latitude, longitude: longitude, toLatitude: site.latitude, longitude: site.longitude)
            * HazardGeometry.feetPerMeter
        switch kind {
        case .workZone, .trafficJam:
            return feet <= zoneFeet ? .relevant(distanceFeet: feet) : .notRelevant(String(format: "%.0f ft away (over %.0f)", feet, zoneFeet))
        case .vehicle, .pedestrian, .cyclist:
            guard let speed = speedMetersPerSecond, speed.isFinite, speed >= movingMetersPerSecond else { return .notRelevant("not moving") }
            guard let heading = headingDegrees, heading.isFinite else { return .notRelevant("no course") }
            let limit = alertDistanceFeet(mph: speed * mphPerMeterPerSecond)
            guard feet <= limit else { return .notRelevant(String(format: "%.0f ft away (over %.0f at its speed)", feet, limit)) }
            let bearing = HazardGeometry.bearingDegrees(fromLatitude: latitude, longitude: longitude, toLatitude: site.latitude, longitude: site.longitude)
            if HazardGeometry.angleBetween(heading, bearing) <= coneHalfAngleDegrees { return .relevant(distanceFeet: feet) }
            // Along the road toward the entrance: on the road (within `roadHalfWidthFeet` of its
            // line through the site, not on a parallel street), its course following the road
            // (either way), and the site ahead of it, not behind.
            if let road = site.roadDirectionDegrees,
               feet * abs(sin((bearing - road) * .pi / 180)) <= roadHalfWidthFeet,
               min(HazardGeometry.angleBetween(heading, road), HazardGeometry.angleBetween(heading, road + 180)) <= coneHalfAngleDegrees,
               HazardGeometry.angleBetween(heading, bearing) < 90 {
                return .relevant(distanceFeet: feet)
            }
            return .notRelevant("not heading for the site")
        default:
            return .notRelevant("an unknown kind")
        }
    }
}

/// Active hazards as DriveAZ sees them (docs/hazards.md "Active hazards"): road users (vehicles,
/// pedestrians, cyclists) from their position reports, work zones and the backs of queues, each
/// with its position, course, speed, source and first and last message. Road users leave 10 s
/// after their last message, as DriveAZ's pins do; zones and jams when their message says.
/// Time enters as `HazardDeadline` events (and every hazard event's own time), so a quiet box
/// expires them too and replay gives the same.
///
/// Warnings: a report that makes a hazard relevant to the site (`HazardRelevance`) starts one,
/// which lasts `warningMicroseconds`; after a warning none starts for
/// `quietAfterWarningMicroseconds`, even while the condition holds (DriveAZ's banner).
///
/// Bounded: at most `limit` hazards; past it the road user heard longest ago is dropped (a zone
/// is never dropped for a road user) and counted.
public struct HazardBook: Codable, Equatable, Sendable {
    public struct Hazard: Codable, Equatable, Sendable {
        public var id: String
        public var kind: Int
        public var source: Int
        public var latitudeE7: Int32
        public var longitudeE7: Int32
        public var headingCentidegrees: UInt32?
        public var speedCentimetersPerSecond: UInt32?
        public var firstMicroseconds: UInt64
        public var lastMicroseconds: UInt64
        public var expiresMicroseconds: UInt64
        public var messages: UInt64
        public var lastSequence: UInt64
        public var messageType: String

        public var hazardKind: HazardKind { HazardKind(rawValue: kind) ?? .unspecified }
        public var isRoadUser: Bool { [.vehicle, .pedestrian, .cyclist].contains(hazardKind) }
    }

    public struct Warning: Codable, Equatable, Sendable {
        /// The hazard's key (`HazardBook.key`) and kind, when it started and ends, how far it was.
        public var hazard: String
        public var kind: Int
        public var startMicroseconds: UInt64
        public var endsMicroseconds: UInt64
        public var distanceFeet: Double
        /// The report that started it (`vigil why`).
        public var sequence: UInt64
    }

    public static let roadUserLifetimeMicroseconds: UInt64 = 10_000_000
    /// A zone or jam whose message gives no end lasts an hour from its last message; none lasts
    /// longer than a week.
    public static let defaultZoneLifetimeMicroseconds: UInt64 = 3_600_000_000
    public static let maximumZoneLifetimeMicroseconds: UInt64 = 7 * 86_400_000_000
    public static let warningMicroseconds: UInt64 = 5_000_000
    public static let quietAfterWarningMicroseconds: UInt64 = 30_000_000
    public static let limit = 1_024
    public static let idLimit = 128

    /// The shelter (nil: `site.location` not configured, so nothing is relevant): the last
    /// `NodeStarted`'s, so a site changed in the configuration judges reports from the start
    /// that logged it on, and replay judges every report as the node did.
    public var site: HazardSite?
    /// Zones and jams that have warned: each warns once while it lasts (a work zone's message
    /// repeats for days; the people at the shelter need telling once, not every 35 s).
    public private(set) var warnedZones: Set<String> = []
    public private(set) var hazards: [String: Hazard] = [:]
    public private(set) var warning: Warning?
    /// When the last warning started (0: never): the next waits for its end and the quiet time.
    public private(set) var lastWarningStartMicroseconds: UInt64 = 0
    public private(set) var warningsStarted: UInt64 = 0
    /// Relevant reports that came while a warning sounded or during the quiet time after it.
    public private(set) var warningsHeldBack: UInt64 = 0
    public private(set) var dropped: UInt64 = 0
    public private(set) var reports: UInt64 = 0

    public init(site: HazardSite? = nil) { self.site = site }

    public static func key(kind: HazardKind, source: HazardSource, id: String) -> String { "\(source.rawValue)/\(kind.rawValue)/\(id)" }

    /// The hazards, most recently heard first (ties by key: the same order on every run).
    public var active: [Hazard] {
        hazards.sorted { ($0.value.lastMicroseconds, $0.key) > ($1.value.lastMicroseconds, $1.key) }.map(\.value)
    }

    /// When the next hazard expires or the warning ends: the node appends a `HazardDeadline` then.
    public var nextDueMicroseconds: UInt64? {
        let expiry = hazards.values.map(\.expiresMicroseconds).min()
        switch (expiry, warning?.endsMicroseconds) {
        case let (e?, w?): return min(e, w)
        case let (e?, nil): return e
        case let (nil, w?): return w
        case (nil, nil): return nil
        }
    }

    public mutating func apply(_ event: Event) {
        switch event.body {
        case .hazardReported(let h):
            advance(to: event.timeMicroseconds)
            report(h, event: event)
        case .hazardDeadline(let d):
            advance(to: max(d.dueUs, event.timeMicroseconds))
        case .nodeStarted(let started):
            site = Self.site(of: started)
        default:
            break
        }
    }

    /// The site a start logged (nil: none configured).
    public static func site(of started: NodeStarted) -> HazardSite? {
        guard started.hasSiteLatitudeE7, started.hasSiteLongitudeE7,
              (-900_000_000...900_000_000).contains(started.siteLatitudeE7),
              (-1_800_000_000...1_800_000_000).contains(started.siteLongitudeE7) else { return nil }
        return HazardSite(latitude: Double(started.siteLatitudeE7) / 1e7, longitude: Double(started.siteLongitudeE7) / 1e7,
                          roadDirectionDegrees: started.hasRoadDirectionCentidegrees
                              ? Double(started.roadDirectionCentidegrees % 36_000) / 100 : nil)
    }

    /// Everything due by `time` ends. A clock stepped back (`time` before a warning began, or
    /// before a road user's last message) ends what the old timeline would have held too long.
    private mutating func advance(to time: UInt64) {
        let limit = time &+ Self.roadUserLifetimeMicroseconds
        if hazards.values.contains(where: { $0.expiresMicroseconds <= time || ($0.isRoadUser && $0.lastMicroseconds > limit) }) {
            hazards = hazards.filter { $0.value.expiresMicroseconds > time && !($0.value.isRoadUser && $0.value.lastMicroseconds > limit) }
        }
        if warnedZones.contains(where: { hazards[$0] == nil }) { warnedZones = warnedZones.filter { hazards[$0] != nil } }
        if let w = warning, w.endsMicroseconds <= time || time < w.startMicroseconds { warning = nil }
        if time < lastWarningStartMicroseconds { lastWarningStartMicroseconds = 0 }
    }

    private mutating func report(_ h: HazardReported, event: Event) {
        let time = event.timeMicroseconds
        // Ids and message types are short in every feed; a longer one is not a hazard the box
        // keeps (1,024 of them must stay small).
        guard [HazardKind.vehicle, .pedestrian, .cyclist, .trafficJam, .workZone].contains(h.kind),
              h.id.utf8.count <= Self.idLimit, h.messageType.utf8.count <= 16,
              (-900_000_000...900_000_000).contains(h.latitudeE7), (-1_800_000_000...1_800_000_000).contains(h.longitudeE7) else { return }
        reports &+= 1
        let k = Self.key(kind: h.kind, source: h.source, id: h.id)
        let roadUser = [HazardKind.vehicle, .pedestrian, .cyclist].contains(h.kind)
        let expires: UInt64
        if roadUser {
            expires = time &+ Self.roadUserLifetimeMicroseconds
        } else if h.expiresUs > time {
            expires = min(h.expiresUs, time &+ Self.maximumZoneLifetimeMicroseconds)
        } else if h.expiresUs != 0 {
            // It says it has ended already: gone.
            hazards[k] = nil
            warnedZones.remove(k)
            return
        } else {
            expires = time &+ Self.defaultZoneLifetimeMicroseconds
        }
        var hazard = hazards[k] ?? Hazard(id: h.id, kind: h.kind.rawValue, source: h.source.rawValue, latitudeE7: 0, longitudeE7: 0,
                                          firstMicroseconds: time, lastMicroseconds: time, expiresMicroseconds: expires, messages: 0,
                                          lastSequence: 0, messageType: h.messageType)
        hazard.latitudeE7 = h.latitudeE7
        hazard.longitudeE7 = h.longitudeE7
        hazard.headingCentidegrees = h.hasHeadingCentidegrees && h.headingCentidegrees < 36_000 ? h.headingCentidegrees : nil
        hazard.speedCentimetersPerSecond = h.hasSpeedCmPerS ? h.speedCmPerS : nil
        hazard.lastMicroseconds = max(hazard.lastMicroseconds, time)
        hazard.expiresMicroseconds = expires
        hazard.messages &+= 1
        hazard.lastSequence = event.sequence
        hazard.messageType = h.messageType
        if hazards[k] == nil && hazards.count >= Self.limit && !makeRoom(for: roadUser) { dropped &+= 1; return }
        hazards[k] = hazard
        warnIfRelevant(hazard, key: k, event: event)
    }

    /// Drops the road user heard longest ago; false when only zones are left (a road user is
    /// then not taken; a zone takes a road user's place only).
    private mutating func makeRoom(for roadUser: Bool) -> Bool {
        guard let oldest = hazards.filter({ $0.value.isRoadUser })
            .min(by: { ($0.value.lastMicroseconds, $0.key) < ($1.value.lastMicroseconds, $1.key) }) else { return false }
        hazards[oldest.key] = nil
        dropped &+= 1
        return true
    }

    private mutating func warnIfRelevant(_ h: Hazard, key: String, event: Event) {
        guard let site else { return }
        let verdict = HazardRelevance.judge(kind: h.hazardKind, latitude: Double(h.latitudeE7) / 1e7, longitude: Double(h.longitudeE7) / 1e7,
                                            headingDegrees: h.headingCentidegrees.map { Double($0) / 100 },
                                            speedMetersPerSecond: h.speedCentimetersPerSecond.map { Double($0) / 100 }, site: site)
        guard case .relevant(let feet) = verdict else { return }
        // A zone or jam warns once while it lasts.
        guard h.isRoadUser || !warnedZones.contains(key) else { return }
        let time = event.timeMicroseconds
        if warning != nil || (lastWarningStartMicroseconds > 0
            && time < lastWarningStartMicroseconds &+ Self.warningMicroseconds &+ Self.quietAfterWarningMicroseconds) {
            warningsHeldBack &+= 1
            return
        }
        warning = Warning(hazard: key, kind: h.kind, startMicroseconds: time, endsMicroseconds: time &+ Self.warningMicroseconds,
                          distanceFeet: feet, sequence: event.sequence)
        lastWarningStartMicroseconds = time
        warningsStarted &+= 1
        if !h.isRoadUser { warnedZones.insert(key) }
    }

    public static func name(_ kind: HazardKind) -> String { kind.displayName }
    public static func name(_ source: HazardSource) -> String { source.displayName }
}
