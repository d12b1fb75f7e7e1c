import Testing
import VigilEvents
@testable import VigilRadio

/// Recorded HCI byte sequences (as btmon shows them), well-formed and broken.
@Suite struct HCIEventParserTests {
    // LE Advertising Report, one ADV_IND from public 11:22:33:44:55:66, flags + name "Tag", RSSI -60.
    static let legacy: [UInt8] = [0x04, 0x3E, 0x14, 0x02, 0x01,
                                  0x00, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                  0x08, 0x02, 0x01, 0x06, 0x04, 0x09, 0x54, 0x61, 0x67,
                                  0xC4]

    @Test func aLegacyReportBecomesAnAdvertisingReport() throws {
        var parser = HCIEventParser()
        let event = parser.parse(Self.legacy, timeMicroseconds: 42)
        guard case .advertisingReports(let reports) = event else { Issue.record("\(String(describing: event))"); return }
        let r = try #require(reports.first)
        #expect(reports.count == 1)
        #expect(r.address == 0x11_22_33_44_55_66)
        #expect(formatAddress(r.address) == "11:22:33:44:55:66")
        #expect(r.addressType == .addressPublic)
        #expect(r.rssi == -60)
        #expect(r.connectable)
        #expect(r.data == [0x02, 0x01, 0x06, 0x04, 0x09, 0x54, 0x61, 0x67])
        #expect(r.timeMicroseconds == 42)
        var counts = AdvertisingDataParser.Counts()
        #expect(AdvertisingDataParser.summarize(r.data, connectable: true, counts: &counts).0.name == "Tag")
    }

    @Test func twoReportsInOnePacketAreBothKept() {
        var body: [UInt8] = [0x02, 0x02]
        body += [0x03, 0x01, 1, 2, 3, 4, 5, 0xC6, 0x00, 0xB0]          // NONCONN, random, no data, -80
        body += [0x00, 0x00, 6, 5, 4, 3, 2, 1, 0x03, 0x02, 0x01, 0x06, 0xD0] // ADV_IND with flags, -48
        var parser = HCIEventParser()
        guard case .advertisingReports(let reports) = parser.parse([0x04, 0x3E, UInt8(body.count)] + body, timeMicroseconds: 1) else {
            Issue.record("not reports"); return
        }
        #expect(reports.map(\.rssi) == [-80, -48])
        #expect(reports.map(\.addressType) == [.addressRandom, .addressPublic])
        #expect(reports.map(\.connectable) == [false, true])
        #expect(reports[0].address == 0xC6_05_04_03_02_01)
    }

    @Test func anExtendedReportCarriesTxPowerUnlessUnavailable() throws {
        func report(tx: UInt8) -> [UInt8] {
            [0x13, 0x00,              // event type: connectable, scannable, legacy PDU
             0x01,                    // random address
             0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xC0,
             0x01, 0x00, 0xFF,        // primary PHY 1M, no secondary, no SID
             tx, 0xBA,                // TX power, RSSI -70
             0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, // periodic interval, direct address
             0x03, 0x02, 0x01, 0x06]
        }
        let body: [UInt8] = [0x0D, 0x02] + report(tx: 0xF8) + report(tx: 0x7F)
        var parser = HCIEventParser()
        guard case .advertisingReports(let reports) = parser.parse([0x04, 0x3E, UInt8(body.count)] + body, timeMicroseconds: 7) else {
            Issue.record("not reports"); return
        }
        #expect(reports.count == 2)
        #expect(reports[0].txPower == -8)
        #expect(reports[1].txPower == nil)
        #expect(reports[0].address == 0xC0_EE_DD_CC_BB_AA)
        #expect(reports[0].rssi == -70)
        #expect(reports[0].connectable)
        #expect(parser.counts.extendedReports == 2)
    }

    @Test func anAdvertisementSplitOverReportsIsLeftOutWholeItsLastPartTooAndTheNextWholeOneKept() {
        // Extended, non-connectable reports of one advertiser: data status in bits 5-6.
        func event(status: UInt16, address: UInt8 = 0x01, data: [UInt8]) -> [UInt8] {
            let type = status << 5
            let report: [UInt8] = [UInt8(type & 0xFF), UInt8(type >> 8), 0x01, address, 0xBB, 0xCC, 0xDD, 0xEE, 0xC0,
                                   0x01, 0x01, 0x00, 0x7F, 0xBA, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, UInt8(data.count)] + data
            let body: [UInt8] = [0x0D, 0x01] + report
            return [0x04, 0x3E, UInt8(body.count)] + body
        }
        var parser = HCIEventParser()
        func kept(_ packet: [UInt8]) -> Int {
            if case .advertisingReports(let reports) = parser.parse(packet, timeMicroseconds: 0) { return reports.count }
            return -1
        }
        let first = [UInt8](repeating: 0xAB, count: 229), rest: [UInt8] = [0x02, 0x01, 0x06]
        var outcomes = [kept(event(status: 1, data: first)),       // incomplete, more to come
                        kept(event(status: 1, address: 0x02, data: first)), // another advertiser's split, interleaved
                        kept(event(status: 0, data: rest)),        // the rest, marked complete: not a whole advert
                        kept(event(status: 0, data: rest))]        // the advertiser's next, whole
        #expect(outcomes == [0, 0, 0, 1])
        outcomes = [kept(event(status: 2, address: 0x02, data: rest)), // the other's, truncated: its end
                    kept(event(status: 0, address: 0x02, data: rest))]
        #expect(outcomes == [0, 1])
        #expect(parser.counts.incompleteReports == 4)
    }

