import Foundation
import Testing
import VigilEvents
@testable import VigilRadio
import VigilSystem

/// A hex literal's bytes; a bad literal gives none, which fails the test that uses it.
private func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex) ?? [] }


@Suite struct AlertFrameTests {
    static let shelterKey: [UInt8] = Array(0..<32)
    static let key: AlertFrameKey = {
        do { return try AlertFrameKey(shelterKey: shelterKey) } catch { preconditionFailure("32-byte key") }
    }()
    static let otherKey: AlertFrameKey = {
        do { return try AlertFrameKey(shelterKey: Array(repeating: 0xA5, count: 32)) } catch { preconditionFailure("32-byte key") }
    }()
    static let madrid = AlertFrame.Coordinates(latitudeE7: 404_168_000, longitudeE7: -37_038_000)
    /// 2026-01-01T00:00:00Z.
    static let expiry: UInt32 = 1_767_225_600

    static let sos = AlertFrame(type: .sos, severity: .critical, hops: 0, origin: 0x0A11_CE01, counter: 42,
                                expirySeconds: expiry, location: madrid)
    static let cancel = AlertFrame(type: .cancel, origin: 0x0A11_CE01, counter: 42, expirySeconds: expiry)

    // Computed independently (Python hmac/hashlib) and printed in docs/radio.md "Alert frames over the air".
    static let sosHex = "11c40a11ce0100002a6955b900b97b4e7d5dbe00995135895d5311"
    static let sosAdvertHex = "1e16f1fc" + sosHex
    static let cancelHex = "19000a11ce0100002a6955b90099ba9288fa7a19"

    /// Re-tags `body` (every byte before the tag) so that only the structural checks can refuse it.
    static func retagged(_ body: [UInt8], uuid: UInt16 = AlertFrame.defaultServiceUUID) -> [UInt8] {
        body + key.tag(uuid: uuid, body: body[...])
    }

