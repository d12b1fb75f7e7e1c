/// J2735's Position3D: latitude and longitude in 1e-7 degrees, an optional elevation in 0.1 m.
/// The PSM's position, a TIM region's anchor, a circle's centre, a road sign's place.
public struct Position3D: Equatable, Sendable {
    /// 1e-7 degrees; 900000001 means unavailable.
    public var latitude: Int32
    /// 1e-7 degrees; 1800000001 means unavailable.
    public var longitude: Int32
    /// 0.1 m; nil when absent or unavailable (-4096).
    public var elevation: Int32?

    public init(latitude: Int32, longitude: Int32, elevation: Int32? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.elevation = elevation
    }

    public static let latitudeRange: ClosedRange<Int64> = -900_000_000...900_000_001
    public static let longitudeRange: ClosedRange<Int64> = -1_799_999_999...1_800_000_001

    /// An extension bit, elevation and regional presence, latitude in 31 bits, longitude in 32,
    /// elevation in 16, regional extensions (skipped), extension additions (skipped).
    static func read(_ r: inout UPERReader) throws(J2735Error) -> Position3D {
        let extended = try r.bit()
        let hasElevation = try r.bit(), hasRegional = try r.bit()
        let lat = Int32(try r.integer(in: latitudeRange))
        let long = Int32(try r.integer(in: longitudeRange))
        let elevation = hasElevation ? Int32(try r.integer(in: -4_096...61_439)) : nil
        if hasRegional { try r.skipRegionalExtensions() }
        if extended { try r.skipExtensionAdditions() }
        return Position3D(latitude: lat, longitude: long, elevation: elevation == -4_096 ? nil : elevation)
    }

    /// Whether both coordinates are real ones.
    public var isAvailable: Bool { latitude != 900_000_001 && longitude != 1_800_000_001 }
}
