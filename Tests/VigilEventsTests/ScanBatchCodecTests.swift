import Foundation
import Testing
import VigilEvents
import VigilSystem

@Suite("Scan batches")
struct ScanBatchCodecTests {
    /// A hit as a window makes one (`ScanWindow.close`): reports with int8 RSSI, some without.
    static func windowHit(_ rng: inout SplitMix64) -> ScanHit {
        var h = ScanHit()
        h.address = UInt64.random(in: 0...0xFFFF_FFFF_FFFF, using: &rng)
        h.addressType = Bool.random(using: &rng) ? .addressRandom : .addressPublic
        h.count = UInt32.random(in: 1...40, using: &rng)
        h.rssiUnavailable = Bool.random(using: &rng) ? 0 : UInt32.random(in: 0...h.count, using: &rng)
        let rssi = (0..<(h.count - h.rssiUnavailable)).map { _ in Int32.random(in: -127...20, using: &rng) }
        if !rssi.isEmpty {
            h.rssiMin = rssi.min() ?? 0
            h.rssiMax = rssi.max() ?? 0
            h.rssiSum = rssi.reduce(0) { $0 + Int64($1) }
        }
        h.lastOffsetUs = UInt64.random(in: 0...2_000_000, using: &rng)
        h.firstOffsetUs = h.lastOffsetUs + UInt64.random(in: 0...2_000_000, using: &rng)
        if Bool.random(using: &rng) { h.txPower = Int32.random(in: -127...127, using: &rng) }
        if UInt8.random(in: 0...3, using: &rng) > 0 {
            var a = AdvertisementSummary()
            a.flags = UInt32.random(in: 0...3, using: &rng) == 0 ? 0 : 0x1A
            a.companyID = UInt32.random(in: 0...2, using: &rng)
            if Bool.random(using: &rng) { a.gaenRpi = Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }) }
            if Bool.random(using: &rng) { a.name = "n\(UInt8.random(in: 0...3, using: &rng))" }
            h.advertisement = a
        }
        return h
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func everyHitAWindowMakesComesBackExactly(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let hits = (0..<Int.random(in: 1...3_000, using: &rng)).map { _ in Self.windowHit(&rng) }
        let (batch, rest) = ScanBatch.packing(hits)
        #expect(rest.isEmpty)
        #expect(batch.count == UInt32(hits.count))
        #expect(batch.advertisements.count < hits.count, "a summary shared by hits is stored once")
        // Through the log's codec, as replay reads it.
        let (kind, payload) = EventCodec.encode(.scanBatch(batch))
        let decoded = try EventCodec.decode(kind: kind, payload: payload, sequence: 1)
        guard case .scanBatch(let back) = decoded else { Issue.record("not a batch"); return }
        #expect(try back.scanHits() == hits)
        var fields: [ScanHitFields] = []
        try back.forEachHit { f, _ in fields.append(f) }
        #expect(fields == hits.map(ScanHitFields.init))
    }

    @Test func aHitTheLayoutCannotHoldIsLeftForItsOwnRecordInOrder() {
        var rng = SplitMix64(seed: 9)
        var wide = Self.windowHit(&rng)
        wide.rssiUnavailable = 0
        wide.rssiMax = 200 // not an int8
        var noReports = Self.windowHit(&rng)
        noReports.count = 0
        var backwards = Self.windowHit(&rng)
        backwards.firstOffsetUs = backwards.lastOffsetUs &- 1
        backwards.lastOffsetUs = backwards.firstOffsetUs &+ 1
        var unknownType = Self.windowHit(&rng)
        unknownType.addressType = .UNRECOGNIZED(7)
        var loudTx = Self.windowHit(&rng)
        loudTx.txPower = 300
        var silentWithRSSI = Self.windowHit(&rng)
        silentWithRSSI.rssiUnavailable = silentWithRSSI.count
        silentWithRSSI.rssiSum = -60
        let good = [Self.windowHit(&rng), Self.windowHit(&rng)]
        let odd = [wide, noReports, backwards, unknownType, loudTx, silentWithRSSI]
        let (batch, rest) = ScanBatch.packing([good[0]] + odd + [good[1]])
        #expect(batch.count == 2)
        #expect(rest == odd)
        #expect((try? batch.scanHits()) == good)
    }

    @Test func aPlainHitTakesAboutSixteenBytes() {
        var h = ScanHit()
        h.address = 0xD4_12_34_56_78_9A
        h.addressType = .addressRandom
        h.count = 1
        h.rssiMin = -70; h.rssiMax = -70; h.rssiSum = -70
        h.firstOffsetUs = 1_500_000; h.lastOffsetUs = 1_500_000
        var a = AdvertisementSummary()
        a.flags = 0x1A
        h.advertisement = a
        let hits = (0..<100).map { i -> ScanHit in var x = h; x.address += UInt64(i); return x }
        let (batch, _) = ScanBatch.packing(hits)
        // flags 1, address 6, count 1, rssi 1, spread 1, deficit 1, offset 3, duration 1, index 1.
        #expect(batch.hits.count == 100 * 16)
    }

    /// Every malformed or cut batch is refused whole when decoded, with the hit and the reason.
    @Test func truncatedAndMangledBatchesAreRefusedNeverTrapped() throws {
        var rng = SplitMix64(seed: 3)
        let hits = (0..<50).map { _ in Self.windowHit(&rng) }
        let (batch, _) = ScanBatch.packing(hits)
        let kind = UInt32(EventKind.scanBatch.rawValue)
        var refused = 0
        for cut in 1..<batch.hits.count {
            var b = batch
            b.hits = batch.hits.prefix(cut)
            let payload = EventCodec.encode(.scanBatch(b)).payload
            do {
                _ = try EventCodec.decode(kind: kind, payload: payload, sequence: 9)
            } catch {
                refused += 1
                if case .malformed(let k, _) = error.reason { #expect(k == kind) } else { Issue.record("\(error)") }
            }
        }
        #expect(refused == batch.hits.count - 1, "a cut batch never decodes: its count no longer matches")
        var wrongCount = batch
        wrongCount.count += 1
        #expect(throws: EventDecodingError.self) { try EventCodec.decode(kind: kind, payload: EventCodec.encode(.scanBatch(wrongCount)).payload, sequence: 9) }
        var noAdvertisements = batch
        noAdvertisements.advertisements = []
        #expect(throws: EventDecodingError.self) { try EventCodec.decode(kind: kind, payload: EventCodec.encode(.scanBatch(noAdvertisements)).payload, sequence: 9) }
        var badFlags = batch
        badFlags.hits[0] |= 0x80
        #expect(throws: EventDecodingError.self) { try EventCodec.decode(kind: kind, payload: EventCodec.encode(.scanBatch(badFlags)).payload, sequence: 9) }
        for _ in 0..<2_000 {
            var b = batch
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                b.hits[Int.random(in: 0..<b.hits.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            // Decodes to something valid, or is refused: never traps.
            if case .scanBatch(let ok)? = try? EventCodec.decode(kind: kind, payload: EventCodec.encode(.scanBatch(b)).payload, sequence: 9) {
                #expect((try? ok.scanHits())?.count == Int(ok.count))
            }
        }
    }
}
