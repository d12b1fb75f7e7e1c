import Testing
import VigilEvents

@Suite("Payload size")
struct PayloadSizeTests {
    /// Scan hits are most of what a node writes, so their size decides how long an SD card lasts.
    @Test func typicalScanHitPayloadStaysSmall() throws {
        let (kind, payload) = EventCodec.encode(.scanHit(Fixtures.typicalScanHit))
        // The log's envelope adds a varint kind and a varint time (8 bytes for a 2026 time in µs).
        let envelope = 1 + 8
        print("typical ScanHit: \(payload.count) bytes of payload, \(payload.count + envelope) bytes as a log value")
        #expect(payload.count < 40)
        #expect(payload.count <= 38) // measured: 37 bytes; a field-type change shows up here
        #expect(try EventCodec.decode(kind: kind, payload: payload, sequence: 1) == .scanHit(Fixtures.typicalScanHit))
    }

    @Test func defaultValuedFieldsCostNothing() {
        var hit = ScanHit()
        hit.count = 1
        let (_, payload) = EventCodec.encode(.scanHit(hit))
        #expect(payload == [0x30, 0x01]) // field 6 (count) only
    }
}
