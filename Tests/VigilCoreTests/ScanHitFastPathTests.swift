import Testing
import VigilCore
import VigilEvents

/// Replay folds scan hits from their decoded fields (`Projections.apply(scanHit:...)`) instead of
/// the generated message; the state must be exactly the one the whole events give.
@Suite("Scan hits folded from their fields")
struct ScanHitFastPathTests {
    /// Applies `inputs` the way `Replay.apply` does: a scan hit's payload is encoded, decoded by
    /// the fast path into fields and folded from them, unless it needs the whole event.
    static func replayFast(_ inputs: [ProjectionInput], from start: Projections = Projections()) -> (Projections, fast: Int) {
        var state = start
        var fast = 0
        for input in inputs {
            if case .event(let event) = input, case .scanHit = event.body {
                let payload = EventCodec.encode(event.body).payload
                let fields = payload.withUnsafeBytes { EventCodec.scanHitFields(payload: $0) }
                if let fields, !state.needsWholeEvent(forScanHit: fields) {
                    state.apply(scanHit: fields, sequence: event.sequence, timeMicroseconds: event.timeMicroseconds)
                    fast += 1
                    continue
                }
            }
            state.apply(input)
        }
        return (state, fast)
    }

    static func replayWhole(_ inputs: [ProjectionInput], from start: Projections = Projections()) -> Projections {
        var state = start
        for input in inputs { state.apply(input) }
        return state
    }

    @Test func aDayInTheShelterGivesTheSameStateByteForByte() throws {
        let history = DeterminismTests.history
        let (fast, taken) = Self.replayFast(history)
        let whole = Self.replayWhole(history)
        #expect(taken > 100, "the history's scan hits take the fast path")
        #expect(fast == whole)
        #expect(try fast.encoded() == whole.encoded())
    }

    @Test func aResidentsTagSightingStillReachesTheLadder() throws {
        let tag: UInt64 = 0xC0FF_EE00_0042
        let hour = 3_600.0
        var stream = EventStream()
        stream.add(LadderEvents.enrolled(LadderEvents.resident("R-1", interval: 2 * LadderHarness.hour, tag: tag)), at: 1_000)
        for i in 0..<40 {
            let t = 1_001 + Double(i) * 0.25 * hour
            stream.add(scanHit(address: 0xC0_00_00_00_10_00 | UInt64(i % 5), rssi: [-60, -70]), at: t)
            if i % 6 == 0 { stream.add(LadderEvents.tagSeen(tag), at: t + 1) }
            if i % 9 == 0 { stream.add(scanHit(address: tag, type: .addressRandom, rssi: []), at: t + 2) } // count 0
        }
        stream.add(LadderEvents.removed("R-1"), at: 1_001 + 10.5 * hour)
        stream.add(LadderEvents.tagSeen(tag), at: 1_001 + 11 * hour) // a tag no one owns any more
        let (fast, taken) = Self.replayFast(stream.inputs)
        let whole = Self.replayWhole(stream.inputs)
        let hits = stream.events.filter { if case .scanHit = $0.body { true } else { false } }.count
        #expect(taken > 0)
        #expect(taken < hits, "the tag's sightings were applied as whole events")
        #expect(try fast.encoded() == whole.encoded())
    }

    @Test func hostileValuesFoldTheSameWithoutTrapping() throws {
        var stream = EventStream()
        for (i, sum) in [Int64.max, Int64.min, -1, 0].enumerated() {
            var hit = ScanHit()
            hit.address = UInt64.max - UInt64(i)
            hit.addressType = .UNRECOGNIZED(-3 + i)
            hit.count = [UInt32.max, 1, 0, 7][i]
            hit.rssiUnavailable = [UInt32.max, 0, 5, 9][i]
            hit.rssiSum = sum
            hit.rssiMin = .min
            hit.rssiMax = .max
            hit.firstOffsetUs = .max
            hit.lastOffsetUs = UInt64(i)
            if i % 2 == 0 { hit.txPower = Int32.min + Int32(i) }
            hit.advertisement.name = i == 1 ? "Ärztin 🚑" : ""
            stream.add(.scanHit(hit), at: Double(i + 1))
            stream.add(.scanHit(hit), at: Double(i + 1) + 0.5)
        }
        var late = ScanHit()
        late.count = 1
        stream.add(.scanHit(late), at: 1e12)
        let (fast, taken) = Self.replayFast(stream.inputs)
        #expect(taken == stream.events.count)
        #expect(try fast.encoded() == Self.replayWhole(stream.inputs).encoded())
    }

    @Test func fieldsReadFromTheMessageMatchItsAccessors() {
        var hit = ScanHit()
        hit.address = 0xC0_01_02_03_04_05
        hit.addressType = .UNRECOGNIZED(9)
        hit.count = 4
        hit.rssiUnavailable = 1
        hit.txPower = -8
        hit.advertisement.name = "Tag"
        let fields = ScanHitFields(hit)
        #expect(fields.address == hit.address)
        #expect(fields.addressType == 9)
        #expect(fields.txPower == -8)
        #expect(fields.name == "Tag")
        #expect(fields.rssiUnavailable == 1)
        hit.clearTxPower()
        hit.clearAdvertisement()
        #expect(ScanHitFields(hit).txPower == nil)
        #expect(ScanHitFields(hit).name == "")
    }
}
