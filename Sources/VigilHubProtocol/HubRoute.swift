import Foundation

/// A place on the Earth, in degrees (`site.location` and a hub's reference location:
/// "LATITUDE,LONGITUDE").
public struct GeoPoint: Sendable, Equatable, Codable {
    public var latitude: Double
    public var longitude: Double

    public init?(latitude: Double, longitude: Double) {
        guard (-90...90).contains(latitude), (-180...180).contains(longitude) else { return nil }
        self.latitude = latitude
        self.longitude = longitude
    }

    /// "LATITUDE,LONGITUDE" (spaces allowed); nil for anything else.
    public init?(text: String) {
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]) else { return nil }
        self.init(latitude: lat, longitude: lon)
    }

    public var text: String { "\(latitude),\(longitude)" }

    /// The great-circle distance (haversine, on a sphere of the Earth's mean radius): within
    /// 0.5% of the ellipsoid's, far finer than choosing between regional hubs needs.
    public func kilometres(to other: GeoPoint) -> Double {
        let r = 6_371.0088
        let φ1 = latitude * .pi / 180, φ2 = other.latitude * .pi / 180
        let Δφ = φ2 - φ1, Δλ = (other.longitude - longitude) * .pi / 180
        let a = sin(Δφ / 2) * sin(Δφ / 2) + cos(φ1) * cos(φ2) * sin(Δλ / 2) * sin(Δλ / 2)
        return 2 * r * asin(min(1, a.squareRoot()))
    }
}

/// Which of several hubs a box talks to first (DriveAZ's rule: the nearest of its regional
/// servers): by distance from the box's site; hubs with no reference location, or every hub
/// when the box's own location is unknown, keep the order they were joined in, after those
/// with one.
public enum HubRoute {
    /// Indices into `hubs`, the one to try first first.
    public static func order(_ hubs: [GeoPoint?], from site: GeoPoint?) -> [Int] {
        guard let site else { return Array(hubs.indices) }
        return hubs.indices.sorted { a, b in
            switch (hubs[a].map { site.kilometres(to: $0) }, hubs[b].map { site.kilometres(to: $0) }) {
            case let (x?, y?): x != y ? x < y : a < b
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): a < b
            }
        }
    }
}
