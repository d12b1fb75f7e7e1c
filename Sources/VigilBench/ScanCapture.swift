#if canImport(Glibc)
import Glibc
#endif
import VigilEvents
import VigilRadio
import VigilSystem

/// A synthetic btsnoop capture of a busy scan, written with the node's own `BTSnoopWriter`:
/// HCI LE Advertising Report events (legacy, with some extended ones) from a crowd of advertisers,
/// at a fixed report rate, with the event time of each record as its capture timestamp.
///
/// The crowd (`advertisers`, stable across runs): phones with Apple manufacturer data whose bytes
/// rotate, exposure-notification beacons (16-bit UUID list + 20 bytes of service data), iBeacons,
/// Eddystone, named wearables and tags (name, 16-bit UUIDs, TX power; a scan response with the
/// name), Microsoft / Fast Pair / Tile adverts, 10 Vigil boxes' presence adverts and 4 Vigil boxes
/// advertising alert frames tagged with `shelterKey` (a new alert every 10 s of capture time,
/// each frame repeated by its box until the next). Report rates vary 1–32× between advertisers;
/// RSSI is the advertiser's base ±8 dB, 0.5% "unavailable" (127). Most events carry one report;
/// 10% carry two and 3% three (legacy events only); 5% of events are extended reports.
struct ScanCapture {
    static let shelterKey: [UInt8] = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
    static let alertBoxes = 4
    static let presenceBoxes = 10
    static let alertPeriodMicroseconds: UInt64 = 10_000_000

    let path: String
    let events: Int
    let reports: Int
    let bytes: Int
    let firstMicroseconds: UInt64
    let lastMicroseconds: UInt64
    /// Distinct verified alert frames in the capture (each should become one AlertReceived).
    let distinctAlerts: Int

    var seconds: Double { Double(lastMicroseconds - firstMicroseconds) / 1e6 }

    private struct Advertiser {
        var address: UInt64
        var addressType: UInt8
        var eventType: UInt8
        var rssi: Int
        var data: [UInt8]
        var scanResponse: [UInt8]?
        var rotates: Bool
        var alertBox: Int?
    }

