import Testing
import VigilEvents

@Suite("Reading payloads from newer and damaged writers")
struct ForwardCompatibilityTests {
    /// Field 99 as a varint (tag 99<<3|0 = 792), field 100 as bytes (tag 802) and field 101 as
    /// fixed32 (tag 813): what a newer schema might add.
    static let unknownFields: [UInt8] =
        [0x98, 0x06, 0xD2, 0x09] // 99: varint 1234
        + [0xA2, 0x06, 0x03, 0x61, 0x62, 0x63] // 100: "abc"
        + [0xED, 0x06, 0x01, 0x02, 0x03, 0x04] // 101: fixed32

    @Test(arguments: EventKind.known.map(\.name))
    func unknownFieldsFromANewerSchemaAreSkipped(kindName: String) throws {
        let body = try #require(Fixtures.fullyPopulated.first { $0.kind.name == kindName })
        let (kind, payload) = EventCodec.encode(body)
        let decoded = try EventCodec.decode(kind: kind, payload: payload + Self.unknownFields, sequence: 3)
        #expect(decoded == body)
        // Unknown fields may also come first (protobuf allows any field order).
        #expect(try EventCodec.decode(kind: kind, payload: Self.unknownFields + payload, sequence: 3) == body)
    }

    @Test func unknownKindIsReportedWithItsSequence() {
        let (_, payload) = EventCodec.encode(.scanHit(Fixtures.typicalScanHit))
        #expect(throws: EventDecodingError(sequence: 4_711, reason: .unknownKind(200))) {
            try EventCodec.decode(kind: 200, payload: payload, sequence: 4_711)
        }
        #expect(throws: EventDecodingError(sequence: 2, reason: .unknownKind(0))) {
            try EventCodec.decode(kind: 0, payload: [], sequence: 2)
        }
        #expect(throws: EventDecodingError(sequence: 3, reason: .unknownKind(UInt32.max))) {
            try EventCodec.decode(kind: UInt32.max, payload: [], sequence: 3)
        }
        let error = EventDecodingError(sequence: 4_711, reason: .unknownKind(200))
        #expect(error.description.contains("4711"))
        #expect(error.description.contains("200"))
    }

    @Test func truncatedPayloadIsMalformedAndNamesItsSequence() throws {
        let (kind, payload) = EventCodec.encode(.scanHit(Fixtures.typicalScanHit))
        for cut in [1, 2, 5] {
            do {
                _ = try EventCodec.decode(kind: kind, payload: Array(payload.dropLast(cut)), sequence: 77)
                Issue.record("a payload missing its last \(cut) bytes decoded")
            } catch {
                #expect(error.sequence == 77)
                guard case .malformed(let malformedKind, let detail) = error.reason else {
                    Issue.record("expected .malformed, got \(error.reason)")
                    continue
                }
                #expect(malformedKind == kind)
                #expect(!detail.isEmpty)
                #expect(error.description.contains("scan-hit"))
            }
        }
    }

    @Test func garbagePayloadIsMalformedNotACrash() {
        let garbage: [[UInt8]] = [
            [0xFF], // truncated varint tag
            [0x0F], // field 1, wire type 7 (invalid)
            [0x12, 0x7F, 0x00], // length-delimited field claiming 127 bytes
            [UInt8](repeating: 0xFF, count: 16),
        ]
        for kind in EventKind.known {
            for bytes in garbage {
                do {
                    _ = try EventCodec.decode(kind: UInt32(kind.rawValue), payload: bytes, sequence: 8)
                    Issue.record("\(kind.name) decoded garbage \(bytes)")
                } catch {
                    #expect(error.sequence == 8)
                    if case .malformed = error.reason {} else { Issue.record("\(kind.name): \(error.reason)") }
                }
            }
        }
    }

    @Test func unknownEnumValuesFromANewerSchemaAreKept() throws {
        // AlertKind 42 does not exist in v1; proto3 open enums keep the number.
        let payload: [UInt8] = [0x10, 0x2A] // Alert.kind = 42
        let body = try EventCodec.decode(kind: UInt32(EventKind.alertRaised.rawValue), payload: payload, sequence: 1)
        guard case .alertRaised(let alert) = body else {
            Issue.record("decoded as \(body.kind.name)")
            return
        }
        #expect(alert.kind.rawValue == 42)
    }
}
