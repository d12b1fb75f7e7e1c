import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilSystem
import VigilTestSupport
@testable import VigilNode

/// Occupancy (issue 11, item 3): each minute the box logs how many distinct advertisers it heard
/// in it, a count and nothing else; that is what the hub shows instead of scan data.
@Suite struct OccupancyTests {
    @Test func eachEndedMinuteIsCountedOnceAfterItsLastScanWindowWasReported() {
        #expect(OccupancySampler.latestCompleteMinute(at: 64_000_000) == nil, "a minute ends, then 5 s for its last scan window")
        #expect(OccupancySampler.latestCompleteMinute(at: 65_000_000) == 0)
        #expect(OccupancySampler.latestCompleteMinute(at: 124_999_999) == 0)
        #expect(OccupancySampler.latestCompleteMinute(at: 125_000_000) == 60_000_000)
    }

    @Test func aRunningBoxLogsTheAdvertisersItHeardEachMinuteAndTheHealthKeepsTheNewest() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let (node, _) = try issue10Node(dir, clock: clock, advertisers: 6)
        let running = try NodeThread(node, name: "vigil-test-loop")
        await settled(running)
        await advance(clock, running, byMicroseconds: 190_000_000, step: 200_000)
        let newest = await onLoop(running) { $0.projections.health.occupancy }
        running.requestStop(reason: "test")
        try await ended(running)

        let samples = try storedEvents(dir).compactMap { e -> (UInt64, OccupancySampled)? in
            if case .occupancySampled(let o) = e.body { (e.timeMicroseconds, o) } else { nil }
        }
        let start = clock.nowMicroseconds() - 190_000_000
        #expect(samples.map(\.1.minuteStartUs) == [0, 1, 2].map { start / 60_000_000 * 60_000_000 + $0 * 60_000_000 },
                "three minutes ended (each sampled once, in order)")
        for (time, o) in samples {
            #expect(o.advertisers == 6, "the simulated radio's six advertisers, each counted once however often heard")
            #expect(o.tags == 0)
            #expect(time >= o.minuteStartUs + 65_000_000, "sampled after the minute and its last scan window")
        }
        #expect(samples.allSatisfy { $0.1.radioOn }, "the radio came on at the first minute's start: every minute was heard whole")
        #expect(newest?.minuteStartMicroseconds == samples.last?.1.minuteStartUs && newest?.advertisers == 6)
    }

    @Test func theCountIsOfDistinctAddressesHeardInsideTheMinute() {
        var devices = DeviceList()
        func hit(_ address: UInt64, first: UInt64, last: UInt64, at time: UInt64, sequence: UInt64) {
            var h = ScanHitFields()
            h.address = address
            h.count = 1
            h.firstOffsetUs = time - first
            h.lastOffsetUs = time - last
            devices.apply(scanHit: h, sequence: sequence, timeMicroseconds: time)
        }
        hit(1, first: 10_000_000, last: 50_000_000, at: 50_000_000, sequence: 1)   // inside minute 0
        hit(2, first: 55_000_000, last: 61_000_000, at: 61_000_000, sequence: 2)   // straddles into minute 1
        hit(3, first: 61_000_000, last: 62_000_000, at: 62_000_000, sequence: 3)   // minute 1 only
        hit(1, first: 63_000_000, last: 64_000_000, at: 64_000_000, sequence: 4)   // 1 again, in minute 1
        let minute0 = devices.heard(from: 0, until: 60_000_000, isTag: { $0 == 2 })
        #expect(minute0.advertisers == 2 && minute0.tags == 1)
        let minute1 = devices.heard(from: 60_000_000, until: 120_000_000, isTag: { _ in false })
        #expect(minute1.advertisers == 3)
    }
}