    static func decodeError(_ frame: [UInt8], key: AlertFrameKey = key,
                            uuid: UInt16 = AlertFrame.defaultServiceUUID) -> AlertFrameError? {
        do {
            _ = try AlertFrame.decode(frame, key: key, uuid: uuid)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Golden vectors

    @Test func anSOSWithALocationEncodesToTheGoldenBytes() throws {
        let frame = try Self.sos.encode(key: Self.key)
        #expect(Hex.encode(frame) == Self.sosHex)
        #expect(frame.count == 27)
        let advert = try AdvertisingPayload.vigil(frame: frame)
        #expect(Hex.encode(advert.bytes) == Self.sosAdvertHex)
        #expect(advert.bytes.count == 31)
    }

    @Test func aCancelEncodesToTheGoldenBytes() throws {
        let frame = try Self.cancel.encode(key: Self.key)
        #expect(Hex.encode(frame) == Self.cancelHex)
        #expect(frame.count == 20)
    }

    @Test func theGoldenBytesDecodeToTheFrameWithItsLocationQuantised() throws {
        let decoded = try AlertFrame.decode(bytes(Self.sosHex), key: Self.key)
        var expected = Self.sos
        expected.location = AlertFrame.Coordinates(latitudeE7: 404_167_992, longitudeE7: -37_038_035)
        #expect(decoded == expected)
        #expect(decoded.id == AlertID(origin: 0x0A11_CE01, counter: 42))
        #expect(try AlertFrame.decode(bytes(Self.cancelHex), key: Self.key) == Self.cancel)
    }

    // MARK: Round trips

    @Test func everyTypeRoundTripsWithAndWithoutALocation() throws {
        var rng = SplitMix64(seed: 1)
        for type in AlertFrame.FrameType.allCases {
            for withLocation in [false, true] where !(withLocation && type.refersToAnotherAlert) {
                for severity in [AlertSeverity.unspecified, .info, .warning, .critical] {
                    let location = withLocation
                        ? AlertFrame.Coordinates(latitudeE7: Int32.random(in: -900_000_000...900_000_000, using: &rng),
                                                 longitudeE7: Int32.random(in: -1_800_000_000...1_800_000_000, using: &rng))
                        : nil
                    let frame = AlertFrame(type: type, severity: severity, hops: UInt8.random(in: 0...7, using: &rng),
                                           origin: UInt32.random(in: 0...UInt32.max, using: &rng),
                                           counter: UInt32.random(in: 0...AlertFrame.maximumCounter, using: &rng),
                                           expirySeconds: UInt32.random(in: 0...UInt32.max, using: &rng),
                                           location: location)
                    let encoded = try frame.encode(key: Self.key)
                    #expect(encoded.count == (withLocation ? 27 : 20))
                    #expect(encoded[0] == 0x10 | type.rawValue)
                    var expected = frame
                    expected.location = location?.quantized
                    let decoded = try AlertFrame.decode(encoded, key: Self.key)
                    #expect(decoded == expected)
                    // A relay re-encoding what it decoded sends the same bytes.
                    #expect(try decoded.encode(key: Self.key) == encoded)
                }
            }
        }
    }

    @Test func extremeFieldValuesRoundTrip() throws {
        let corners = [AlertFrame.Coordinates(latitudeE7: -900_000_000, longitudeE7: -1_800_000_000),
                       AlertFrame.Coordinates(latitudeE7: 900_000_000, longitudeE7: 1_800_000_000),
                       AlertFrame.Coordinates(latitudeE7: 0, longitudeE7: 0)]
        for corner in corners {
            let frame = AlertFrame(type: .info, severity: .critical, hops: 7, origin: .max,
                                   counter: AlertFrame.maximumCounter, expirySeconds: .max, location: corner)
            let decoded = try AlertFrame.decode(try frame.encode(key: Self.key), key: Self.key)
            #expect(decoded.hops == 7 && decoded.origin == .max && decoded.counter == 0xFF_FFFF && decoded.expirySeconds == .max)
            if corner.latitudeE7 != 0 { #expect(decoded.location == corner) }  // the poles and ±180° are grid points
        }
    }

    // MARK: Refusals

    @Test func everySingleBitFlipIsRejected() {
        for golden in [Self.sosHex, Self.cancelHex] {
            let frame = bytes(golden)
            for bit in 0..<(frame.count * 8) {
                var flipped = frame
                flipped[bit / 8] ^= 1 << UInt8(bit % 8)
                #expect(Self.decodeError(flipped) != nil, "bit \(bit) of \(golden)")
            }
        }
    }

    @Test func aFrameTruncatedAtAnyLengthIsRejected() {
        for golden in [Self.sosHex, Self.cancelHex] {
            let frame = bytes(golden)
            for length in 0..<frame.count {
                let error = Self.decodeError(Array(frame.prefix(length)))
                guard case .truncated = error else {
                    Issue.record("length \(length): \(String(describing: error))"); continue
                }
            }
        }
    }

    @Test func extraBytesAfterTheTagAreRejected() {
        #expect(Self.decodeError(bytes(Self.cancelHex) + [0]) == .trailingBytes(length: 21, expected: 20))
        #expect(Self.decodeError(bytes(Self.sosHex) + [0]) == .trailingBytes(length: 28, expected: 27))
    }

    @Test func anotherShelterKeyIsRejected() {
        #expect(Self.decodeError(bytes(Self.sosHex), key: Self.otherKey) == .badTag)
        #expect(Self.decodeError(bytes(Self.cancelHex), key: Self.otherKey) == .badTag)
    }

    @Test func anotherServiceUUIDIsRejected() {
        #expect(Self.decodeError(bytes(Self.sosHex), uuid: 0xFCF2) == .badTag)
        #expect(Self.decodeError(bytes(Self.sosHex), uuid: 0xF1FC) == .badTag)
    }

    @Test func reservedBitsAreRejectedEvenUnderAValidTag() {
        let body = Array(bytes(Self.cancelHex).prefix(13))
        for bit: UInt8 in [0x01, 0x02, 0x03] {
            var b = body
            b[1] |= bit
            #expect(Self.decodeError(Self.retagged(b)) == .reservedBitsSet)
        }
        // The 7 padding bits after the longitude.
        let sosBody = Array(bytes(Self.sosHex).prefix(20))
        for bit in 0..<7 {
            var b = sosBody
            b[19] |= 1 << UInt8(bit)
            #expect(Self.decodeError(Self.retagged(b)) == .reservedBitsSet)
        }
    }

    @Test func unknownTypesAndVersionsAreRejected() {
        let body = Array(bytes(Self.cancelHex).prefix(13))
        for type: UInt8 in 11...15 {
            var b = body
            b[0] = 0x10 | type
            #expect(Self.decodeError(Self.retagged(b)) == .unknownType(type))
        }
        for version: UInt8 in [0, 2, 15] {
            var b = body
            b[0] = version << 4 | 0x09
            #expect(Self.decodeError(Self.retagged(b)) == .unsupportedVersion(version))
        }
        var presence = body
        presence[0] = 0x10
        #expect(Self.decodeError(Self.retagged(presence)) == .notAnAlert)
    }

    @Test func aCancelOrAcknowledgeWithALocationIsRejected() {
        for type in [AlertFrame.FrameType.cancel, .acknowledge] {
            var frame = Self.sos
            frame.type = type
            #expect(throws: AlertFrameError.locationNotAllowed) { try frame.encode(key: Self.key) }
            // Built by hand and correctly tagged: the decoder refuses it too.
            var b = Array(bytes(Self.sosHex).prefix(20))
            b[0] = 0x10 | type.rawValue
            #expect(Self.decodeError(Self.retagged(b)) == .locationNotAllowed)
        }
    }

    @Test func fieldsThatDoNotFitAreRejectedAtEncode() {
        var frame = Self.sos
        frame.hops = 8
        #expect(throws: AlertFrameError.hopsOutOfRange(8)) { try frame.encode(key: Self.key) }
        frame = Self.sos
        frame.counter = 0x100_0000
        #expect(throws: AlertFrameError.counterOutOfRange(0x100_0000)) { try frame.encode(key: Self.key) }
        frame = Self.sos
        frame.severity = .UNRECOGNIZED(4)
        #expect(throws: AlertFrameError.unsupportedSeverity(4)) { try frame.encode(key: Self.key) }
        let outOfRange: [(Int32, Int32)] = [(900_000_001, 0), (-900_000_001, 0), (0, 1_800_000_001),
                                            (0, -1_800_000_001), (.max, .min)]
        for (lat, lon) in outOfRange {
            frame = Self.sos
            frame.location = AlertFrame.Coordinates(latitudeE7: lat, longitudeE7: lon)
            #expect(throws: AlertFrameError.locationOutOfRange(latitudeE7: lat, longitudeE7: lon)) {
                try frame.encode(key: Self.key)
            }
        }
    }

    @Test func aShelterKeyMustBe32Bytes() {
        for count in [0, 16, 31, 33, 64] {
            #expect(throws: AlertFrameError.badKeyLength(count)) { try AlertFrameKey(shelterKey: Array(repeating: 1, count: count)) }
        }
        #expect(String(describing: Self.key) == "AlertFrameKey(redacted)")
    }

    // MARK: Location quantisation

    /// Worst case: half a grid step, 180°/(2^24 - 1)/2 = 5.364e-6° (0.596 m on a 6371 km sphere;
    /// longitude: 360°/(2^25 - 1)/2, the same, times cos(latitude)), plus 0.5e-7° of rounding
    /// back to e7: at most 54 e7 units, 0.601 m.
    @Test func theLocationErrorStaysWithinHalfAGridStep() {
        let metresPerE7 = 6_371_000.0 * Double.pi / 180 / 1e7
        var rng = SplitMix64(seed: 0x5EED)
        var worstLat: Int64 = 0, worstLon: Int64 = 0
        for i in 0..<200_000 {
            let point = AlertFrame.Coordinates(latitudeE7: Int32.random(in: -900_000_000...900_000_000, using: &rng),
                                               longitudeE7: Int32.random(in: -1_800_000_000...1_800_000_000, using: &rng))
            let q = point.quantized
            let dLat = abs(Int64(q.latitudeE7) - Int64(point.latitudeE7))
            let dLon = abs(Int64(q.longitudeE7) - Int64(point.longitudeE7))
            worstLat = max(worstLat, dLat)
            worstLon = max(worstLon, dLon)
            let cosLat = cos(Double(point.latitudeE7) / 1e7 * Double.pi / 180)
            // North-south error, and east-west error on the ground; quantising twice changes
            // nothing, so relays never drift the position.
            guard Double(dLat) * metresPerE7 <= 0.601,
                  Double(dLon) * metresPerE7 * cosLat <= 0.601 * cosLat + 1e-9,
                  q.quantized == q else {
                Issue.record("point \(i): \(point) -> \(q)"); return
            }
        }
        #expect(worstLat <= 54 && worstLon <= 54)
        #expect(worstLat >= 50 && worstLon >= 50)  // the bound is tight, not vacuous
    }

    // MARK: Lifetime

    @Test func theLifetimeCheckRefusesStaleAndFarFutureExpiries() throws {
        let frame = AlertFrame(type: .fire, origin: 1, counter: 1, expirySeconds: 1_000_000)
        let expiryUs: UInt64 = 1_000_000 * 1_000_000
        #expect(throws: AlertFrameError.stale) { try frame.verifyLifetime(nowMicroseconds: expiryUs) }
        #expect(throws: AlertFrameError.stale) { try frame.verifyLifetime(nowMicroseconds: expiryUs + 1) }
        try frame.verifyLifetime(nowMicroseconds: expiryUs - 1)
        let dayUs: UInt64 = 86_400 * 1_000_000
        try frame.verifyLifetime(nowMicroseconds: expiryUs - dayUs)
        #expect(throws: AlertFrameError.tooFarInFuture) { try frame.verifyLifetime(nowMicroseconds: expiryUs - dayUs - 1) }
        #expect(throws: AlertFrameError.tooFarInFuture) { try frame.verifyLifetime(nowMicroseconds: 0) }
        try frame.verifyLifetime(nowMicroseconds: 0, maxLifetimeSeconds: 1_000_000)
    }

    @Test func decodingWithATimeAlsoChecksTheLifetime() throws {
        let frame = bytes(Self.cancelHex)
        let expiryUs = UInt64(Self.expiry) * 1_000_000
        #expect(try AlertFrame.decode(frame, key: Self.key, nowMicroseconds: expiryUs - 3_600_000_000) == Self.cancel)
        #expect(throws: AlertFrameError.stale) { try AlertFrame.decode(frame, key: Self.key, nowMicroseconds: expiryUs) }
        #expect(throws: AlertFrameError.badTag) {
            try AlertFrame.decode(frame, key: Self.otherKey, nowMicroseconds: expiryUs - 1)
        }
    }

    // MARK: Relaying

    @Test func aRelayAddsAHopAndReTags() throws {
        let relayed = try Self.sos.relayed()
        #expect(relayed.hops == 1)
        let original = try Self.sos.encode(key: Self.key)
        let forwarded = try relayed.encode(key: Self.key)
        #expect(forwarded[1] == original[1] | 0x08)
        #expect(forwarded.suffix(7) != original.suffix(7))
        #expect(try AlertFrame.decode(forwarded, key: Self.key).hops == 1)
        // Bumping the hop count without the key is caught.
        var tampered = original
        tampered[1] |= 0x08
        #expect(Self.decodeError(tampered) == .badTag)
    }

    @Test func aFrameRelayedSevenTimesGoesNoFurther() throws {
        var frame = Self.cancel
        for _ in 0..<7 { frame = try frame.relayed() }
        #expect(frame.hops == 7)
        #expect(throws: AlertFrameError.hopLimitReached) { try frame.relayed() }
    }

    // MARK: Conversions

    static func alert(kind: AlertKind = .medical) -> Alert {
        var alert = Alert()
        alert.id = AlertID(origin: 0xBEEF, counter: 7)
        alert.kind = kind
        alert.severity = .warning
        alert.hops = 2
        alert.expiresAtUs = 1_767_225_600_999_999
        alert.text = "not sent"
        var l = Location()
        l.latitudeE7 = -338_688_000
        l.longitudeE7 = 1_512_093_000
        alert.location = l
        return alert
    }

    @Test func everyAlertKindMapsToItsFrameTypeAndBack() throws {
        let kinds: [(AlertKind, UInt8)] = [(.sos, 1), (.medical, 2), (.fire, 3), (.flood, 4), (.evacuate, 5),
                                           (.roadHazard, 6), (.areaHazard, 7), (.info, 8)]
        for (kind, raw) in kinds {
            let frame = try AlertFrame(alert: Self.alert(kind: kind))
            #expect(frame.type.rawValue == raw)
            #expect(frame.type.kind == kind)
        }
        #expect(AlertFrame.FrameType.cancel.kind == nil && AlertFrame.FrameType.acknowledge.kind == nil)
    }

    @Test func anAlertSurvivesTheAirExceptItsTextAndSubSecondExpiry() throws {
        let alert = Self.alert()
        let frame = try AlertFrame(alert: alert)
        #expect(frame.origin == 0xBEEF && frame.counter == 7 && frame.hops == 2 && frame.severity == .warning)
        #expect(frame.expirySeconds == 1_767_225_600)
        let decoded = try AlertFrame.decode(try frame.encode(key: Self.key), key: Self.key)
        guard case .alert(let received) = decoded.meaning(heardFrom: 0x1234) else {
            Issue.record("not an alert"); return
        }
        var expected = alert
        expected.text = ""
        expected.heardFrom = 0x1234
        expected.expiresAtUs = 1_767_225_600_000_000
        expected.location.latitudeE7 = frame.location?.quantized.latitudeE7 ?? 0
        expected.location.longitudeE7 = frame.location?.quantized.longitudeE7 ?? 0
        #expect(received == expected)
    }

    @Test func anAlertWithoutALocationHasNoneAfterTheAir() throws {
        var alert = Self.alert()
        alert.clearLocation()
        let frame = try AlertFrame(alert: alert)
        #expect(frame.location == nil)
        guard case .alert(let received) = frame.meaning() else { Issue.record("not an alert"); return }
        #expect(!received.hasLocation)
    }

    @Test func alertsTheFrameCannotCarryAreRefused() {
        var alert = Self.alert()
        alert.id.origin = 0x1_0000_0000
        #expect(throws: AlertFrameError.originOutOfRange(0x1_0000_0000)) { try AlertFrame(alert: alert) }
        alert = Self.alert()
        alert.id.counter = 0x100_0000
        #expect(throws: AlertFrameError.counterOutOfRange(0x100_0000)) { try AlertFrame(alert: alert) }
        alert = Self.alert()
        alert.expiresAtUs = 0
        #expect(throws: AlertFrameError.noExpiry) { try AlertFrame(alert: alert) }
        alert.expiresAtUs = (UInt64(UInt32.max) + 1) * 1_000_000
        #expect(throws: AlertFrameError.expiryOutOfRange(microseconds: alert.expiresAtUs)) { try AlertFrame(alert: alert) }
        alert = Self.alert()
        alert.hops = 8
        #expect(throws: AlertFrameError.hopsOutOfRange(8)) { try AlertFrame(alert: alert) }
        alert = Self.alert(kind: .unspecified)
        #expect(throws: AlertFrameError.unsupportedKind(0)) { try AlertFrame(alert: alert) }
        alert = Self.alert(kind: .UNRECOGNIZED(9))
        #expect(throws: AlertFrameError.unsupportedKind(9)) { try AlertFrame(alert: alert) }
        alert = Self.alert()
        alert.location.latitudeE7 = 900_000_001
        #expect(throws: AlertFrameError.locationOutOfRange(latitudeE7: 900_000_001, longitudeE7: 1_512_093_000)) {
            try AlertFrame(alert: alert)
        }
    }

