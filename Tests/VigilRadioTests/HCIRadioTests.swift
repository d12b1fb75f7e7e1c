import Glibc
import Testing
@testable import VigilRadio
import VigilEvents
import VigilSystem

/// The kernel side of the radio for tests: "sockets" are packet socket pairs, and the test plays
/// the controller on the other end with HCI bytes. Nothing here stands in for Bluetooth in the
/// product: the VM tests run the same radio on the kernel's HCI sockets.
final class ScriptedTransport: HCITransport {
    var adapters: [HCIAdapterInfo]
    /// The controller's end of the socket opened last, and of the notification socket.
    var controller: Int32 = -1
    var notifier: Int32 = -1
    var opened: [HCIChannel] = []
    var powerRequests: [Bool] = []

    init(adapters: [HCIAdapterInfo]) { self.adapters = adapters }

    func find(_ selector: String) throws(HCIError) -> HCIAdapterInfo? { adapters.first { $0.name == selector } }

    func open(_ adapter: HCIAdapterInfo, channel: HCIChannel) throws(HCIError) -> Int32 {
        do {
            let (radio, other) = try UnixSocket.packetPair()
            if controller >= 0 { _ = Glibc.close(controller) }
            controller = other
            opened.append(channel)
            return radio
        } catch {
            throw HCIError(operation: "socketpair", adapter: adapter.name, errno: error.errno)
        }
    }

    func openNotifications() throws(HCIError) -> Int32? {
        do {
            let (radio, other) = try UnixSocket.packetPair()
            notifier = other
            return radio
        } catch {
            throw HCIError(operation: "socketpair", adapter: "-", errno: error.errno)
        }
    }

    func requestPower(_ adapter: HCIAdapterInfo, up: Bool) throws(HCIError) { powerRequests.append(up) }

    func read(_ fd: Int32, adapter: String, into buffer: UnsafeMutableRawBufferPointer) throws(HCIError) -> Int? {
        switch ErrnoCall.negativeFails({ Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
        case .success(let n): return n
        case .failure(.wouldBlock): return nil
        case .failure(let e): throw HCIError(operation: "read", adapter: adapter, errno: e)
        }
    }

    func write(_ fd: Int32, adapter: String, packet: [UInt8]) throws(HCIError) {
        if case .failure(let e) = ErrnoCall.negativeFails({ packet.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }) {
            throw HCIError(operation: "write", adapter: adapter, errno: e)
        }
    }

    func close(_ fd: Int32) { _ = Glibc.close(fd) }

    // MARK: The controller's side

    /// Commands the radio wrote since the last call, as (opcode, parameters).
    func commands() -> [(opcode: UInt16, parameters: [UInt8])] {
        var out: [(UInt16, [UInt8])] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while controller >= 0 {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(controller, $0.baseAddress, $0.count) }
            guard n >= 4, buffer[0] == 0x01 else { break }
            out.append((UInt16(buffer[1]) | UInt16(buffer[2]) << 8, Array(buffer[4..<n])))
        }
        return out
    }

    func send(_ packet: [UInt8]) {
        _ = packet.withUnsafeBytes { Glibc.write(controller, $0.baseAddress, $0.count) }
    }

    func complete(_ opcode: UInt16, status: UInt8 = 0, _ parameters: [UInt8] = []) {
        let body: [UInt8] = [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), status] + parameters
        send([0x04, 0x0E, UInt8(body.count)] + body)
    }

    func notify(event: UInt16, device: UInt16) {
        let packet: [UInt8] = [0x04, 0xFD, 0x06, 0x01, 0x00, UInt8(event), 0x00, UInt8(device), 0x00]
        _ = packet.withUnsafeBytes { Glibc.write(notifier, $0.baseAddress, $0.count) }
    }
}

@Suite("HCI radio state machine")
struct HCIRadioTests {
    /// Wall and monotonic time for the radio, moved only by the test: waits are `advance`s.
    let clock = ManualClock()

