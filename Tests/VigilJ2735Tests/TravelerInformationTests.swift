import Foundation
import Testing
import VigilJ2735

/// TIMs (work zones, queues) and GeoRoutedMsg envelopes from independent encoders (asn1tools and
/// protoc; `scripts/j2735-vectors`), decoded to the values they were made from; cut and mangled
/// ones refused, never a trap.
@Suite struct TravelerInformationTests {
    struct TIMVectors: Decodable {
        struct Vector: Decodable {
            struct Expected: Decodable {
                var content: String
                var itis: [Int]
                var anchorLatitude: Int32
                var anchorLongitude: Int32
                var startYear: Int
                var startMinuteOfYear: Int
                var durationMinutes: Int
                var circleMeters: Double?
                var points: [[Int32]]
                var packetID: String?
                var texts: [String]
            }
            var name: String
            var frame: String
            var tim: String
            var expected: Expected
        }
        var vectors: [Vector]
    }

    struct RoutedVectors: Decodable {
        struct Vector: Decodable {
            struct Expected: Decodable { var seconds: Int64; var nanos: Int32; var latitude: Double; var longitude: Double }
            var name: String
            var payload: String
            var frame: String
            var expected: Expected
        }
        var vectors: [Vector]
    }

    static func load<T: Decodable>(_ name: String, as: T.Type) -> T? {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors"),
              let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    static let tims = load("tim", as: TIMVectors.self)?.vectors ?? []
    static let routed = load("georouted", as: RoutedVectors.self)?.vectors ?? []
    static func bytes(_ hex: String) -> [UInt8] { PersonalSafetyMessageTests.bytes(hex) }

    @Test func thereAreVectorsFromTheIndependentEncoders() {
        #expect(Self.tims.count >= 6)
        #expect(Self.routed.count >= 2)
    }

    @Test(arguments: tims.indices)
    func everyTIMDecodesToTheValuesItWasMadeFrom(_ index: Int) throws {
        let v = Self.tims[index], e = v.expected
        guard case .tim(let tim) = try FeedMessage.decode(Self.bytes(v.frame), encoding: .raw) else {
            Issue.record("\(v.name): not a TIM")
            return
        }
        #expect(tim.packetID == e.packetID.map(Self.bytes), "\(v.name)")
        #expect(tim.frames.count == 1)
        let frame = try #require(tim.frames.first)
        #expect(frame.content.rawValue == e.content, "\(v.name)")
        #expect(frame.itisCodes == e.itis, "\(v.name)")
        #expect(frame.texts == e.texts, "\(v.name)")
        #expect(frame.startYear == e.startYear && frame.startMinuteOfYear == e.startMinuteOfYear)
        #expect(frame.durationMinutes == e.durationMinutes && frame.priority == 5)
        #expect(frame.furtherInfoID == [0, 0] && frame.roadSign == nil)
        let region = try #require(frame.regions.first)
        #expect(region.anchor == Position3D(latitude: e.anchorLatitude, longitude: e.anchorLongitude), "\(v.name)")
        #expect(region.circleMeters == e.circleMeters, "\(v.name)")
        if e.circleMeters != nil { #expect(region.circleCenter == region.anchor) }
        #expect(region.points.count == e.points.count, "\(v.name)")
        for (point, want) in zip(region.points, e.points) {
            // Latitude/longitude offsets add up exactly; XY centimetres within a unit of rounding.
            #expect(abs(Int(point.latitude) - Int(want[0])) <= 1 && abs(Int(point.longitude) - Int(want[1])) <= 1,
                    "\(v.name): \(point) against \(want)")
        }
    }

    @Test func aTIMsStartIsItsYearAndMinuteInUTC() throws {
        let v = try #require(Self.tims.first)
        guard case .tim(let tim) = try FeedMessage.decode(Self.bytes(v.frame), encoding: .raw) else {
            Issue.record("the first vector is not a TIM")
            return
        }
        let frame = try #require(tim.frames.first)
        // 2025, minute 98760: 2025-03-10 14:00 UTC.
        #expect(frame.startMicroseconds(nowMicroseconds: 0) == 1_741_615_200_000_000)
        var yearless = frame
        yearless.startYear = nil
        // Without a year, the year around now that puts the start nearest: a message sent on
        // 2026-01-01 about minute 98760 means March 2026; one sent on 2026-12-31 about minute 200
        // means January 2027.
        #expect(yearless.startMicroseconds(nowMicroseconds: 1_767_225_600_000_000) == 1_773_151_200_000_000)
        yearless.startMinuteOfYear = 200
        #expect(yearless.startMicroseconds(nowMicroseconds: 1_798_675_200_000_000) == 1_798_773_600_000_000)
        yearless.startMinuteOfYear = 527_040
        #expect(yearless.startMicroseconds(nowMicroseconds: 1_798_675_200_000_000) == nil, "527040 is invalid")
        #expect(CivilTime.year(ofMicroseconds: 1_741_615_200_000_000) == 2025)
        #expect(CivilTime.year(ofMicroseconds: .max) == 9_999, "an absurd clock is no trap")
        #expect(CivilTime.microseconds(ofYear: 2024) == 1_704_067_200_000_000)
    }

    @Test(arguments: routed.indices)
    func aGeoRoutedEnvelopeYieldsItsFrame(_ index: Int) throws {
        let v = Self.routed[index]
        let payload = Self.bytes(v.payload)
        let inner = try FeedMessage.decode(Self.bytes(v.frame), encoding: .raw)
        #expect(try FeedMessage.decode(payload, encoding: .geoRouted) == inner, "\(v.name)")
        let e = v.expected
        let rebuilt = FeedMessage.geoRouted(Self.bytes(v.frame), seconds: e.seconds, latitude: e.latitude, longitude: e.longitude)
        #expect(try FeedMessage.decode(rebuilt, encoding: .geoRouted) == inner)
        // An envelope read as a raw frame is never taken for its message (its first octets make
        // another message id, or nothing).
        #expect((try? FeedMessage.decode(payload, encoding: .raw)) != inner)
    }

    @Test func cutAndMangledTIMsAreRefusedNeverATrap() throws {
        var generator = SystemRandomNumberGenerator()
        for v in Self.tims {
            let frame = Self.bytes(v.frame)
            for n in 0 ..< frame.count - 1 {
                #expect(throws: FeedError.self, "\(v.name) cut to \(n)") { _ = try FeedMessage.decode(Array(frame.prefix(n)), encoding: .raw) }
            }
            for _ in 0 ..< 2_000 {
                var m = frame
                for _ in 0 ..< Int.random(in: 1...4, using: &generator) {
                    let i = Int.random(in: 0 ..< m.count, using: &generator)
                    m[i] ^= UInt8.random(in: 1...255, using: &generator)
                }
                _ = try? FeedMessage.decode(m, encoding: .raw)
                _ = try? FeedMessage.decode(m, encoding: .geoRouted)
            }
        }
        // A broken TIM inside a sound frame names the frame's type, so the feed counts it as a TIM.
        let cut = MessageFrame(messageID: 31, value: [0x00, 0x10]).encode()
        #expect(throws: FeedError(messageID: 31, reason: "truncated")) { _ = try FeedMessage.decode(cut, encoding: .raw) }
        #expect(try FeedMessage.decode(MessageFrame(messageID: 20, value: [1, 2]).encode(), encoding: .raw) == .other(messageID: 20))
    }

    @Test func topicsFollowDriveAZsGrammar() throws {
        let t = try #require(FeedTopic("vzimp/1/GeoRelevance/az/12/Public/j2735_gr/PSM/0A1B2C3D"))
        #expect(t.channel == "Public" && t.encoding == .geoRouted && t.messageType == .psm && t.id == "0A1B2C3D")
        #expect(FeedTopic("vzimp/1/GeoRelevance/az/12/Public/j2735/BSM/1") == nil)
        #expect(FeedTopic("vzimp/1/GeoRelevance/az/Public/j2735/PSM/1") == nil)
        #expect(FeedTopic("vzimp/1/GeoRelevance/az/12/Public/j2735/TIM/" + String(repeating: "x", count: 97)) == nil, "an id too long for a hazard's")
        #expect(FeedTopic("vzimp/1/GeoRelevance/az/12/Public/j2735/TIM/") == nil)
        #expect(FeedTopic.subscriptions(channel: "Public") == [
            "vzimp/1/GeoRelevance/+/+/Public/j2735_gr/PSM/+", "vzimp/1/GeoRelevance/+/+/Public/j2735_gr/TIM/+",
            "vzimp/1/GeoRelevance/+/+/Public/j2735/PSM/+", "vzimp/1/GeoRelevance/+/+/Public/j2735/TIM/+",
        ])
    }
}