    @Test func cancelAndAcknowledgeNameTheReferencedAlert() throws {
        let id = AlertID(origin: 0x0A11_CE01, counter: 42)
        let cancel = try AlertFrame(cancelling: id, expiresAtMicroseconds: UInt64(Self.expiry) * 1_000_000)
        #expect(cancel == Self.cancel)
        var expected = AlertCancelled()
        expected.id = id
        expected.expiresAtUs = UInt64(Self.expiry) * 1_000_000
        expected.heardFrom = 9
        #expect(cancel.meaning(heardFrom: 9) == .cancelled(expected))
        let ack = try AlertFrame(acknowledging: id, expiresAtMicroseconds: UInt64(Self.expiry) * 1_000_000)
        #expect(ack.type == .acknowledge && ack.location == nil)
        var acknowledged = AlertAcknowledged()
        acknowledged.id = id
        acknowledged.expiresAtUs = UInt64(Self.expiry) * 1_000_000
        acknowledged.heardFrom = 9
        #expect(try AlertFrame.decode(try ack.encode(key: Self.key), key: Self.key).meaning(heardFrom: 9) == .acknowledged(acknowledged))
        #expect(throws: AlertFrameError.noExpiry) { try AlertFrame(cancelling: id, expiresAtMicroseconds: 0) }
    }

