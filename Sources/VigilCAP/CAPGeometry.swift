import Foundation

/// A point in WGS 84 degrees, as CAP writes one: "latitude,longitude".
public struct CAPPoint: Sendable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Reads "lat,lon" (decimal degrees in range); nil otherwise.
    init?(pair: Substring) {
        let parts = pair.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 2, let lat = CAPPoint.degrees(parts[0], limit: 90), let lon = CAPPoint.degrees(parts[1], limit: 180) else {
            return nil
        }
        self.init(latitude: lat, longitude: lon)
    }

    /// A decimal number of degrees within ±limit (no exponents, no "nan", no "inf").
    static func degrees(_ text: Substring, limit: Double) -> Double? {
        guard !text.isEmpty, text.count <= 24,
              text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D || $0 == 0x2B }),
              let value = Double(text), value.isFinite, abs(value) <= limit else { return nil }
        return value
    }

    /// Great-circle distance in kilometres (haversine on a sphere of the mean Earth radius; within
    /// 0.5 % of the ellipsoid, which is finer than any warning's circle is drawn).
    public func kilometres(to other: CAPPoint) -> Double {
        let r = 6371.0088
        let radians = Double.pi / 180
        let dLat = (other.latitude - latitude) * radians
        let dLon = (other.longitude - longitude) * radians
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(latitude * radians) * cos(other.latitude * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * r * asin(min(1, a.squareRoot()))
    }
}

/// A closed polygon: at least four points, the first and the last the same (CAP 1.2, 3.3.2.1).
public struct CAPPolygon: Sendable, Equatable, Codable {
    public var points: [CAPPoint]

    public init(points: [CAPPoint]) { self.points = points }

    /// Whether `point` lies inside (even-odd rule on latitude/longitude as a plane, as CAP
    /// consumers commonly do; a polygon across the antimeridian is not read as one).
    public func contains(_ point: CAPPoint) -> Bool {
        var inside = false
        var j = points.count - 1
        for i in points.indices {
            let a = points[i], b = points[j]
            if (a.latitude > point.latitude) != (b.latitude > point.latitude) {
                let crossing = (b.longitude - a.longitude) * (point.latitude - a.latitude) / (b.latitude - a.latitude) + a.longitude
                if point.longitude < crossing { inside.toggle() }
            }
            j = i
        }
        return inside
    }
}

/// A circle: a centre and a radius in kilometres ("lat,lon radius").
public struct CAPCircle: Sendable, Equatable, Codable {
    public var center: CAPPoint
    public var radiusKilometres: Double

    public init(center: CAPPoint, radiusKilometres: Double) {
        self.center = center
        self.radiusKilometres = radiusKilometres
    }

    public func contains(_ point: CAPPoint) -> Bool { center.kilometres(to: point) <= radiusKilometres }
}

extension CAPArea {
    /// Whether `point` is in any of the area's shapes.
    public func contains(_ point: CAPPoint) -> Bool {
        polygons.contains { $0.contains(point) } || circles.contains { $0.contains(point) }
    }
}
