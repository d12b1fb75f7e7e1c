import Testing
@testable import VigilRadio
import VigilEvents

/// Connectable advertising for GATT links (docs/connections.md "Connections"): the plan's connectable
/// payloads go out as ADV_IND from the public address, the controller's stop for a link is
/// undone, and a controller that cannot advertise connectable during a link still gets every
/// payload on the air, non-connectable, until the link ends.
extension HCIRadioTests {
    static let chatAdvert: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x02, 0x0D, 0x18]
    static let link: UInt16 = 0x0040
    static let name: [UInt8] = [0x06, 0x09] + Array("Box 7".utf8)

    /// The controller's answers as in `drive`, keeping each command's parameters.
    /// `refuseOnce`: the first command with that opcode and those parameters is refused (Command
    /// Disallowed), later ones succeed.
    @discardableResult
    func driveKeepingParameters(_ radio: HCIRadio, _ t: ScriptedTransport, refuse: [UInt16: UInt8] = [:],
                                refuseOnce: (opcode: UInt16, parameters: [UInt8])? = nil,
                                rounds: Int = 40, outputs: inout [RadioOutput]) throws -> [(opcode: UInt16, parameters: [UInt8])] {
        var sent: [(opcode: UInt16, parameters: [UInt8])] = []
        var refuseOnce = refuseOnce
        for _ in 0..<rounds {
            try radio.readReady(into: &outputs)
            let written = t.commands()
            if written.isEmpty { break }
            for c in written {
                sent.append(c)
                switch c.opcode {
                case HCICommand.Opcode.leReadLocalFeatures: t.complete(c.opcode, [0x00, 0x00, 0, 0, 0, 0, 0, 0])
                case HCICommand.Opcode.readBDAddress: t.complete(c.opcode, [0x13, 0x71, 0xDA, 0x7D, 0x1A, 0x00])
                case _ where refuseOnce.map { $0.opcode == c.opcode && $0.parameters == c.parameters } == true:
                    refuseOnce = nil
                    t.complete(c.opcode, status: 0x0C)
                default: t.complete(c.opcode, status: refuse[c.opcode] ?? 0)
                }
            }
        }
        return sent
    }

    /// (advertising type, own address type) of every LE Set Advertising Parameters sent.
    func advertisingKinds(_ sent: [(opcode: UInt16, parameters: [UInt8])]) -> [[UInt8]] {
        sent.filter { $0.opcode == HCICommand.Opcode.leSetAdvertisingParameters }.map { Array($0.parameters[4...5]) }
    }

    static let connectable: [UInt8] = [0x00, 0x00]     // ADV_IND, public address
    static let nonConnectable: [UInt8] = [0x03, 0x01]  // ADV_NONCONN_IND, random address

    func connectionComplete(_ t: ScriptedTransport, peripheral: Bool = true) {
        t.send([0x04, 0x3E, 19, 0x01, 0x00, UInt8(Self.link & 0xFF), UInt8(Self.link >> 8), peripheral ? 0x01 : 0x00, 0x00,
                0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00])
    }

    func disconnectionComplete(_ t: ScriptedTransport) {
        t.send([0x04, 0x05, 0x04, 0x00, UInt8(Self.link & 0xFF), UInt8(Self.link >> 8), 0x13])
    }

    @Test func aConnectablePayloadGoesOutAsADVINDFromThePublicAddressWithItsScanResponseAndTheOthersStayNonConnectable() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.presence, Self.chatAdvert], connectable: [1],
                                        scanResponse: Self.name))
        try radio.start()
        var outputs: [RadioOutput] = []
        var sent = try driveKeepingParameters(radio, t, outputs: &outputs)
        clock.advance(byMicroseconds: 40 * Self.ms)
        sent += try driveKeepingParameters(radio, t, outputs: &outputs)
        clock.advance(byMicroseconds: 40 * Self.ms)
        sent += try driveKeepingParameters(radio, t, outputs: &outputs)
        #expect(advertisingKinds(sent) == [Self.nonConnectable, Self.connectable, Self.nonConnectable])
        let responses = sent.filter { $0.opcode == HCICommand.Opcode.leSetScanResponseData }.map { Array($0.parameters.prefix(1 + Int($0.parameters[0]))) }
        #expect(responses == [[UInt8(Self.name.count)] + Self.name], "the scan response is set once, with the first connectable payload")
        let onAir = outputs.compactMap { if case .onAir(let p) = $0 { p } else { nil } }
        #expect(onAir == [Self.presence, Self.chatAdvert, Self.presence])
    }

    @Test func aCentralConnectingStopsTheControllersAdvertisingAndTheRadioStartsItAgain() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.chatAdvert], connectable: [0]))
        try radio.start()
        var outputs: [RadioOutput] = []
        try driveKeepingParameters(radio, t, outputs: &outputs)
        connectionComplete(t)
        let after = try driveKeepingParameters(radio, t, outputs: &outputs)
        #expect(after.map(\.opcode) == [HCICommand.Opcode.leSetAdvertiseEnable] && after.first?.parameters == [0x01],
                "only advertising is enabled again: the parameters and data stand")
        #expect(radio.counters.incomingLinks == 1)
        // A link the box opened as a central does not stop its advertising: nothing is sent.
        connectionComplete(t, peripheral: false)
        #expect(try driveKeepingParameters(radio, t, outputs: &outputs).isEmpty)
    }

    @Test func connectableAdvertisingRefusedDuringALinkFallsBackToNonConnectableUntilTheLinkEnds() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.chatAdvert], connectable: [0]))
        try radio.start()
        var outputs: [RadioOutput] = []
        try driveKeepingParameters(radio, t, outputs: &outputs)
        connectionComplete(t)
        // The controller cannot advertise connectable while it holds the link (Command Disallowed).
        let refused = try driveKeepingParameters(radio, t, refuse: [HCICommand.Opcode.leSetAdvertiseEnable: 0x0C], rounds: 1, outputs: &outputs)
        #expect(refused.map(\.opcode) == [HCICommand.Opcode.leSetAdvertiseEnable])
        outputs.removeAll()
        let fallback = try driveKeepingParameters(radio, t, outputs: &outputs)
        #expect(advertisingKinds(fallback) == [Self.nonConnectable], "at once, without the refusal back-off")
        #expect(outputs.contains(.onAir(Self.chatAdvert)), "the payload stays on the air")
        #expect(radio.counters.connectableRefusals == 1 && radio.counters.advertisingRefusals == 0)
        #expect(!outputs.contains { if case .problem = $0 { true } else { false } })
        // The link ends: connectable again.
        disconnectionComplete(t)
        let again = try driveKeepingParameters(radio, t, outputs: &outputs)
        #expect(advertisingKinds(again) == [Self.connectable])
    }

    @Test func aRefusalWithNoLinkSeenStillKeepsThePayloadOnTheAirAndConnectableIsTriedAgainAfterAMinute() throws {
        let t = ScriptedTransport(adapters: [Self.hci0])
        let radio = try radio(settings, t)
        radio.advertise(AdvertisingPlan(address: 0x3A_BB_CC_DD_EE_01, payloads: [Self.chatAdvert], connectable: [0]))
        try radio.start()
        var outputs: [RadioOutput] = []
        // A link the radio never saw open (its event lost): the first connectable enable is refused.
        let first = try driveKeepingParameters(radio, t, refuseOnce: (HCICommand.Opcode.leSetAdvertiseEnable, [0x01]), outputs: &outputs)
        #expect(advertisingKinds(first) == [Self.connectable, Self.nonConnectable])
        #expect(outputs.contains(.onAir(Self.chatAdvert)) && radio.counters.advertisingRefusals == 0)
        clock.advance(byMicroseconds: HCIRadio.connectableRetryDelay - 1)
        #expect(advertisingKinds(try driveKeepingParameters(radio, t, outputs: &outputs)).isEmpty)
        clock.advance(byMicroseconds: 1)
        #expect(try wakes(radio), "the retry is a deadline of the radio's own")
        #expect(advertisingKinds(try driveKeepingParameters(radio, t, outputs: &outputs)) == [Self.connectable])
    }
}