    @Test func aCancellationFromTheLogTravelsWithItsHopsSeverityAndExpiry() throws {
        var cancelled = AlertCancelled()
        cancelled.id = AlertID(origin: 0xBEEF, counter: 7)
        cancelled.by = 0xBEEF
        cancelled.reason = "not sent"
        cancelled.hops = 3
        cancelled.severity = .critical
        cancelled.expiresAtUs = 1_767_225_600_500_000
        cancelled.heardFrom = 0x1234
        let frame = try AlertFrame(cancelled: cancelled)
        #expect(frame == AlertFrame(type: .cancel, severity: .critical, hops: 3, origin: 0xBEEF, counter: 7,
                                    expirySeconds: 1_767_225_600))
        let decoded = try AlertFrame.decode(try frame.encode(key: Self.key), key: Self.key)
        var expected = cancelled
        expected.by = 0
        expected.reason = ""
        expected.heardFrom = 0x5678
        expected.expiresAtUs = 1_767_225_600_000_000
        #expect(decoded.meaning(heardFrom: 0x5678) == .cancelled(expected))
        cancelled.hops = 8
        #expect(throws: AlertFrameError.hopsOutOfRange(8)) { try AlertFrame(cancelled: cancelled) }
    }

    // MARK: Advertising data

    @Test func theLargestFrameFillsALegacyAdvertExactly() throws {
        let frame = try Self.sos.encode(key: Self.key)
        #expect(frame.count == AlertFrame.maximumLength)
        let payload = try AdvertisingPayload.vigil(frame: frame)
        #expect(payload.bytes.count == AdvertisingPayload.legacyMaximumLength)
        #expect(Array(payload.bytes.prefix(4)) == [30, 0x16, 0xF1, 0xFC])
        #expect(throws: AdvertisingPayloadError.tooLong(length: 32, maximum: 31)) {
            try AdvertisingPayload.vigil(frame: frame + [0])
        }
    }

    @Test func anAppendThatDoesNotFitLeavesThePayloadUnchanged() throws {
        var payload = AdvertisingPayload()
        try payload.append(type: 0x01, data: [0x04])
        try payload.append(type: 0x09, data: Array("Vigil".utf8))
        let before = payload.bytes
        #expect(before == [0x02, 0x01, 0x04, 0x06, 0x09, 0x56, 0x69, 0x67, 0x69, 0x6C])
        #expect(throws: AdvertisingPayloadError.tooLong(length: 32, maximum: 31)) {
            try payload.append(type: 0xFF, data: Array(repeating: 0, count: 20))
        }
        #expect(payload.bytes == before)
        try payload.append(type: 0xFF, data: Array(repeating: 0, count: 19))
        #expect(payload.bytes.count == 31)
    }

    @Test func theFinderPicksOurServiceDataAmongOtherStructures() {
        let frame = bytes(Self.cancelHex)
        let data: [UInt8] = [0x02, 0x01, 0x06,                    // flags
                             0x05, 0x16, 0xF2, 0xFC, 1, 2,         // someone else's service data
                             0x03, 0x03, 0xF1, 0xFC,               // our UUID in a service list, not data
                             UInt8(3 + frame.count), 0x16, 0xF1, 0xFC] + frame
        #expect(AdvertisingPayload.serviceData(uuid: 0xFCF1, in: data) == frame)
        #expect(AdvertisingPayload.serviceData(uuid: 0xFCF2, in: data) == [1, 2])
        #expect(AdvertisingPayload.serviceData(uuid: 0x1234, in: data) == nil)
        // Empty service data for the UUID is found, and empty.
        #expect(AdvertisingPayload.serviceData(uuid: 0xFCF1, in: [0x03, 0x16, 0xF1, 0xFC]) == [])
    }

    @Test func theFinderStopsSafelyOnMalformedData() {
        let cases: [[UInt8]] = [
            [],
            [0x00],
            [0x00, 0x03, 0x16, 0xF1, 0xFC],          // zero length ends the data
            [0x1E],                                   // length only
            [0x1E, 0x16, 0xF1, 0xFC, 0x19],           // length past the end
            [0x01, 0x16],                             // service data with no UUID
            [0x02, 0x16, 0xF1],                       // half a UUID
            [0x02, 0x16, 0xF1, 0xFC],                 // half a UUID, the next byte looks like the rest
            [0xFF, 0x16, 0xF1, 0xFC],
            [0x02, 0x01, 0x06, 0x05, 0x16, 0xF1, 0xFC, 1],  // truncated after a good structure
        ]
        for data in cases {
            #expect(AdvertisingPayload.serviceData(uuid: 0xFCF1, in: data) == nil, "\(data)")
        }
    }

    @Test func theFinderNeverTrapsOnRandomOrTruncatedData() throws {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...40, using: &rng)
            var data = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Often make it look like ours, so the deeper paths run.
            if count >= 4 && Bool.random(using: &rng) { data[1] = 0x16; data[2] = 0xF1; data[3] = 0xFC }
            if let found = AdvertisingPayload.serviceData(uuid: 0xFCF1, in: data) {
                #expect(found.count <= data.count)
                _ = try? VigilAdvertisement.decode(frame: found, key: Self.key)
            }
        }
        let advert = try AdvertisingPayload.vigil(frame: bytes(Self.sosHex)).bytes
        for length in 0..<advert.count {
            #expect(AdvertisingPayload.serviceData(uuid: 0xFCF1, in: Array(advert.prefix(length))) == nil)
        }
    }

    @Test func anAdvertDecodesToItsAlertOrPresenceOrNothing() throws {
        let sosAdvert = bytes(Self.sosAdvertHex)
        guard case .alert(let frame)? = try VigilAdvertisement.decode(advertisingData: sosAdvert, key: Self.key) else {
            Issue.record("no alert"); return
        }
        #expect(frame.type == .sos)
        let identifier: [UInt8] = Array(100..<116)
        let presence = try VigilAdvertisement.presence(identifier).encode(key: Self.key)
        #expect(presence.count == 17 && presence[0] == 0x10)
        let presenceAdvert = try AdvertisingPayload.vigil(frame: presence).bytes
        #expect(try VigilAdvertisement.decode(advertisingData: presenceAdvert, key: Self.key) == .presence(identifier))
        #expect(try VigilAdvertisement.decode(advertisingData: [0x02, 0x01, 0x06], key: Self.key) == nil)
        #expect(throws: AlertFrameError.badTag) {
            try VigilAdvertisement.decode(advertisingData: sosAdvert, key: Self.otherKey)
        }
        #expect(throws: AlertFrameError.truncated(length: 16, needed: 17)) {
            try VigilAdvertisement.decode(frame: Array(presence.prefix(16)), key: Self.key)
        }
        #expect(throws: AlertFrameError.trailingBytes(length: 18, expected: 17)) {
            try VigilAdvertisement.decode(frame: presence + [0], key: Self.key)
        }
        #expect(throws: AlertFrameError.badIdentifierLength(15)) {
            try VigilAdvertisement.presence(Array(identifier.prefix(15))).encode(key: Self.key)
        }
    }
}
