import Foundation // cos, for XY offsets (Glibc through Foundation)

/// SAE J2735's TravelerInformation (TIM), as far as the hazard projection needs it: each data
/// frame's what (its content's kind and ITIS codes), where (each region's anchor and the points
/// of its path or the centre and radius of its circle) and when (start and duration).
///
/// Everything on the way to the content is decoded, because UPER has no lengths to skip by:
/// names, road segment ids, lane widths, headings, paths of XY or latitude/longitude offsets and
/// circles. What a work zone TIM seldom carries and the box never needs is refused as
/// `unsupported` (counted as undecodable by the feed): node attributes, computed lanes, the
/// legacy `oldRegion`, regional node kinds.
public struct TravelerInformation: Equatable, Sendable {
    public var messageCount: Int
    /// UniqueMSGID (9 octets), when sent: the message's identity across repeats.
    public var packetID: [UInt8]?
    public var frames: [Frame]

    public struct Frame: Equatable, Sendable {
        public enum Content: String, Equatable, Sendable {
            case advisory, workZone, genericSign, speedLimit, exitService
        }

        /// TravelerInfoType: 0 unknown, 1 advisory, 2 road signage, 3 commercial signage (nil: newer).
        public var frameType: Int?
        /// FurtherInfoID (2 octets), or nil when the frame names a road sign instead.
        public var furtherInfoID: [UInt8]?
        /// The road sign's position, when the frame names one.
        public var roadSign: Position3D?
        public var startYear: Int?
        /// Minutes since 1 January 00:00 UTC; 527040 means invalid.
        public var startMinuteOfYear: Int
        public var durationMinutes: Int
        public var priority: Int
        public var regions: [Region]
        public var content: Content
        public var itisCodes: [Int]
        public var texts: [String]

        /// UTC microseconds of the start: in `startYear`, or when absent in the year of
        /// `nowMicroseconds` (the one of the years around it that puts the start nearest to now).
        /// Nil when the start is invalid.
        public func startMicroseconds(nowMicroseconds: UInt64) -> UInt64? {
            guard startMinuteOfYear < 527_040 else { return nil }
            let minute = Int64(startMinuteOfYear) * 60_000_000
            if let startYear {
                guard startYear > 1970 else { return nil }
                return UInt64(clamping: CivilTime.microseconds(ofYear: startYear) + minute)
            }
            let year = CivilTime.year(ofMicroseconds: nowMicroseconds)
            let now = Int64(clamping: nowMicroseconds)
            let candidates = [year - 1, year, year + 1].map { CivilTime.microseconds(ofYear: $0) + minute }
            return candidates.min { abs($0 - now) < abs($1 - now) }.map { UInt64(clamping: $0) }
        }
    }

    /// A GeographicalPath.
    public struct Region: Equatable, Sendable {
        public var anchor: Position3D?
        /// The path's points in order, absolute (offsets added up from the anchor).
        public var points: [Position3D]
        /// A circle (GeometricProjection): its centre and radius in metres.
        public var circleCenter: Position3D?
        public var circleMeters: Double?

        /// Every point that says where the region is: its anchor, path points, circle centre.
        public var places: [Position3D] {
            ([anchor, circleCenter].compactMap { $0 } + points).filter(\.isAvailable)
        }
    }

    public static func decode(_ value: [UInt8]) throws(J2735Error) -> TravelerInformation {
        var r = UPERReader(value)
        _ = try r.bit() // extension additions come after the frames: nothing the box reads
        let hasTimeStamp = try r.bit(), hasPacketID = try r.bit(), hasURL = try r.bit()
        _ = try r.bit() // regional, after the frames
        let count = Int(try r.integer(in: 0...127))
        if hasTimeStamp { _ = try r.integer(in: 0...527_040) }
        let packetID = hasPacketID ? try r.octets(9) : nil
        if hasURL { _ = try r.ia5String(1...45) }
        let frameCount = try r.constrainedLength(1...8)
        var frames: [Frame] = []
        for _ in 0 ..< frameCount { frames.append(try readFrame(&r)) }
        return TravelerInformation(messageCount: count, packetID: packetID, frames: frames)
    }