    static func write(path: String, events: Int, reportsPerSecond: Double = 20_000, advertisers: Int = 2_000) throws -> ScanCapture {
        var rng = SplitMix64(seed: 0x5CA7_CA97)
        let key = try AlertFrameKey(shelterKey: shelterKey)
        var crowd = (0..<advertisers).map { makeAdvertiser($0, count: advertisers, using: &rng) }
        // Cumulative weights: report rates differ by up to 32x between advertisers.
        var cumulative: [UInt64] = []
        var total: UInt64 = 0
        for _ in crowd {
            total += 1 << (rng.next() % 6)
            cumulative.append(total)
        }
        let writer = try BTSnoopWriter(path: path, maxFileBytes: 1 << 40, keepFiles: 0, flushThreshold: 1 << 20)
        let step = UInt64((1e6 / reportsPerSecond).rounded())
        let start = Workload.startMicroseconds
        var time = start
        var reportCount = 0
        var alertFrames: [Int: (counter: UInt32, data: [UInt8])] = [:]
        var distinct = Set<String>()
        var packet: [UInt8] = []
        packet.reserveCapacity(300)

        for _ in 0..<events {
            let roll = rng.next() % 100
            let extended = roll < 5
            let perEvent = extended ? 1 : (roll < 8 ? 3 : (roll < 18 ? 2 : 1))
            var reports: [(Advertiser, [UInt8], Int8)] = []
            for _ in 0..<perEvent {
                let pick = rng.next() % total
                var lo = 0, hi = cumulative.count - 1
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if cumulative[mid] > pick { hi = mid } else { lo = mid + 1 }
                }
                var a = crowd[lo]
                var data = a.data
                if let box = a.alertBox {
                    let counter = UInt32(1 + (time - start) / alertPeriodMicroseconds)
                    if alertFrames[box]?.counter != counter {
                        let frame = alertFrame(box: box, counter: counter, nowMicroseconds: time)
                        alertFrames[box] = (counter, try AdvertisingPayload.vigil(frame: frame.encode(key: key)).bytes)
                        distinct.insert(frame.id.text)
                    }
                    data = alertFrames[box]!.data
                } else if let response = a.scanResponse, rng.next() % 4 == 0 {
                    a.eventType = 0x04  // SCAN_RSP
                    data = response
                } else if a.rotates, rng.next() % 8 == 0 {
                    // Phones change part of their manufacturer data every few adverts.
                    let i = data.count - 1 - Int(rng.next() % 3)
                    data[i] = UInt8(truncatingIfNeeded: rng.next())
                    crowd[lo].data = data
                }
                let rssi: Int8 = rng.next() % 200 == 0 ? AdvertisingReport.rssiUnavailable
                    : Int8(clamping: a.rssi + Int(rng.next() % 17) - 8)
                reports.append((a, data, rssi))
            }
            packet.removeAll(keepingCapacity: true)
            packet += [0x04, 0x3E, 0]  // H4 event, LE Meta, parameter length (set below)
            if extended {
                let (a, data, rssi) = reports[0]
                packet += [0x0D, 1]
                let eventType: UInt16 = a.eventType == 0x00 ? 0x13 : (a.eventType == 0x04 ? 0x1A : 0x10)
                packet += [UInt8(eventType & 0xFF), UInt8(eventType >> 8), a.addressType]
                appendAddress(a.address, to: &packet)
                packet += [0x01, 0x00, 0xFF, 0x7F, UInt8(bitPattern: rssi), 0, 0, 0]  // PHYs, SID, TX n/a, RSSI, interval, direct type
                packet += [0, 0, 0, 0, 0, 0, UInt8(data.count)]
                packet += data
            } else {
                packet += [0x02, UInt8(reports.count)]
                for (a, data, rssi) in reports {
                    packet += [a.eventType, a.addressType]
                    appendAddress(a.address, to: &packet)
                    packet.append(UInt8(data.count))
                    packet += data
                    packet.append(UInt8(bitPattern: rssi))
                }
            }
            packet[2] = UInt8(packet.count - 3)
            try writer.write(packet: packet, direction: .received, timeMicroseconds: time)
            reportCount += reports.count
            time += step * UInt64(reports.count)
        }
        try writer.close()
        var st = stat()
        _ = stat(path, &st)
        return ScanCapture(path: path, events: events, reports: reportCount, bytes: Int(st.st_size),
                           firstMicroseconds: start, lastMicroseconds: time - step, distinctAlerts: distinct.count)
    }

    private static func appendAddress(_ address: UInt64, to packet: inout [UInt8]) {
        for i in 0..<6 { packet.append(UInt8(truncatingIfNeeded: address >> UInt64(8 * i))) }
    }

    private static func alertFrame(box: Int, counter: UInt32, nowMicroseconds: UInt64) -> AlertFrame {
        let types: [AlertFrame.FrameType] = [.fire, .flood, .medical, .sos]
        let type = types[(box + Int(counter)) % types.count]
        let location = box % 2 == 0 ? AlertFrame.Coordinates(latitudeE7: 481_234_567 + Int32(box) * 1_000, longitudeE7: 116_543_210) : nil
        return AlertFrame(type: type, severity: .warning, hops: UInt8(box % 3), origin: 0xB0B0 + UInt32(box), counter: counter,
                          expirySeconds: UInt32(nowMicroseconds / 1_000_000) + 3_600, location: location)
    }

    private static func makeAdvertiser(_ index: Int, count: Int, using rng: inout SplitMix64) -> Advertiser {
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        func ad(_ type: UInt8, _ data: [UInt8]) -> [UInt8] { [UInt8(data.count + 1), type] + data }
        func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let random = rng.next() % 4 != 0
        var address = rng.next() & 0xFFFF_FFFF_FFFF
        if random { address = (address & 0x3FFF_FFFF_FFFF) | (rng.next() % 2 == 0 ? 0xC000_0000_0000 : 0x4000_0000_0000) }
        var a = Advertiser(address: address, addressType: random ? 1 : 0, eventType: 0x00,
                           rssi: -98 + Int(rng.next() % 60), data: [], scanResponse: nil, rotates: false, alertBox: nil)
        let flags = ad(0x01, [rng.next() % 2 == 0 ? 0x06 : 0x1A])
        let name = "dev-\(index)-" + ["Watch", "Band", "Tag", "Buds", "Sensor"][index % 5]

        // The Vigil boxes are the last advertisers, so the mix of the rest does not depend on them.
        if index >= count - alertBoxes {
            a.eventType = 0x03
            a.alertBox = index - (count - alertBoxes)
            a.address = (a.address & 0x3FFF_FFFF_FFFF)  // non-resolvable private
            a.addressType = 1
            return a
        }
        if index >= count - alertBoxes - presenceBoxes {
            a.eventType = 0x03
            a.addressType = 1
            let frame = (try? VigilAdvertisement.presenceFrame(identifier: bytes(16))) ?? []
            a.data = (try? AdvertisingPayload.vigil(frame: frame).bytes) ?? []
            return a
        }
        switch rng.next() % 100 {
        case 0..<40:  // phones: Apple "nearby" manufacturer data, rotating
            a.data = flags + ad(0xFF, le16(0x004C) + [0x10, 0x06] + bytes(6)) + ad(0x0A, [UInt8(bitPattern: Int8(rng.next() % 20))])
            a.rotates = true
            a.eventType = 0x00
        case 40..<55:  // exposure notification
            a.data = flags + ad(0x03, le16(0xFD6F)) + ad(0x16, le16(0xFD6F) + bytes(20))
            a.eventType = 0x03
        case 55..<70:  // iBeacon
            a.data = flags + ad(0xFF, le16(0x004C) + [0x02, 0x15] + bytes(16) + bytes(4) + [0xC5])
            a.eventType = 0x03
        case 70..<80:  // Eddystone UID
            a.data = flags + ad(0x03, le16(0xFEAA)) + ad(0x16, le16(0xFEAA) + [0x00, 0xEE] + bytes(16))
            a.eventType = 0x02
        case 80..<90:  // wearables and tags: UUIDs and TX power; the name in the scan response
            a.data = flags + ad(0x03, le16(0x180D) + le16(0x180F) + le16(0xFE9F)) + ad(0x0A, [0x04])
            a.scanResponse = ad(0x09, Array(name.utf8.prefix(29)))
            a.eventType = 0x00
        default:  // Microsoft Swift Pair, Google Fast Pair, Tile
            switch rng.next() % 3 {
            case 0: a.data = ad(0xFF, le16(0x0006) + [0x01, 0x09, 0x20, 0x02] + bytes(20))
            case 1: a.data = flags + ad(0x16, le16(0xFE2C) + bytes(3)) + ad(0x0A, [0xF6])
            default: a.data = flags + ad(0x03, le16(0xFEED)) + ad(0x16, le16(0xFEED) + bytes(10)) + ad(0x09, Array("Tile".utf8))
            }
            a.eventType = 0x03
        }
        return a
    }
}
