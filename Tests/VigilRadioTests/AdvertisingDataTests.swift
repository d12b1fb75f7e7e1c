import Foundation
import Testing
import VigilEvents
import VigilRadio

/// What an advert's AD structures become in a scan hit.
@Suite struct AdvertisingDataTests {
    /// A TrackIT phone advertises its identifier as a 128-bit service UUID; it used to be lost
    /// (issue 10, item 11).
    @Test func a128BitServiceUUIDAndServiceDataAreRecorded() {
        let uuid: [UInt8] = (0..<16).map { UInt8(0xA0 + $0) }
        let dataUUID: [UInt8] = (0..<16).map { UInt8(0x10 + $0) }
        let advert: [UInt8] = [0x02, 0x01, 0x06]
            + [17, 0x07] + uuid                 // complete list of 128-bit service UUIDs
            + [19, 0x21] + dataUUID + [0xCA, 0xFE] // 128-bit service data
        var counts = AdvertisingDataParser.Counts()
        let (summary, _) = AdvertisingDataParser.summarize(advert, connectable: true, counts: &counts)
        #expect(summary.serviceUuids128 == [Data(uuid)])
        #expect(summary.serviceDataUuids128 == [Data(dataUUID)])
        #expect(counts.total == 0)
    }

    @Test func anIncompleteListKeepsEveryUUIDUpToTheCap() {
        let uuids: [[UInt8]] = (0..<6).map { i in (0..<16).map { UInt8(i * 16 + $0) } }
        // An extended advert could carry many; at most four are kept.
        let advert: [UInt8] = [UInt8(1 + 16 * 6), 0x06] + uuids.flatMap { $0 }
        var counts = AdvertisingDataParser.Counts()
        let (summary, _) = AdvertisingDataParser.summarize(advert, connectable: false, counts: &counts)
        #expect(summary.serviceUuids128 == uuids.prefix(AdvertisingDataParser.maximumUUIDs128).map { Data($0) })
    }

    @Test func a128BitUUIDOfTheWrongLengthIsCountedNotKept() {
        var counts = AdvertisingDataParser.Counts()
        let (summary, _) = AdvertisingDataParser.summarize([9, 0x07, 1, 2, 3, 4, 5, 6, 7, 8, 16, 0x21] + [UInt8](repeating: 1, count: 15),
                                                           connectable: false, counts: &counts)
        #expect(summary.serviceUuids128.isEmpty && summary.serviceDataUuids128.isEmpty)
        #expect(counts.badLength == 2)
    }

    /// The scan hit carrying them survives the log's codec (the fast path defers to
    /// swift-protobuf for fields it does not know).
    @Test func theyRoundTripThroughTheEventCodec() throws {
        var hit = ScanHit()
        hit.address = 0x5A_00_00_00_00_01
        hit.count = 1
        hit.advertisement.serviceUuids128 = [Data((0..<16).map { UInt8($0) })]
        hit.advertisement.serviceDataUuids128 = [Data((0..<16).map { UInt8(255 - $0) })]
        let (kind, payload) = EventCodec.encode(.scanHit(hit))
        #expect(try EventCodec.decode(kind: kind, payload: payload, sequence: 1) == .scanHit(hit))
    }
}
