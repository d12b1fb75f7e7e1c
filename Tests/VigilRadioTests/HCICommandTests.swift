import Testing
@testable import VigilRadio
import VigilSystem

@Suite("HCI commands")
struct HCICommandTests {
    @Test func commandPacketsHaveTypeOpcodeLengthAndLittleEndianParameters() {
        #expect(HCICommand.reset.packet == [0x01, 0x03, 0x0C, 0x00])
        #expect(HCICommand.leSetScanEnable(true).packet == [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00])
        // Random address 12:34:56:78:9A:BC goes out least significant byte first.
        #expect(HCICommand.leSetRandomAddress(0x12_34_56_78_9A_BC).packet
            == [0x01, 0x05, 0x20, 0x06, 0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12])
    }

    @Test func scanParametersCarryIntervalWindowAndAddressType() {
        let c = HCICommand.leSetScanParameters(active: false, intervalUnits: 160, windowUnits: 80)
        #expect(c.parameters == [0x00, 0xA0, 0x00, 0x50, 0x00, 0x00, 0x00])
        let active = HCICommand.leSetScanParameters(active: true, intervalUnits: 160, windowUnits: 160, randomAddress: true)
        #expect(active.parameters == [0x01, 0xA0, 0x00, 0xA0, 0x00, 0x01, 0x00])
    }

    @Test func advertisingParametersAreNonConnectableFromTheRandomAddressOnAllChannels() {
        let p = HCICommand.leSetAdvertisingParameters(intervalUnits: 160).parameters
        #expect(p.count == 15)
        #expect(Array(p[0..<4]) == [0xA0, 0x00, 0xA0, 0x00])
        #expect(p[4] == 0x03 && p[5] == 0x01) // ADV_NONCONN_IND, own address random
        #expect(p[13] == 0x07 && p[14] == 0x00)
    }

    @Test func advertisingDataIsPaddedToThirtyOneBytes() {
        let p = HCICommand.leSetAdvertisingData([0x02, 0x01, 0x06]).parameters
        #expect(p.count == 32 && p[0] == 3 && Array(p[1...3]) == [0x02, 0x01, 0x06])
        #expect(p[4...].allSatisfy { $0 == 0 })
        // More than 31 bytes never overflows the field.
        #expect(HCICommand.leSetAdvertisingData([UInt8](repeating: 1, count: 40)).parameters.count == 32)
    }

    @Test func extendedCommandsHaveTheirSpecifiedLengths() {
        #expect(HCICommand.leSetExtendedAdvertisingParameters(intervalUnits: 160).parameters.count == 25)
        #expect(HCICommand.leSetExtendedScanParameters(active: false, intervalUnits: 160, windowUnits: 160).parameters.count == 8)
        #expect(HCICommand.leSetExtendedScanEnable(true).parameters.count == 6)
        #expect(HCICommand.leSetExtendedAdvertisingEnable(true).parameters == [0x01, 0x01, 0x00, 0x00, 0x00, 0x00])
        #expect(HCICommand.leSetExtendedAdvertisingData([1, 2, 3]).parameters == [0x00, 0x03, 0x01, 0x03, 1, 2, 3])
    }

    @Test func eventMaskEnablesLEMeta() {
        #expect(HCICommand.eventMask & (1 << 61) != 0)
        #expect(HCICommand.leEventMask & 0b10 != 0) // advertising report
        #expect(HCICommand.leEventMask & (1 << 12) != 0) // extended advertising report
    }

    @Test func scanUnitsAreClampedToTheSpecificationRange() {
        #expect(HCIRadio.units(100_000) == 160)
        #expect(HCIRadio.units(0) == 4)
        #expect(HCIRadio.units(100_000_000) == 0x4000)
    }
}

@Suite("HCI command queue")
struct HCICommandQueueTests {
    @Test func oneCommandIsInFlightAndItsCompletionReleasesTheNext() {
        var q = HCICommandQueue(timeoutMicroseconds: 1_000)
        q.enqueue(.reset, tag: 1)
        q.enqueue(.leSetScanEnable(true), tag: 2)
        #expect(q.next(now: 0)?.tag == 1)
        #expect(q.next(now: 0) == nil) // one in flight
        let done = q.complete(opcode: 0x0C03, credits: 1, parameters: [0x00])
        guard case .complete(let p, let params)? = done else { Issue.record("no completion"); return }
        #expect(p.tag == 1 && params == [0x00])
        #expect(q.next(now: 0)?.tag == 2)
    }