    @Test func commandCompletionCarriesCreditsOpcodeAndStatus() {
        var parser = HCIEventParser()
        // Command Complete for LE Set Scan Enable (0x200C), 1 credit, status success.
        #expect(parser.parse([0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00], timeMicroseconds: 0)
            == .commandComplete(opcode: 0x200C, credits: 1, parameters: [0x00]))
        // Command Status for LE Create Connection (0x200D): status "command disallowed".
        #expect(parser.parse([0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20], timeMicroseconds: 0)
            == .commandStatus(opcode: 0x200D, credits: 1, status: 0x0C))
        #expect(parser.parse([0x04, 0x10, 0x01, 0x2A], timeMicroseconds: 0) == .hardwareError(code: 0x2A))
        #expect(parser.parse([0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00], timeMicroseconds: 0) == .other(code: 0x13))
    }

    @Test func truncatedAndMalformedPacketsAreCountedNeverTrapped() {
        var parser = HCIEventParser()
        #expect(parser.parse([], timeMicroseconds: 0) == nil)                  // nothing: not an event
        #expect(parser.parse([0x02, 0x01, 0x20], timeMicroseconds: 0) == nil) // ACL data, not an event
        #expect(parser.parse([0x04, 0x3E], timeMicroseconds: 0) == nil)
        #expect(parser.parse(Array(Self.legacy.dropLast(4)), timeMicroseconds: 0) == nil) // shorter than its length
        #expect(parser.counts.notEvents == 2)
        #expect(parser.counts.truncatedPackets == 2)
        // A report whose data length runs past the packet: skipped and counted.
        var lying = Self.legacy
        lying[13] = 0x40
        #expect(parser.parse(lying, timeMicroseconds: 0) == .advertisingReports([]))
        #expect(parser.counts.malformedReports == 1)
        // More reports announced than present: the present one is kept.
        var more = Self.legacy
        more[4] = 3
        guard case .advertisingReports(let kept) = parser.parse(more, timeMicroseconds: 0) else { Issue.record("no reports"); return }
        #expect(kept.count == 1)
        // Random bytes never trap.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let n = Int.random(in: 0...64, using: &rng)
            var bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if !bytes.isEmpty && Bool.random(using: &rng) { bytes[0] = 0x04 }
            if bytes.count > 3 && Bool.random(using: &rng) { bytes[1] = 0x3E; bytes[3] = [0x02, 0x0D].randomElement(using: &rng)! }
            _ = parser.parse(bytes, timeMicroseconds: 0)
        }
        #expect(parser.counts.packets > 20_000)
    }

    @Test func linkEventsAreParsedAndTruncatedOnesRefused() {
        var parser = HCIEventParser()
        // LE Connection Complete: handle 0x0040 (flag bits above 12 dropped), peripheral, a random peer.
        let complete: [UInt8] = [0x04, 0x3E, 19, 0x01, 0x00, 0x40, 0xF0, 0x01, 0x01,
                                 0x66, 0x55, 0x44, 0x33, 0x22, 0xC1, 0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00]
        #expect(parser.parse(complete, timeMicroseconds: 0)
            == .connectionComplete(status: 0, handle: 0x0040, peripheral: true, peer: 0xC1_22_33_44_55_66, peerType: .addressRandom))
        // Enhanced: 12 more bytes (the resolvable private addresses), the same leading fields.
        let enhanced: [UInt8] = [0x04, 0x3E, 31, 0x0A, 0x00, 0x41, 0x00, 0x00, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
            + [UInt8](repeating: 0, count: 12) + [0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00]
        #expect(parser.parse(enhanced, timeMicroseconds: 0)
            == .connectionComplete(status: 0, handle: 0x0041, peripheral: false, peer: 0x11_22_33_44_55_66, peerType: .addressPublic))
        // Enhanced v2 (Core 5.4): the same fields first, then the advertising set and sync handle.
        let enhancedV2: [UInt8] = [0x04, 0x3E, 34, 0x29] + Array(enhanced[4...]) + [0x00, 0xFF, 0xFF]
        #expect(parser.parse(enhancedV2, timeMicroseconds: 0)
            == .connectionComplete(status: 0, handle: 0x0041, peripheral: false, peer: 0x11_22_33_44_55_66, peerType: .addressPublic))
        #expect(parser.parse([0x04, 0x3E, 6, 0x12, 0x00, 0x00, 0x40, 0x00, 0x01], timeMicroseconds: 0)
            == .advertisingSetTerminated(status: 0, set: 0, connection: 0x0040))
        #expect(parser.parse([0x04, 0x05, 4, 0x00, 0x40, 0x00, 0x13], timeMicroseconds: 0)
            == .disconnectionComplete(status: 0, handle: 0x0040, reason: 0x13))
        // Each cut short by a byte is refused, never read past its end.
        let before = parser.counts.truncatedPackets
        for packet in [complete, enhanced, enhancedV2, [0x04, 0x3E, 6, 0x12, 0x00, 0x00, 0x40, 0x00, 0x01], [0x04, 0x05, 4, 0x00, 0x40, 0x00, 0x13]] {
            var cut = Array(packet.dropLast())
            cut[2] -= 1
            #expect(parser.parse(cut, timeMicroseconds: 0) == nil)
        }
        #expect(parser.counts.truncatedPackets == before + 5)
    }
}
