/// SAE J2735's PersonalSafetyMessage (PSM), as far as the hazard projection needs it: who (the
/// kind of road user and its temporary id), where, how fast and which way, and the size of a
/// pedestrian cluster. Decoded from its UPER encoding; whatever follows `heading` is read only
/// as far as `clusterSize` can be reached without decoding path histories.
///
/// Layout (root of the 2016 and 2020 schemas, identical on the wire): an extension bit; 18
/// presence bits (accelSet, pathHistory, pathPrediction, propulsion, useState, crossRequest,
/// crossState, clusterSize, clusterRadius, eventResponderType, activityType, activitySubType,
/// assistType, sizing, attachment, attachmentRadius, animalType, regional); basicType
/// (extensible enumeration of 5); secMark (16 bits); msgCnt (7); id (4 octets); position
/// (Position3D: an extension bit, elevation and regional presence, latitude in 31 bits from
/// -900000000, longitude in 32 bits from -1799999999, elevation in 16 bits from -4096, regional
/// extensions); accuracy (8, 8, 16 bits); speed (13 bits, 0.02 m/s, 8191 unavailable); heading
/// (15 bits, 0.0125°, 28800 unavailable).
public struct PersonalSafetyMessage: Equatable, Sendable {
    public enum UserType: Equatable, Sendable {
        case unavailable, pedestrian, pedalCyclist, publicSafetyWorker, animal
        /// A type a newer schema added (its extension index).
        case other(Int)
    }

    /// NumberOfParticipantsInCluster (extensible; root: unavailable, small, medium, large).
    public enum ClusterSize: Int, Equatable, Sendable {
        case unavailable = 0, small, medium, large
        /// A value a newer schema added.
        case unknown = 99
    }

    public var userType: UserType
    public var secondMark: UInt16
    public var messageCount: UInt8
    public var temporaryID: [UInt8]
    /// 1e-7 degrees; 900000001 / 1800000001 mean unavailable.
    public var latitude: Int32
    public var longitude: Int32
    /// 0.1 m; nil when absent (or -4096: unavailable).
    public var elevation: Int32?
    /// 0.02 m/s units; 8191 unavailable.
    public var speed: UInt16
    /// 0.0125° units clockwise from north; 28800 unavailable.
    public var heading: UInt16
    /// nil when absent, or when optional parts before it (path history and the like) are
    /// present: the decoder does not read those.
    public var clusterSize: ClusterSize?

    public static let speedUnavailable: UInt16 = 8_191
    public static let headingUnavailable: UInt16 = 28_800
    public static let latitudeUnavailable: Int32 = 900_000_001
    public static let longitudeUnavailable: Int32 = 1_800_000_001

    /// Metres a second, nil when unavailable.
    public var metersPerSecond: Double? { speed == Self.speedUnavailable ? nil : Double(speed) * 0.02 }
    /// Degrees clockwise from north, nil when unavailable.
    public var headingDegrees: Double? { heading == Self.headingUnavailable ? nil : Double(heading) * 0.0125 }
    /// Whether the position is a real one.
    public var hasPosition: Bool { latitude != Self.latitudeUnavailable && longitude != Self.longitudeUnavailable }

    public init(userType: UserType, secondMark: UInt16, messageCount: UInt8, temporaryID: [UInt8], latitude: Int32,
                longitude: Int32, elevation: Int32? = nil, speed: UInt16, heading: UInt16, clusterSize: ClusterSize? = nil) {
        self.userType = userType
        self.secondMark = secondMark
        self.messageCount = messageCount
        self.temporaryID = temporaryID
        self.latitude = latitude
        self.longitude = longitude
        self.elevation = elevation
        self.speed = speed
        self.heading = heading
        self.clusterSize = clusterSize
    }

    static let optionalCount = 18
    static let clusterSizeIndex = 7

    public static func decode(_ value: [UInt8]) throws(J2735Error) -> PersonalSafetyMessage {
        var r = UPERReader(value)
        _ = try r.bit() // extension: additions come after the root, which is all this reads
        var present: [Bool] = []
        for _ in 0 ..< optionalCount { present.append(try r.bit()) }
        let userType: UserType
        if try r.bit() {
            userType = .other(try r.normallySmall())
        } else {
            switch try r.integer(in: 0...4) {
            case 0: userType = .unavailable
            case 1: userType = .pedestrian
            case 2: userType = .pedalCyclist
            case 3: userType = .publicSafetyWorker
            default: userType = .animal
            }
        }
        let secMark = UInt16(try r.integer(in: 0...65_535))
        let msgCnt = UInt8(try r.integer(in: 0...127))
        let id = try r.octets(4)
        let position = try Position3D.read(&r)
        let (lat, long, elevation) = (position.latitude, position.longitude, position.elevation)
        // PositionalAccuracy: semi-major, semi-minor, orientation.
        _ = try r.bits(8 + 8 + 16)
        let speed = UInt16(try r.integer(in: 0...8_191))
        let heading = UInt16(try r.integer(in: 0...28_800))
        // clusterSize, when nothing before it needs decoding to be skipped.
        var cluster: ClusterSize?
        if present[clusterSizeIndex], !present[..<clusterSizeIndex].contains(true) {
            if try r.bit() {
                _ = try r.normallySmall()
                cluster = .unknown
            } else {
                cluster = ClusterSize(rawValue: Int(try r.integer(in: 0...3))) ?? .unknown
            }
        }
        return PersonalSafetyMessage(userType: userType, secondMark: secMark, messageCount: msgCnt, temporaryID: id,
                                     latitude: lat, longitude: long, elevation: elevation,
                                     speed: speed, heading: heading, clusterSize: cluster)
    }
}

extension PersonalSafetyMessage {
    /// The PSM's UPER encoding (the box's own, in VRU mode): the root up to the heading, the
    /// elevation when known and the cluster size when set; no path history, no extensions.
    public func encode() -> [UInt8] {
        var w = UPERWriter()
        w.bit(false)
        for index in 0 ..< Self.optionalCount { w.bit(index == Self.clusterSizeIndex && clusterSize != nil) }
        switch userType {
        case .other(let n):
            w.bit(true)
            w.bit(false)
            w.bits(UInt64(min(max(n, 0), 63)), 6)
        default:
            w.bit(false)
            let index: Int64 = switch userType {
            case .pedestrian: 1
            case .pedalCyclist: 2
            case .publicSafetyWorker: 3
            case .animal: 4
            default: 0
            }
            w.integer(index, in: 0...4)
        }
        w.integer(Int64(secondMark), in: 0...65_535)
        w.integer(Int64(messageCount), in: 0...127)
        w.octets(Array((temporaryID + [0, 0, 0, 0]).prefix(4)))
        w.bit(false)
        w.bit(elevation != nil)
        w.bit(false)
        w.integer(Int64(latitude), in: Position3D.latitudeRange)
        w.integer(Int64(longitude), in: Position3D.longitudeRange)
        if let elevation { w.integer(Int64(elevation), in: -4_096...61_439) }
        // Accuracy unavailable: semi-major and semi-minor 255, orientation 65535.
        w.bits(255, 8)
        w.bits(255, 8)
        w.bits(65_535, 16)
        w.integer(Int64(speed), in: 0...8_191)
        w.integer(Int64(heading), in: 0...28_800)
        if let clusterSize {
            w.bit(false)
            w.integer(Int64(clusterSize == .unknown ? 0 : clusterSize.rawValue), in: 0...3)
        }
        return w.bytes
    }
}