    static let hci0 = HCIAdapterInfo(id: 0, name: "hci0", address: 0x00_1A_7D_DA_71_13, isUp: true)
    static let presence: [UInt8] = [0x03, 0x16, 0xF1, 0xFC]
    static let alert: [UInt8] = [0x04, 0x16, 0xF1, 0xFC, 0x11]
    static let ms: UInt64 = 1_000

    var settings: HCIRadioSettings {
        var s = HCIRadioSettings()
        s.adapter = "hci0"
        s.commandTimeoutMicroseconds = 100_000
        s.backoffMinMicroseconds = 20_000
        s.backoffMaxMicroseconds = 80_000
        s.rotationSlotMicroseconds = 40_000
        return s
    }

    func radio(_ settings: HCIRadioSettings, _ t: ScriptedTransport) throws -> HCIRadio {
        try HCIRadio(settings: settings, clock: clock, monotonic: clock, transport: t)
    }

    /// Plays the controller: answers every command with success (or with `refuse[opcode]`), and
    /// the features / BD_ADDR reads with `features` and an address, until the radio goes quiet.
    /// Returns every command written and every output, in order.
    @discardableResult
    func drive(_ radio: HCIRadio, _ t: ScriptedTransport, features: UInt8 = 0x00, refuse: [UInt16: UInt8] = [:],
               silent: Set<UInt16> = [], rounds: Int = 40, maximumAdvertisingData: UInt16? = nil, refuseLongData: Bool = false,
               record: ((UInt16, [UInt8]) -> Void)? = nil, outputs: inout [RadioOutput]) throws -> [UInt16] {
        var opcodes: [UInt16] = []
        for _ in 0..<rounds {
            try radio.readReady(into: &outputs)
            let written = t.commands()
            if written.isEmpty { break }
            for c in written {
                opcodes.append(c.opcode)
                record?(c.opcode, c.parameters)
                if silent.contains(c.opcode) { continue }
                switch c.opcode {
                case HCICommand.Opcode.leReadLocalFeatures: t.complete(c.opcode, [0x00, features, 0, 0, 0, 0, 0, 0]) // bits 8–15 in byte 1
                case HCICommand.Opcode.readBDAddress: t.complete(c.opcode, [0x13, 0x71, 0xDA, 0x7D, 0x1A, 0x00])
                case HCICommand.Opcode.leReadMaximumAdvertisingDataLength:
                    if let m = maximumAdvertisingData { t.complete(c.opcode, [UInt8(m & 0xFF), UInt8(m >> 8)]) } else { t.complete(c.opcode, status: 0x01) }
                case HCICommand.Opcode.leSetExtendedAdvertisingData where refuseLongData && c.parameters.count > 35:
                    t.complete(c.opcode, status: 0x12)
                default: t.complete(c.opcode, status: refuse[c.opcode] ?? 0)
                }
            }
        }
        return opcodes
    }

    /// Whether the node's loop would wake for the radio now (its descriptor is readable), without
    /// waiting: a deadline on the manual clock makes it readable when `advance` reaches it.
    func wakes(_ radio: HCIRadio) throws -> Bool {
        let epoll = try Epoll()
        try epoll.add(radio.descriptor, token: 1)
        return try !epoll.wait(timeoutMilliseconds: 0).isEmpty
    }

    func states(_ outputs: [RadioOutput]) -> [RadioState] {
        outputs.compactMap { if case .stateChanged(let s, _) = $0 { s } else { nil } }
    }

    @Test func theDefaultBackOffIsAQuarterSecondDoublingToThirtySeconds() {
        let s = HCIRadioSettings()
        #expect(s.backoffMinMicroseconds == 250_000 && s.backoffMaxMicroseconds == 30_000_000)
        #expect(s.stableAfterMicroseconds == 60_000_000)
    }