    static func readFrame(_ r: inout UPERReader) throws(J2735Error) -> Frame {
        let extended = try r.bit()
        let hasStartYear = try r.bit(), hasURL = try r.bit()
        _ = try r.integer(in: 0...31) // notUsed
        let frameType = try r.enumerated(4, extensible: true)
        var furtherInfo: [UInt8]?
        var roadSign: Position3D?
        if try r.bit() { // roadSignID
            let hasCode = try r.bit(), hasCRC = try r.bit()
            roadSign = try Position3D.read(&r)
            _ = try r.bits(16) // viewAngle
            if hasCode { _ = try r.enumerated(7, extensible: true) }
            if hasCRC { _ = try r.octets(2) }
        } else {
            furtherInfo = try r.octets(2)
        }
        let startYear = hasStartYear ? Int(try r.integer(in: 0...4_095)) : nil
        let start = Int(try r.integer(in: 0...527_040))
        let duration = Int(try r.integer(in: 0...32_000))
        let priority = Int(try r.integer(in: 0...7))
        _ = try r.integer(in: 0...31) // notUsed1
        let regionCount = try r.constrainedLength(1...16)
        var regions: [Region] = []
        for _ in 0 ..< regionCount { regions.append(try readRegion(&r)) }
        _ = try r.integer(in: 0...31) // notUsed2
        _ = try r.integer(in: 0...31) // notUsed3
        // content: a CHOICE of five (not extensible), each a list of ITIS codes or texts.
        let contents: [Frame.Content] = [.advisory, .workZone, .genericSign, .speedLimit, .exitService]
        let content = contents[Int(try r.integer(in: 0...4))]
        let itemCount = try r.constrainedLength(content == .advisory ? 1...100 : 1...16)
        var codes: [Int] = [], texts: [String] = []
        for _ in 0 ..< itemCount {
            if try r.bit() {
                texts.append(try r.ia5String(content == .advisory ? 1...500 : 1...16))
            } else {
                codes.append(Int(try r.integer(in: 0...65_535)))
            }
        }
        if hasURL { _ = try r.ia5String(1...15) }
        if extended { try r.skipExtensionAdditions() }
        return Frame(frameType: frameType, furtherInfoID: furtherInfo, roadSign: roadSign, startYear: startYear,
                     startMinuteOfYear: start, durationMinutes: duration, priority: priority, regions: regions,
                     content: content, itisCodes: codes, texts: texts)
    }

    static func readRegion(_ r: inout UPERReader) throws(J2735Error) -> Region {
        let extended = try r.bit()
        var present: [Bool] = []
        for _ in 0 ..< 9 { present.append(try r.bit()) }
        if present[0] { _ = try r.ia5String(1...63) } // name
        if present[1] { // RoadSegmentReferenceID
            let hasRegion = try r.bit()
            if hasRegion { _ = try r.bits(16) }
            _ = try r.bits(16)
        }
        let anchor = present[2] ? try Position3D.read(&r) : nil
        if present[3] { _ = try r.integer(in: 0...32_767) } // laneWidth
        if present[4] { _ = try r.bits(2) } // directionality
        if present[5] { _ = try r.bit() } // closedPath
        if present[6] { _ = try r.bits(16) } // direction
        var region = Region(anchor: anchor, points: [], circleCenter: nil, circleMeters: nil)
        if present[7] {
            switch try r.choice(3, extensible: true) {
            case 0: region.points = try readPath(&r, from: anchor)
            case 1: (region.circleCenter, region.circleMeters) = try readGeometry(&r)
            case 2: throw .unsupported("a legacy oldRegion")
            default: break // a newer kind of description, skipped whole
            }
        }
        if present[8] { try r.skipRegionalExtensions() }
        if extended { try r.skipExtensionAdditions() }
        return region
    }

    /// GeometricProjection: its circle.
    static func readGeometry(_ r: inout UPERReader) throws(J2735Error) -> (Position3D, Double?) {
        let extended = try r.bit()
        let hasExtent = try r.bit(), hasLaneWidth = try r.bit(), hasRegional = try r.bit()
        _ = try r.bits(16) // direction
        if hasExtent { _ = try r.bits(4) }
        if hasLaneWidth { _ = try r.integer(in: 0...32_767) }
        let center = try Position3D.read(&r)
        let radius = Double(try r.integer(in: 0...4_095))
        let units = Int(try r.bits(3))
        if hasRegional { try r.skipRegionalExtensions() }
        if extended { try r.skipExtensionAdditions() }
        // centimetre, 2.5 cm, decimetre, metre, kilometre, foot, yard, mile; 4095 is "unknown".
        let metres: [Double] = [0.01, 0.025, 0.1, 1, 1_000, 0.3048, 0.9144, 1_609.344]
        return (center, radius == 4_095 ? nil : radius * metres[units])
    }