    @Test func noCreditsMeansNothingIsSent() {
        var q = HCICommandQueue(timeoutMicroseconds: 1_000)
        q.enqueue(.reset, tag: 1)
        q.enqueue(.readBDAddress, tag: 2)
        #expect(q.next(now: 0) != nil)
        // The controller answers but grants no further credit (busy).
        _ = q.complete(opcode: 0x0C03, credits: 0, parameters: [0])
        #expect(q.next(now: 0) == nil)
        // A NOP Command Complete (opcode 0) restores a credit and is nobody's completion.
        #expect(q.complete(opcode: 0x0000, credits: 1, parameters: []) == nil)
        #expect(q.next(now: 0)?.tag == 2)
    }

    @Test func aCompletionOfSomeoneElsesCommandIsCountedNotMatched() {
        var q = HCICommandQueue(timeoutMicroseconds: 1_000)
        q.enqueue(.leSetScanEnable(true), tag: 1)
        _ = q.next(now: 0)
        #expect(q.complete(opcode: 0x1001, credits: 1, parameters: [0]) == nil)
        #expect(q.foreignCompletions == 1)
        #expect(q.inFlight?.tag == 1)
    }

    @Test func commandStatusFinishesACommand() {
        var q = HCICommandQueue(timeoutMicroseconds: 1_000)
        q.enqueue(.leSetExtendedScanEnable(true), tag: 3)
        _ = q.next(now: 0)
        guard case .status(let p, let status)? = q.status(opcode: 0x2042, credits: 1, status: 0x01) else {
            Issue.record("no completion")
            return
        }
        #expect(p.tag == 3 && status == 0x01)
        #expect(q.inFlight == nil)
    }

    @Test func anUnansweredCommandExpiresAtItsDeadline() {
        var q = HCICommandQueue(timeoutMicroseconds: 2_000)
        q.enqueue(.reset, tag: 1)
        _ = q.next(now: 100)
        #expect(q.nextDeadline == 2_100)
        #expect(q.expired(now: 2_099) == nil)
        #expect(q.expired(now: 2_100)?.tag == 1)
        #expect(q.timedOut == 1 && q.inFlight == nil)
    }

    @Test func closingEndsEveryCommandSoNoneDangles() {
        var q = HCICommandQueue(timeoutMicroseconds: 2_000)
        q.enqueue(.reset, tag: 1)
        q.enqueue(.readBDAddress, tag: 2)
        q.enqueue(.leReadLocalFeatures, tag: 3)
        _ = q.next(now: 0)
        #expect(q.failAll().map(\.tag) == [1, 2, 3])
        #expect(q.isIdle && q.credits == 1)
    }
}

@Suite("HCI radio without a socket")
struct HCIRadioPacketTests {
    struct FixedClock: WallClock {
        func nowMicroseconds() -> UInt64 { 1_700_000_000_000_000 }
        var rate: Double { 1 }
    }

    @Test func aHardwareErrorReportsTheRadioUnknownWithItsCode() throws {
        let radio = try HCIRadio(settings: HCIRadioSettings(), clock: FixedClock())
        radio.process([0x04, 0x10, 0x01, 0x2A])
        var outputs: [RadioOutput] = []
        try radio.readReady(into: &outputs)
        #expect(outputs.contains { if case .stateChanged(.unknown, let why) = $0 { why.contains("hardware error 0x2a") } else { false } })
        #expect(radio.counters.hardwareErrors == 1)
    }

    @Test func advertisingReportsBecomeOutputsWithTheClocksTime() throws {
        let radio = try HCIRadio(settings: HCIRadioSettings(), clock: FixedClock())
        // One legacy report: ADV_NONCONN_IND, random address 12:34:56:78:9A:BC, 3 bytes of data, RSSI 127.
        radio.process([0x04, 0x3E, 0x0F, 0x02, 0x01, 0x03, 0x01, 0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12, 0x03, 0x02, 0x01, 0x06, 0x7F])
        radio.process([0x04, 0x3E, 0x05, 0x02, 0x01]) // truncated: counted, nothing out
        var outputs: [RadioOutput] = []
        try radio.readReady(into: &outputs)
        let reports = outputs.compactMap { if case .report(let r) = $0 { r } else { nil } }
        #expect(reports.count == 1)
        #expect(reports.first?.address == 0x12_34_56_78_9A_BC && reports.first?.rssi == AdvertisingReport.rssiUnavailable)
        #expect(reports.first?.timeMicroseconds == 1_700_000_000_000_000)
        #expect(radio.counters.packetsIn == 2)
    }
}
