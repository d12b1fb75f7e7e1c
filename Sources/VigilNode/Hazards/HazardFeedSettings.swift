import VigilCore
import VigilHubProtocol

/// The regional hazard feed over MQTT (config `hazards.feed`), as DriveAZ uses it: brokers with
/// reference locations (the nearest to the site first), mutual TLS, the public and vendor
/// channels, and VRU mode. Off while no broker is configured.
public struct HazardFeedSettings: Sendable, Equatable {
    public struct Broker: Sendable, Equatable {
        public var name: String
        public var host: String
        public var port: Int32
        public var latitude: Double
        public var longitude: Double

        public init(name: String, host: String, port: Int32, latitude: Double, longitude: Double) {
            self.name = name
            self.host = host
            self.port = port
            self.latitude = latitude
            self.longitude = longitude
        }

        /// "NAME HOST:PORT LAT,LON" (`phoenix mqtt.example.org:8883 33.4351,-112.0108`).
        public init?(text: String) {
            let parts = text.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 3, parts[0].utf8.count <= 64,
                  let colon = parts[1].lastIndex(of: ":"), let port = Int32(parts[1][parts[1].index(after: colon)...]), (1...65_535).contains(port),
                  let point = GeoPoint(text: String(parts[2]))
                    ?? Self.region(String(parts[2])).flatMap({ GeoPoint(latitude: $0.0, longitude: $0.1) }) else { return nil }
            let host = String(parts[1][..<colon])
            guard !host.isEmpty, host.utf8.count <= 253 else { return nil }
            self.init(name: String(parts[0]), host: host, port: port, latitude: point.latitude, longitude: point.longitude)
        }

        static func region(_ name: String) -> (Double, Double)? { HazardFeedSettings.driveAZRegions[name.lowercased()] }
    }

    /// DriveAZ's five regions and their reference locations: the names a `brokers` entry's
    /// location may be given by instead of coordinates (`phoenix mqtt.example.org:8883 phoenix`).
    public static let driveAZRegions: [String: (Double, Double)] = [
        "phoenix": (33.4351, -112.0108), "atlanta": (33.6323, -84.4348), "detroit": (42.2129, -83.3521),
        "new-york": (40.6379, -73.7778), "los-angeles": (33.9420, -118.4037),
    ]

    public var brokers: [Broker] = []
    /// Mutual TLS: the CA the brokers' certificates chain to, this box's certificate and key
    /// (relative paths are in the data directory). `tls: false` is for a private network only.
    public var tls = true
    public var caFile = "feed/ca.pem"
    public var certificateFile = "feed/box.crt"
    public var keyFile = "feed/box.key"
    /// `Public` and any vendor ids the box may read.
    public var channels = ["Public"]
    /// The MQTT client id (default: `vigil-` and the node id).
    public var clientID: String?
    /// VRU mode: while people are at the box, a PSM for a pedestrian cluster at its site each
    /// second, on `vzimp/1/GeoRelevance/<publishRegion>/<publishCell>/Public/j2735/PSM/<id>`.
    public var vru = true
    public var publishRegion = "vigil"
    public var publishCell = "0"
    /// Road-user reports appended and not yet durable, at most; more are shed (counted), so a
    /// flood never queues ahead of an SOS.
    public var maximumInFlight = 256
    /// A road user's reports are logged at most this often (its first, and any that makes it
    /// relevant, at once); the rest are counted as coalesced.
    public var roadUserLogIntervalMicroseconds: UInt64 = 1_000_000
    /// A work zone's or queue's repeats are logged when they change, or this often.
    public var zoneLogIntervalMicroseconds: UInt64 = 300_000_000
    /// Reconnection back-off, doubling from the first to the second.
    public var retryBaseMicroseconds: UInt64 = 1_000_000
    public var retryMaxMicroseconds: UInt64 = 60_000_000
    /// Failed tries in a row on one broker before the next-nearest is tried.
    public var failuresBeforeFailover = 2

    public var enabled: Bool { !brokers.isEmpty }

    public init() {}

    /// The brokers nearest the site first (configuration order without a site, or on ties).
    public func brokersByDistance(from site: HazardSite?) -> [Broker] {
        guard let site else { return brokers }
        return brokers.enumerated().sorted { a, b in
            let da = HazardGeometry.meters(fromLatitude: site.latitude, longitude: site.longitude, toLatitude: a.element.latitude, longitude: a.element.longitude)
            let db = HazardGeometry.meters(fromLatitude: site.latitude, longitude: site.longitude, toLatitude: b.element.latitude, longitude: b.element.longitude)
            return da != db ? da < db : a.offset < b.offset
        }.map(\.element)
    }
}
