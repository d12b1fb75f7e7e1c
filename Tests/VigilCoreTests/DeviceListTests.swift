import Foundation
import Testing
import VigilCore
import VigilEvents

@Suite("DeviceList")
struct DeviceListTests {
    @Test func foldsScanHitsOfOneAddress() throws {
        var stream = EventStream()
        stream.add(scanHit(address: 0xAA, rssi: [-70, -66, -63, -60], firstOffset: 1.5, lastOffset: 0.1), at: 100)
        stream.add(scanHit(address: 0xAA, rssi: [-80, -50], firstOffset: 2, lastOffset: 0.5, txPower: -8, name: "Tag"), at: 110)
        stream.add(scanHit(address: 0xAA, rssi: [-65], firstOffset: 0.2, lastOffset: 0.2), at: 120)
        let list = DeviceList().applying(all: stream.inputs)

        #expect(list.devices.count == 1)
        let device = try #require(list.sorted.first)
        #expect(device.address == 0xAA)
        #expect(device.addressType == AddressType.addressRandom.rawValue)
        #expect(device.hits == 3)
        #expect(device.reports == 7)
        #expect(device.rssiMin == -80)
        #expect(device.rssiMax == -50)
        #expect(device.rssiSum == -259 - 130 - 65)
        #expect(device.meanRSSI == Double(-259 - 130 - 65) / 7)
        #expect(device.firstSeenMicroseconds == micros(100) - micros(1.5))
        #expect(device.lastSeenMicroseconds == micros(120) - micros(0.2))
        #expect(device.lastMeanRSSICentiDBm == -6_500) // the latest window alone
        // Optional details stick once seen and are not erased by hits without them.
        #expect(device.txPower == -8)
        #expect(device.name == "Tag")
    }

    @Test func outOfOrderWindowsKeepTheEarliestFirstAndLatestLast() throws {
        var stream = EventStream()
        stream.add(scanHit(address: 7, rssi: [-60], firstOffset: 0, lastOffset: 0), at: 200)
        // A later event whose reports reach further back (long scan window).
        stream.add(scanHit(address: 7, rssi: [-61], firstOffset: 150, lastOffset: 100), at: 210)
        let device = try #require(DeviceList().applying(all: stream.inputs).sorted.first)
        #expect(device.firstSeenMicroseconds == micros(60))
        #expect(device.lastSeenMicroseconds == micros(200))
    }

    @Test func sameAddressWithDifferentAddressTypesIsTwoDevices() {
        var stream = EventStream()
        stream.add(scanHit(address: 0x1234, type: .addressPublic, rssi: [-40]), at: 10)
        stream.add(scanHit(address: 0x1234, type: .addressRandom, rssi: [-90]), at: 11)
        stream.add(scanHit(address: 0x1234, type: .addressPublic, rssi: [-42]), at: 12)
        let list = DeviceList().applying(all: stream.inputs)
        #expect(list.devices.count == 2)
        let byType = Dictionary(uniqueKeysWithValues: list.sorted.map { ($0.addressType, $0) })
        #expect(byType[AddressType.addressPublic.rawValue]?.hits == 2)
        #expect(byType[AddressType.addressPublic.rawValue]?.rssiMax == -40)
        #expect(byType[AddressType.addressRandom.rawValue]?.hits == 1)
        #expect(byType[AddressType.addressRandom.rawValue]?.rssiMin == -90)
    }

    @Test func hitsWithoutReportsAreIgnored() {
        var stream = EventStream()
        stream.add(scanHit(address: 5, rssi: []), at: 10)
        #expect(DeviceList().applying(all: stream.inputs).devices.isEmpty)
    }

    @Test func prunesByEventTimeOnly() {
        // Forget after 60 s; a prune pass runs at most every 6 s of event time.
        var list = DeviceList(pruneAfterMicroseconds: micros(60))
        var stream = EventStream()
        stream.add(scanHit(address: 0xA, rssi: [-60]), at: 100) // A last seen at 100 s
        stream.add(scanHit(address: 0xB, rssi: [-60]), at: 150) // B last seen at 150 s
        for input in stream.inputs { list.apply(input) }
        // Event times are seconds after 1970: a wall clock would call both long gone.
        #expect(list.devices.count == 2)

        // Exactly 60 s after A: not yet older than the limit.
        var more = EventStream()
        more.nextSequence = 3
        more.add(button(), at: 160)
        list.apply(more.inputs[0])
        #expect(list.devices.count == 2)
        #expect(list.pruned == 0)

        // Any later event — not only a scan hit — prunes A and keeps B.
        more.add(button(), at: 170)
        list.apply(more.inputs[1])
        #expect(list.sorted.map(\.address) == [0xB])
        #expect(list.pruned == 1)

        // Input that carries no event time (an undecodable record) never prunes.
        list.apply(.undecodable(EventDecodingError(sequence: 5, reason: .unknownKind(200))))
        #expect(list.sorted.map(\.address) == [0xB])
        #expect(list.pruned == 1)

        // A pruned device that reappears starts afresh.
        more.nextSequence = 6
        more.add(scanHit(address: 0xA, rssi: [-70]), at: 180)
        list.apply(more.inputs[2])
        #expect(list.devices.count == 2)
        #expect(list.sorted.first { $0.address == 0xA }?.hits == 1)
    }

    @Test func pruningWaitsForThePruneInterval() {
        // pruneAfter 60 s gives a 6 s interval between prune passes.
        var list = DeviceList(pruneAfterMicroseconds: micros(60))
        #expect(list.pruneIntervalMicroseconds == micros(6))
        var stream = EventStream()
        stream.add(scanHit(address: 0xA, rssi: [-60]), at: 100) // pass at 100 s; next at 106 s
        stream.add(scanHit(address: 0xB, rssi: [-60]), at: 105)
        stream.add(button(), at: 160.5)                         // pass: A (100 s) is 60.5 s old
        for input in stream.inputs { list.apply(input) }
        #expect(list.sorted.map(\.address) == [0xB])
        #expect(list.nextPruneAt == micros(166.5))

        // B is now over 60 s old, but the next pass is not due until 166.5 s.
        var later = EventStream()
        later.nextSequence = 4
        later.add(button(), at: 165.5)
        later.add(button(), at: 166.5)
        list.apply(later.inputs[0])
        #expect(list.sorted.map(\.address) == [0xB])
        list.apply(later.inputs[1])
        #expect(list.devices.isEmpty)
        #expect(list.pruned == 2)
    }

    @Test func codableRoundTripKeepsDevicesAndPruneState() throws {
        var stream = EventStream()
        for address: UInt64 in [0x9, 0x3, 0x7, 0x1] {
            stream.add(scanHit(address: address, type: address == 7 ? .addressPublic : .addressRandom,
                               rssi: [-50, -51], txPower: address == 3 ? 4 : nil), at: 10 + Double(address))
        }
        let list = DeviceList(pruneAfterMicroseconds: micros(30)).applying(all: stream.inputs)
        // `sorted` orders by (address type, address): public devices first.
        #expect(list.sorted.map(\.address) == [0x7, 0x1, 0x3, 0x9])
        let data = try JSONEncoder().encode(list)
        let decoded = try JSONDecoder().decode(DeviceList.self, from: data)
        #expect(decoded == list)
        // Decoded state keeps folding the same way.
        var next = EventStream()
        next.nextSequence = 5
        next.add(scanHit(address: 0x3, rssi: [-40]), at: 20)
        #expect(decoded.applying(next.inputs[0]) == list.applying(next.inputs[0]))
    }
}
