import Testing
@testable import VigilRadio

/// The advertising rules without a socket: what the scheduler asks of the controller.
@Suite struct AdvertisingSchedulerTests {
    static let settings = AdvertisingScheduler.Settings(intervalMicroseconds: 100_000, rotationSlotMicroseconds: 1_000_000,
                                                        backoffMinMicroseconds: 1_000_000, backoffMaxMicroseconds: 60_000_000)
    static let address: UInt64 = 0xC1_22_33_44_55_66
    let a: [UInt8] = [0x02, 0x01, 0x06]
    let b: [UInt8] = [0x03, 0xFF, 0x01, 0x02]

    /// Reconciles with legacy commands; the scan commands are recorded with their random flag.
    func reconcile(_ s: inout AdvertisingScheduler, now: UInt64, scans: inout [Bool]) -> [HCIRadioStep] {
        var counters = HCIRadioCounters()
        var seen: [Bool] = []
        let commands = s.reconcile(now: now, extended: false, scanning: { random in
            seen.append(random)
            return (disable: .leSetScanEnable(false),
                    parameters: .leSetScanParameters(active: true, intervalUnits: 160, windowUnits: 160, randomAddress: random),
                    enable: .leSetScanEnable(true))
        }, counters: &counters)
        scans += seen
        return commands.map { $0.step }
    }

    @Test func twoPayloadsTakeTurnsAndAnAirThatMatchesGetsNoCommand() {
        var s = AdvertisingScheduler(settings: Self.settings)
        var scans: [Bool] = []
        _ = s.setPlan(AdvertisingPlan(address: Self.address, payloads: [a, b]))
        let first = reconcile(&s, now: 0, scans: &scans)
        #expect(first == [.scanDisable, .advertiseAddress, .scanParameters, .scanEnable, .advertiseParameters, .advertiseData, .advertiseEnable])
        #expect(scans == [true], "scanning restarts from the random address it just set")
        #expect(s.onAir.payload == a)
        #expect(reconcile(&s, now: 10, scans: &scans).isEmpty, "nothing is sent when the air matches")

        s.deadlinesPassed(now: 999_999, running: true, idle: true)
        #expect(reconcile(&s, now: 999_999, scans: &scans).isEmpty, "a slot is not over early")
        s.deadlinesPassed(now: 1_000_000, running: true, idle: true)
        #expect(reconcile(&s, now: 1_000_000, scans: &scans) == [.advertiseDisable, .advertiseData, .advertiseEnable])
        #expect(s.onAir.payload == b)
    }

    @Test func aSlotEndingWhileACommandIsInFlightIsRetriedSoonNotSkipped() {
        var s = AdvertisingScheduler(settings: Self.settings)
        var scans: [Bool] = []
        _ = s.setPlan(AdvertisingPlan(address: Self.address, payloads: [a, b]))
        _ = reconcile(&s, now: 0, scans: &scans)
        s.deadlinesPassed(now: 1_000_000, running: true, idle: false)
        #expect(s.rotateAt == 1_250_000)
        #expect(s.onAir.payload == a)
    }

    @Test func aRefusedConnectableAdvertGoesOutNonConnectableUntilTheLinkEnds() {
        var s = AdvertisingScheduler(settings: Self.settings)
        var scans: [Bool] = []
        var counters = HCIRadioCounters()
        _ = s.setPlan(AdvertisingPlan(address: Self.address, payloads: [a], connectable: [0]))
        s.linkOpened(7, peripheral: false)
        _ = reconcile(&s, now: 0, scans: &scans)
        #expect(s.onAir.connectable)
        #expect(s.connectableRefused(.advertiseEnable, now: 5, counters: &counters))
        #expect(counters.connectableRefusals == 1)
        _ = reconcile(&s, now: 6, scans: &scans)
        #expect(!s.onAir.connectable && s.onAir.enabled, "on the air at once, non-connectable")
        #expect(!s.connectableRefused(.advertiseEnable, now: 7, counters: &counters), "a non-connectable advert has no fallback")

        s.linkClosed(7)
        s.airUnknown()
        _ = reconcile(&s, now: 8, scans: &scans)
        #expect(s.onAir.connectable, "connectable again once no link is held")
    }

    @Test func anyOtherRefusalStopsAdvertisingForABackOffAndSaysSoOncePerStreak() {
        var s = AdvertisingScheduler(settings: Self.settings)
        var scans: [Bool] = []
        var counters = HCIRadioCounters()
        _ = s.setPlan(AdvertisingPlan(address: Self.address, payloads: [a]))
        _ = reconcile(&s, now: 0, scans: &scans)
        let told = s.refused(.leSetAdvertisingData(a), status: 0x0C, now: 100, adapter: "hci0", counters: &counters)
        #expect(told.count == 1 && told[0].contains("not advertising; retrying"))
        let until = s.blockedUntil ?? 0
        #expect(until > 100)
        #expect(reconcile(&s, now: until - 1, scans: &scans).isEmpty, "nothing until the back-off ends")
        #expect(!reconcile(&s, now: until, scans: &scans).isEmpty)
        #expect(s.refused(.leSetAdvertisingData(a), status: 0x0C, now: until + 1, adapter: "hci0", counters: &counters).isEmpty,
                "the same streak is told once")
        #expect(counters.advertisingRefusals == 2)
        _ = s.enabled()
        #expect(s.refused(.leSetAdvertisingData(a), status: 0x0C, now: until + 2, adapter: "hci0", counters: &counters).count == 1,
                "a new streak after advertising worked is told again")
    }

    @Test func payloadsLongerThanTheControllerSendsAreLeftOutAndCountedOncePerPlan() {
        var s = AdvertisingScheduler(settings: Self.settings)
        var counters = HCIRadioCounters()
        let long = [UInt8](repeating: 0x01, count: 100)
        _ = s.setPlan(AdvertisingPlan(address: Self.address, payloads: [long, a]))
        for now: UInt64 in [0, 1, 2] {
            _ = s.reconcile(now: now, extended: true, scanning: { _ in (.leSetScanEnable(false), .leSetScanEnable(false), .leSetScanEnable(true)) },
                            counters: &counters)
        }
        #expect(counters.longPayloadsSkipped == 1)
        #expect(s.onAir.payload == a)
        s.maximumDataLengthRead(251)
        s.airUnknown()
        _ = s.reconcile(now: 3, extended: true, scanning: { _ in (.leSetScanEnable(false), .leSetScanEnable(false), .leSetScanEnable(true)) },
                        counters: &counters)
        #expect(s.onAir.payload == long && s.onAir.extendedPDU, "a controller that says it carries 251 bytes gets the long one")
    }
}
