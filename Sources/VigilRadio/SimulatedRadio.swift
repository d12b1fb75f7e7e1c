import VigilEvents
import VigilSystem

/// Settings of the simulated radio (config section `sim:`).
public struct RadioSimulationSettings: Sendable, Equatable {
    /// Advertisers present at any time.
    public var advertisers: Int = 40
    /// Each advertiser picks an interval in this range (BLE allows 20 ms ... 10.24 s).
    public var minIntervalMicroseconds: UInt64 = 100_000
    public var maxIntervalMicroseconds: UInt64 = 1_000_000
    /// RSSI random walk: each report moves by at most this many dB, within [-100, -30].
    public var rssiStepDB: Int = 2
    /// Mean stay of an advertiser; when it leaves, a new one (new address) arrives.
    public var meanStayMicroseconds: UInt64 = 600_000_000
    public var seed: UInt64 = 0x5EED
    public init() {}
}

/// A radio whose advertisers are simulated: they advertise at their own intervals (with BLE's
/// random advDelay), drift in RSSI, arrive and leave. Driven by a timer armed for the next
/// advertisement, so the event loop wakes exactly when a report is due — no polling.
///
/// The advertisers' schedule runs on the injected monotonic clock (a test advancing a
/// `ManualClock` hears them without sleeping); reports are stamped on the wall clock.
public final class SimulatedRadio: RadioAdapter {
    struct Advertiser {
        var address: UInt64
        var addressType: AddressType
        var interval: UInt64
        /// Monotonic microseconds, like `leavesAt`.
        var next: UInt64
        var leavesAt: UInt64
        var rssi: Int
        var txPower: Int8?
        var connectable: Bool
        var data: [UInt8]
    }

    public let name = "sim"
    public var descriptor: Int32 { timer.fd }
    private let settings: RadioSimulationSettings
    private let clock: any WallClock
    private let monotonic: any MonotonicClock
    private let timer: ClockTimer
    private var random: SplitMix64
    private var advertisers: [Advertiser] = []
    private var running = false
    public private(set) var reportsGenerated: UInt64 = 0
    /// What the node asked to advertise (the simulation has no air; tests and `status` read it).
    public private(set) var advertising = AdvertisingPlan.off

    public init(settings: RadioSimulationSettings, clock: any WallClock,
                monotonic: any MonotonicClock = SystemMonotonicClock()) throws {
        self.settings = settings
        self.clock = clock
        self.monotonic = monotonic
        self.timer = try ClockTimer(clock: monotonic)
        self.random = SplitMix64(seed: settings.seed)
    }

    /// Microseconds on the monotonic clock: the advertisers' schedule.
    private var now: UInt64 { monotonic.nowNanoseconds() / 1_000 }

    public func start() throws {
        let now = self.now
        advertisers = (0..<max(0, settings.advertisers)).map { _ in makeAdvertiser(now: now) }
        running = true
        try arm()
    }

    public func advertise(_ plan: AdvertisingPlan) { advertising = plan }

    public var reportsState: Bool { false }

    public func stop() {
        running = false
        try? timer.disarm()
    }

    public func readReady(into outputs: inout [RadioOutput]) throws {
        timer.drain()
        guard running else { return }
        let now = self.now
        let wallNow = clock.nowMicroseconds()
        for i in advertisers.indices {
            // After a stalled loop (or a manual clock moved far) do not generate everything that was missed:
            // an advertiser nobody listened to is simply heard again from now on.
            if now > advertisers[i].next &+ 2_000_000 { advertisers[i].next = now }
            while advertisers[i].next <= now {
                if advertisers[i].next >= advertisers[i].leavesAt {
                    advertisers[i] = makeAdvertiser(now: advertisers[i].next)
                    continue
                }
                // Stamped when it was due, so the gaps between reports are the advertiser's, not the loop's.
                let late = now - advertisers[i].next
                outputs.append(.report(report(from: &advertisers[i], timeMicroseconds: wallNow > late ? wallNow - late : 0)))
                reportsGenerated += 1
                // advDelay: 0-10 ms of random delay per event (Core spec Vol 6 Part B §4.4.2.2.1).
                advertisers[i].next += advertisers[i].interval + UInt64.random(in: 0...10_000, using: &random)
            }
        }
        try arm()
    }

    private func arm() throws {
        guard let next = advertisers.map(\.next).min() else { return }
        try timer.arm(atNanoseconds: next > UInt64.max / 1_000 ? UInt64.max : next * 1_000)
    }

    private func report(from a: inout Advertiser, timeMicroseconds: UInt64) -> AdvertisingReport {
        a.rssi = min(-30, max(-100, a.rssi + Int.random(in: -settings.rssiStepDB...settings.rssiStepDB, using: &random)))
        return AdvertisingReport(address: a.address, addressType: a.addressType, rssi: Int8(a.rssi),
                                 txPower: a.txPower, connectable: a.connectable, data: a.data,
                                 timeMicroseconds: timeMicroseconds)
    }

    private func makeAdvertiser(now: UInt64) -> Advertiser {
        let random48 = random.next() & 0xFFFF_FFFF_FFFF
        let isRandom = random.next() % 4 != 0 // phones mostly use random addresses
        // Random static/private addresses have their top two bits set by type; keep them valid.
        let address = isRandom ? (random48 & 0x3FFF_FFFF_FFFF) | 0xC000_0000_0000 : random48
        let interval = UInt64.random(in: settings.minIntervalMicroseconds...max(settings.minIntervalMicroseconds, settings.maxIntervalMicroseconds), using: &random)
        let stay = UInt64.random(in: settings.meanStayMicroseconds / 2...settings.meanStayMicroseconds * 3 / 2, using: &random)
        var data: [UInt8] = [0x02, 0x01, 0x06] // flags: LE general discoverable, BR/EDR not supported
        let flavour = random.next() % 4
        switch flavour {
        case 0: data += [0x03, 0x03, 0x6F, 0xFD] // exposure-notification-like service UUID 0xFD6F
        case 1:
            let name = Array("Phone-\(String(random48 & 0xFFFF, radix: 16))".utf8)
            data += [UInt8(name.count + 1), 0x09] + name
        case 2: data += [0x05, 0xFF, 0x4C, 0x00, 0x10, 0x05] // manufacturer data
        default: data += [0x03, 0x19, 0x40, 0x02] // appearance: generic watch
        }
        let txPower: Int8? = random.next() % 3 == 0 ? Int8.random(in: -20...4, using: &random) : nil
        return Advertiser(address: address, addressType: isRandom ? .addressRandom : .addressPublic,
                          interval: interval, next: now + UInt64.random(in: 0...interval, using: &random), leavesAt: now + stay,
                          rssi: Int.random(in: -95...(-45), using: &random), txPower: txPower,
                          connectable: random.next() % 2 == 0, data: data)
    }
}