    @Test func theRawChannelReadsFeaturesSetsTheAddressWithScanningOffThenScansAndAdvertises() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.presence]))
        try radio.start()
        var outputs: [RadioOutput] = []
        let sent = try drive(radio, t, outputs: &outputs)
        typealias O = HCICommand.Opcode
        // No event masks on the raw channel: the kernel's stay.
        #expect(sent == [O.readBDAddress, O.leReadLocalFeatures, O.leSetAdvertiseEnable, O.leSetScanEnable, O.leSetRandomAddress,
                         O.leSetScanParameters, O.leSetScanEnable,
                         O.leSetAdvertisingParameters, O.leSetAdvertisingData, O.leSetAdvertiseEnable])
        #expect(t.opened == [.raw])
        #expect(states(outputs) == [.on])
        #expect(outputs.contains(.onAir(Self.presence)))
        #expect(radio.controllerAddress == 0x00_1A_7D_DA_71_13)
        #expect(!radio.usingExtendedCommands)
        #expect(try !wakes(radio), "nothing pending: no timer left armed")
    }

    @Test func theUserChannelResetsAndUnmasksLEEventsFirst() throws {
        var s = settings
        s.channel = .user
        let down = HCIAdapterInfo(id: 0, name: "hci0", address: 1, isUp: false)
        let t = ScriptedTransport(adapters: [down])
        let radio = try radio(s, t)
        try radio.start()
        var outputs: [RadioOutput] = []
        let sent = try drive(radio, t, outputs: &outputs)
        #expect(Array(sent.prefix(5)) == [HCICommand.Opcode.reset, HCICommand.Opcode.setEventMask, HCICommand.Opcode.leSetEventMask,
                                          HCICommand.Opcode.readBDAddress, HCICommand.Opcode.leReadLocalFeatures])
        #expect(t.opened == [.user])
        #expect(states(outputs) == [.on])
    }

    @Test func aControllerWithExtendedAdvertisingGetsOnlyExtendedCommands() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.presence]))
        try radio.start()
        var outputs: [RadioOutput] = []
        let sent = try drive(radio, t, features: 0x10, outputs: &outputs) // LE feature bit 12 (byte 1, bit 4)
        typealias O = HCICommand.Opcode
        let legacy: Set<UInt16> = [O.leSetScanEnable, O.leSetScanParameters, O.leSetAdvertiseEnable, O.leSetAdvertisingData,
                                   O.leSetAdvertisingParameters, O.leSetRandomAddress]
        #expect(radio.usingExtendedCommands)
        #expect(sent.allSatisfy { !legacy.contains($0) }, "no legacy LE command after the controller showed extended advertising")
        #expect(sent.contains(O.leSetExtendedScanEnable) && sent.contains(O.leSetAdvertisingSetRandomAddress)
            && sent.contains(O.leSetExtendedAdvertisingData) && sent.contains(O.leSetExtendedAdvertisingEnable))
        #expect(states(outputs) == [.on])
    }

    /// Signed frames (201 bytes) go out as extended advertisements (properties 0: ADV_EXT_IND and
    /// AUX_ADV_IND) beside the legacy-PDU adverts; a controller that carries only 31 bytes leaves
    /// them out, counted, and keeps the short ones on the air.
    @Test func aLongPayloadGoesOutAsAnExtendedAdvertisementWhereTheControllerCarriesIt() throws {
        let long: [UInt8] = [200, 0x16, 0xF1, 0xFC] + [UInt8](repeating: 0x21, count: 197)
        // (the controller's answer to LE Read Maximum Advertising Data Length, whether it refuses
        // long data, whether the long advert goes out, the length the radio ends with)
        let cases: [(UInt16?, Bool, Bool, Int)] = [(251, false, true, 251), (31, false, false, 31), (nil, false, true, 251), (nil, true, false, 31)]
        for (maximum, refuseLong, expectLong, learned) in cases {
            let t = ScriptedTransport(adapters: [Self.hci0])
            let radio = try radio(settings, t)
            radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.presence, long]))
            try radio.start()
            var outputs: [RadioOutput] = []
            var written: [(UInt16, [UInt8])] = []
            try drive(radio, t, features: 0x10, maximumAdvertisingData: maximum, refuseLongData: refuseLong,
                      record: { written.append(($0, $1)) }, outputs: &outputs)
            for _ in 0..<6 {
                clock.advance(byMicroseconds: 40 * Self.ms)
                try drive(radio, t, features: 0x10, maximumAdvertisingData: maximum, refuseLongData: refuseLong,
                          record: { written.append(($0, $1)) }, outputs: &outputs)
            }
            typealias O = HCICommand.Opcode
            let data = written.filter { $0.0 == O.leSetExtendedAdvertisingData }.map { Array($0.1.dropFirst(4)) }
            let properties = written.filter { $0.0 == O.leSetExtendedAdvertisingParameters }.map { UInt16($0.1[1]) | UInt16($0.1[2]) << 8 }
            let onAir = outputs.compactMap { if case .onAir(let p) = $0 { p } else { nil } }
            #expect(data.contains(Self.presence))
            #expect(onAir.contains(long) == expectLong, "maximum \(String(describing: maximum)), refused \(refuseLong)")
            #expect(properties.contains(0x0000) == (expectLong || refuseLong), "the extended PDU's parameters")
            #expect(properties.contains(0x0010), "the short advert keeps its legacy PDU")
            #expect(radio.maximumAdvertisingDataLength == learned)
            #expect(radio.counters.longPayloadsSkipped == (expectLong ? 0 : 1))
            #expect(onAir.contains(Self.presence))
            if !expectLong { #expect(onAir.last == Self.presence, "without the long advert, the short one stays on the air") }
        }
    }

    @Test func aRefusedAdvertisingCommandKeepsTheRadioOnAndRetriesAdvertisingAfterTheBackOff() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.presence]))
        try radio.start()
        var outputs: [RadioOutput] = []
        try drive(radio, t, refuse: [HCICommand.Opcode.leSetAdvertisingParameters: 0x0C], outputs: &outputs)
        #expect(states(outputs) == [.on], "scanning goes on; the radio is not restarted")
        #expect(outputs.contains { if case .problem(let p) = $0 { p.contains("refused") } else { false } })
        #expect(radio.counters.advertisingRefusals == 1 && t.opened.count == 1)
        // Not before the back-off's 20 ms...
        clock.advance(byMicroseconds: 20 * Self.ms - 1)
        #expect(try !wakes(radio))
        #expect(try drive(radio, t, outputs: &outputs).isEmpty)
        // ...and then at once, and this time the controller agrees.
        clock.advance(byMicroseconds: 1)
        #expect(try wakes(radio))
        let again = try drive(radio, t, outputs: &outputs)
        #expect(again.contains(HCICommand.Opcode.leSetAdvertiseEnable))
        #expect(outputs.contains(.onAir(Self.presence)))
    }

    @Test func refusedAdvertisingBacksOffDoublingAndIsReportedOncePerStreak() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.presence]))
        try radio.start()
        var outputs: [RadioOutput] = []
        let refuse = [HCICommand.Opcode.leSetAdvertisingParameters: UInt8(0x0C)]
        try drive(radio, t, refuse: refuse, outputs: &outputs)
        // 20 ms, 40 ms, 80 ms, then 80 ms (the cap): each retry exactly at its time.
        for wait in [20, 40, 80, 80] as [UInt64] {
            let before = radio.counters.advertisingRefusals
            clock.advance(byMicroseconds: wait * Self.ms - 1)
            try drive(radio, t, refuse: refuse, outputs: &outputs)
            #expect(radio.counters.advertisingRefusals == before, "not before \(wait) ms")
            clock.advance(byMicroseconds: 1)
            try drive(radio, t, refuse: refuse, outputs: &outputs)
            #expect(radio.counters.advertisingRefusals == before + 1, "retried after \(wait) ms")
        }
        let problems = outputs.filter { if case .problem = $0 { true } else { false } }
        #expect(problems.count == 1, "one warning for the whole streak")
        #expect(states(outputs) == [.on])
    }

    @Test func aFailingSetupIsRetriedWithGrowingBackOffAndReportedOnce() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        try radio.start()
        var outputs: [RadioOutput] = []
        let refuse = [HCICommand.Opcode.leSetScanParameters: UInt8(0x12)]
        try drive(radio, t, refuse: refuse, outputs: &outputs)
        #expect(t.opened.count == 1)
        // 20 ms, 40 ms, 80 ms, then 80 ms (the cap) between attempts; never sooner.
        for (i, wait) in ([20, 40, 80, 80] as [UInt64]).enumerated() {
            clock.advance(byMicroseconds: wait * Self.ms - 1)
            try drive(radio, t, refuse: refuse, outputs: &outputs)
            #expect(t.opened.count == i + 1, "not before \(wait) ms")
            clock.advance(byMicroseconds: 1)
            try drive(radio, t, refuse: refuse, outputs: &outputs)
            #expect(t.opened.count == i + 2, "retried after \(wait) ms")
        }
        #expect(states(outputs) == [.unknown], "one report for a failure that repeats")
    }

    @Test func aRadioThatRanLongEnoughStartsItsBackOffAfresh() throws {
        var s = settings
        s.stableAfterMicroseconds = 1_000_000
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(s, t)
        try radio.start()
        var outputs: [RadioOutput] = []
        // Two quick failures: the next retry would wait 40 ms...
        try drive(radio, t, refuse: [HCICommand.Opcode.leSetScanParameters: 0x12], outputs: &outputs)
        clock.advance(byMicroseconds: 20 * Self.ms)
        try drive(radio, t, outputs: &outputs)
        #expect(states(outputs) == [.unknown, .on])
        // ...but it ran for the stable time, so a failure now waits 20 ms again.
        clock.advance(byMicroseconds: 1_000_000)
        t.send([0x04, 0x10, 0x01, 0x2A]) // hardware error
        try drive(radio, t, outputs: &outputs)
        #expect(t.opened.count == 2)
        clock.advance(byMicroseconds: 20 * Self.ms)
        try drive(radio, t, outputs: &outputs)
        #expect(t.opened.count == 3)
        #expect(states(outputs) == [.unknown, .on, .unknown, .on])
    }

    @Test func anUnansweredCommandTimesOutAndTheRadioStartsAgain() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        try radio.start()
        var outputs: [RadioOutput] = []
        try drive(radio, t, silent: [HCICommand.Opcode.leReadLocalFeatures], outputs: &outputs)
        clock.advance(byMicroseconds: 100 * Self.ms - 1)
        #expect(try !wakes(radio), "the command still has time")
        try drive(radio, t, outputs: &outputs)
        #expect(radio.counters.commandTimeouts == 0)
        clock.advance(byMicroseconds: 1)
        #expect(try wakes(radio), "its deadline wakes the loop")
        try drive(radio, t, outputs: &outputs)
        #expect(radio.counters.commandTimeouts == 1)
        clock.advance(byMicroseconds: 20 * Self.ms)
        try drive(radio, t, outputs: &outputs)
        #expect(outputs.contains { if case .stateChanged(.unknown, let why) = $0 { why.contains("did not answer") } else { false } })
        #expect(states(outputs).last == .on && t.opened.count == 2)
    }

    @Test func aResetBySomeoneElseRestoresTheFullMasksAndScansAgain() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        try radio.start()
        var outputs: [RadioOutput] = []
        try drive(radio, t, outputs: &outputs)
        t.complete(HCICommand.Opcode.reset) // `hciconfig reset` through the ioctl: the kernel's Reset
        let commands = t.commands()
        #expect(commands.isEmpty)
        var sent: [UInt16] = []
        try radio.readReady(into: &outputs)
        for c in t.commands() {
            sent.append(c.opcode)
            if c.opcode == HCICommand.Opcode.setEventMask {
                #expect(c.parameters == HCICommand.le(HCICommand.fullEventMask, bytes: 8), "every bit the kernel uses")
            }
            t.complete(c.opcode)
        }
        sent += try drive(radio, t, outputs: &outputs)
        #expect(sent.first == HCICommand.Opcode.setEventMask)
        #expect(sent.contains(HCICommand.Opcode.leSetScanEnable))
        #expect(states(outputs) == [.on, .off, .on])
        #expect(radio.counters.controllerResets == 1)
    }

    @Test func scanningChangedBySomeoneElseIsReassertedAfterASecondAndAtMostEveryFiveSeconds() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        try radio.start()
        var outputs: [RadioOutput] = []
        try drive(radio, t, outputs: &outputs)
        t.complete(HCICommand.Opcode.leSetScanEnable) // the kernel turned scanning off (or on)
        t.complete(HCICommand.Opcode.leSetScanEnable)
        try radio.readReady(into: &outputs)
        #expect(t.commands().isEmpty, "not at once")
        clock.advance(byMicroseconds: 1_000 * Self.ms - 1)
        #expect(try drive(radio, t, outputs: &outputs).isEmpty)
        clock.advance(byMicroseconds: 1)
        var sent = try drive(radio, t, outputs: &outputs)
        #expect(sent.filter { $0 == HCICommand.Opcode.leSetScanEnable }.count == 2, "scan off, then on")
        #expect(radio.counters.foreignChanges == 2)
        // Changed again at once: re-asserted five seconds after the last re-assertion, not one.
        t.complete(HCICommand.Opcode.leSetScanEnable)
        try radio.readReady(into: &outputs)
        clock.advance(byMicroseconds: 5_000 * Self.ms - 1)
        #expect(try drive(radio, t, outputs: &outputs).isEmpty)
        clock.advance(byMicroseconds: 1)
        sent = try drive(radio, t, outputs: &outputs)
        #expect(sent.filter { $0 == HCICommand.Opcode.leSetScanEnable }.count == 2)
        #expect(states(outputs) == [.on])
    }

    @Test func severalPayloadsTakeTurnsEachAroundAnEnable() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.presence, Self.alert]))
        try radio.start()
        var outputs: [RadioOutput] = []
        try drive(radio, t, outputs: &outputs)
        for _ in 0..<4 {
            clock.advance(byMicroseconds: 40 * Self.ms)
            #expect(try wakes(radio), "each slot's end wakes the loop")
            try drive(radio, t, outputs: &outputs)
        }
        let onAir = outputs.compactMap { if case .onAir(let p) = $0 { p } else { nil } }
        #expect(onAir == [Self.presence, Self.alert, Self.presence, Self.alert, Self.presence], "one turn per 40 ms slot")
        // Back to one payload: the rotation stops (no timer left spinning).
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.presence]))
        try drive(radio, t, outputs: &outputs)
        clock.advance(byMicroseconds: 100 * Self.ms)
        #expect(try !wakes(radio))
        #expect(try drive(radio, t, outputs: &outputs).isEmpty)
    }

    @Test func aPoweredDownAdapterIsPoweredUpWithoutWaitingAndOpenedWhenItComesUp() throws {
        let down = HCIAdapterInfo(id: 0, name: "hci0", address: 1, isUp: false)
        let t = ScriptedTransport(adapters: [down])
        let radio = try radio(settings, t)
        try radio.start()
        var outputs: [RadioOutput] = []
        try radio.readReady(into: &outputs)
        #expect(t.powerRequests == [true])
        #expect(t.opened.isEmpty)
        #expect(outputs.contains { if case .stateChanged(.off, let why) = $0 { why.contains("power-up requested") } else { false } })
        t.adapters = [Self.hci0]
        t.notify(event: 3, device: 0) // UP
        try drive(radio, t, outputs: &outputs)
        #expect(t.opened == [.raw])
        #expect(states(outputs) == [.off, .on])
    }

    @Test func aSocketClosedUnderTheRadioIsRecoveredWhenTheAdapterIsBack() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        try radio.start()
        var outputs: [RadioOutput] = []
        try drive(radio, t, outputs: &outputs)
        _ = Glibc.close(t.controller) // the adapter went away
        t.controller = -1
        try radio.readReady(into: &outputs)
        #expect(states(outputs) == [.on, .off])
        clock.advance(byMicroseconds: 20 * Self.ms)
        try drive(radio, t, outputs: &outputs)
        #expect(states(outputs) == [.on, .off, .on])
    }
}
