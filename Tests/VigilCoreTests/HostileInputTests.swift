import Testing
import VigilCore
import VigilEvents

/// Payloads decode from whatever a log holds; projections must survive any value a valid
/// message can carry, or one bad record stops every replay.
@Suite("Projections on extreme values")
struct HostileInputTests {
    @Test func extremeButValidScanHitValuesDoNotCrashTheDeviceList() throws {
        // A decodable ScanHit with a huge rssi_sum once trapped on overflow. This ran in an exit
        // test (a child process) until one hung CI for 15 minutes: the child exited and was never
        // reaped. A regression now ends the test run, which fails CI just as plainly.
        var hit = ScanHit()
        hit.address = 1
        hit.count = 1
        hit.rssiMin = -60
        hit.rssiMax = -60
        hit.rssiSum = Int64.max / 50
        var list = DeviceList()
        list.apply(.event(Event(sequence: 1, timeMicroseconds: 1_000_000, body: .scanHit(hit))))
        list.apply(.event(Event(sequence: 2, timeMicroseconds: 2_000_000, body: .scanHit(hit))))
        let device = try #require(list.sorted.first)
        #expect(device.hits == 2)
        #expect(device.rssiSum == 2 * (Int64.max / 50))
        // rssi_sum x 100 overflows: the window's mean is pinned at the top, not trapped.
        #expect(device.lastMeanRSSICentiDBm == Int32.max)
        // At the end of time the old stay has long expired and a new one begins.
        list.apply(.event(Event(sequence: 3, timeMicroseconds: UInt64.max, body: .scanHit(hit))))
        let last = try #require(list.sorted.first)
        #expect(list.sorted.count == 1)
        #expect(last.hits == 1 && last.lastSeenMicroseconds == UInt64.max)
    }

    @Test func ordinaryExtremesFoldWithoutOverflow() throws {
        // Within any real radio's range, and at the edges of the message types' other fields.
        var stream = EventStream()
        var hit = ScanHit()
        hit.address = UInt64.max // bits above 48 are ignored for identity
        hit.count = UInt32.max
        hit.rssiMin = -127
        hit.rssiMax = 20
        hit.rssiSum = -127 * Int64(UInt32.max)
        hit.firstOffsetUs = 10_000_000
        stream.add(.scanHit(hit), at: 1)
        stream.add(.scanHit(hit), at: 2)
        let list = DeviceList().applying(all: stream.inputs)
        let device = try #require(list.sorted.first)
        #expect(device.reports == 2 * UInt64(UInt32.max))
        #expect(device.rssiMin == -127)
        #expect(device.lastMeanRSSICentiDBm == -12_700)
        // An offset larger than the event time must not crash either.
        #expect(device.firstSeenMicroseconds == micros(1) &- 10_000_000)
    }
}
