import Foundation
import Testing
import VigilEvents
import VigilRadio

@Suite("Contact identifiers in scan hits")
struct ContactIdentifierTests {
    func hit(_ data: [UInt8], window: inout ScanWindow) -> ScanHit? {
        window.add(AdvertisingReport(address: 0x4A_00_00_00_00_01, addressType: .addressRandom, rssi: -61, connectable: false,
                                     data: data, timeMicroseconds: 1_000))
    }

    @Test func anExposureNotificationAdvertKeepsItsIdentifierAndMetadata() {
        let rpi = (0..<16).map { UInt8($0) }
        let aem: [UInt8] = [0x40, 0xEC, 0x00, 0x00]
        // Flags, complete 16-bit UUID list 0xFD6F, service data 0xFD6F: RPI ‖ AEM (a GAEN advert).
        let data: [UInt8] = [0x02, 0x01, 0x1A, 0x03, 0x03, 0x6F, 0xFD, 0x17, 0x16, 0x6F, 0xFD] + rpi + aem
        var window = ScanWindow(durationMicroseconds: 0)
        let summary = hit(data, window: &window)?.advertisement
        #expect(summary?.gaenRpi == Data(rpi) && summary?.gaenAem == Data(aem))
        #expect(summary?.serviceUuids16 == [0xFD6F])
    }

    @Test func aVigilPresenceFrameKeepsTheBoxsRotatingIdentifier() {
        let id = (100..<116).map { UInt8($0) }
        var window = ScanWindow(durationMicroseconds: 0, vigilUUID: 0xFCF1)
        let summary = hit([0x14, 0x16, 0xF1, 0xFC, 0x10] + id, window: &window)?.advertisement
        #expect(summary?.vigilPresence == Data(id))
        // Under another UUID it is someone else's service data.
        var other = ScanWindow(durationMicroseconds: 0, vigilUUID: 0x1234)
        #expect(hit([0x14, 0x16, 0xF1, 0xFC, 0x10] + id, window: &other)?.advertisement.vigilPresence.isEmpty == true)
    }

    @Test func exposureServiceDataOfTheWrongLengthIsCountedNotKept() {
        var window = ScanWindow(durationMicroseconds: 0)
        let summary = hit([0x07, 0x16, 0x6F, 0xFD, 1, 2, 3, 4], window: &window)?.advertisement
        #expect(summary?.gaenRpi.isEmpty == true)
        #expect(window.malformed.badLength == 1)
    }
}