    /// OffsetSystem: a zoom, then XY offsets (centimetres) or latitude/longitude offsets (1e-7°),
    /// each from the point before, the first from the anchor. Nodes with attributes are refused.
    static func readPath(_ r: inout UPERReader, from anchor: Position3D?) throws(J2735Error) -> [Position3D] {
        let hasScale = try r.bit()
        let zoom = hasScale ? Int(try r.integer(in: 0...15)) : 0
        let scale = Double(1 << zoom)
        var points: [Position3D] = []
        var lat = Double(anchor?.latitude ?? 0), lon = Double(anchor?.longitude ?? 0)
        // Offsets from no anchor (or an unavailable one) are no place: only an absolute node
        // gives the path a position to go on from.
        var placed = anchor?.isAvailable ?? false
        func add() {
            guard placed else { return }
            let clampedLat = min(max(lat, -900_000_000), 900_000_000)
            let clampedLon = min(max(lon, -1_799_999_999), 1_800_000_000)
            points.append(Position3D(latitude: Int32(clampedLat.rounded()), longitude: Int32(clampedLon.rounded())))
        }
        // One node list either way; the offsets' widths and units are the system's.
        let latLon = try r.bit()
        if latLon {
            guard try r.choice(1, extensible: true) != nil else { return [] }
        } else {
            guard let list = try r.choice(2, extensible: true) else { return [] }
            guard list == 0 else { throw .unsupported("a computed lane") }
        }
        let widths = latLon ? [12, 14, 16, 18, 22, 24] : [10, 11, 12, 13, 14, 16]
        let count = try r.constrainedLength(2...63)
        for _ in 0 ..< count {
            let extended = try r.bit()
            if try r.bit() { throw .unsupported("a path node with attributes") }
            let kind = Int(try r.integer(in: 0...7))
            if kind < 6 {
                let half = Int64(1) << (widths[kind] - 1)
                // Lat/lon: longitude then latitude, 1e-7° each. XY: centimetres east then north.
                let first = Double(try r.integer(in: -half...(half - 1))) * scale
                let second = Double(try r.integer(in: -half...(half - 1))) * scale
                if latLon {
                    lon += first
                    lat += second
                } else {
                    // 1e-7° of latitude is about 1.11 cm.
                    let metersPerE7 = 0.011_119_5
                    let cosLat = max(0.01, cos(lat / 1e7 * .pi / 180))
                    lat += second / 100 / metersPerE7
                    lon += first / 100 / (metersPerE7 * cosLat)
                }
            } else if kind == 6 {
                lon = Double(try r.integer(in: Position3D.longitudeRange))
                lat = Double(try r.integer(in: Position3D.latitudeRange))
                placed = Position3D(latitude: Int32(lat), longitude: Int32(lon)).isAvailable
            } else {
                throw .unsupported("a regional path node")
            }
            if extended { try r.skipExtensionAdditions() }
            add()
        }
        return points
    }
}

/// Proleptic Gregorian arithmetic for J2735's minute-of-the-year times (no Foundation, no clock).
public enum CivilTime {
    /// Days from 1970-01-01 to 1 January of `year`.
    static func daysToJanuaryFirst(_ year: Int) -> Int64 {
        // Howard Hinnant's days_from_civil for month 1, day 1.
        let y = Int64(year) - 1
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy: Int64 = 306 // 1 January counted from 1 March of the year before
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    public static func microseconds(ofYear year: Int) -> Int64 {
        daysToJanuaryFirst(year) * 86_400_000_000
    }

    /// The year of a time, for times up to the year 9999 (later ones count as 9999: the
    /// arithmetic would overflow far past any clock's reading).
    public static func year(ofMicroseconds time: UInt64) -> Int {
        let us = min(time, 253_402_300_799_000_000)
        var year = 1970 + Int(us / 31_556_952_000_000)
        while microseconds(ofYear: year) > Int64(clamping: us) { year -= 1 }
        while microseconds(ofYear: year + 1) <= Int64(clamping: us) { year += 1 }
        return year
    }
}
