import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// The node's compaction of raw scan hits (issue 12, item 4) on a real log: a worker thread
/// reads each slot, the loop logs the sightings, the writer purges.
@Suite struct CompactionTests {
    static let minute: UInt64 = 60_000_000
    static let phone: UInt64 = 0x4A_0000_0001
    static let laptop: UInt64 = 0x4B_0000_0002
    static let beacon: UInt64 = 0x4C_0000_0003
    static let tag: UInt64 = 0x0A_0B_0C_0D_0E_0F

    /// Two hours of a small shelter, written before the node starts: a phone with a GAEN
    /// identifier changing every 15 minutes (gone for 90 minutes), a laptop that left an hour
    /// and a half ago, a beacon heard all along, and a resident's tag.
    /// `batched`: each moment's hits in one ScanBatch, as the node logs a window (the tag's on
    /// their own, as the node logs a tag's sightings).
    func writeHistory(_ dir: String, now: UInt64, batched: Bool = false) async throws -> [Event] {
        let log = try EventLog.open(LogConfiguration(directory: dir))
        var written: [Event] = []
        func put(_ body: EventBody, at time: UInt64) async throws {
            let (kind, payload) = EventCodec.encode(body)
            let sequence = try await log.appendDurably(LogRecord(kind: kind, timeMicroseconds: time, payload: payload), priority: .critical)
            written.append(Event(sequence: sequence, timeMicroseconds: time, body: body))
        }
        var resident = Resident()
        resident.id = "room-1"
        resident.mode = .off
        resident.bleTag = Self.tag
        try await put(.residentEnrolled(resident), at: now - 130 * Self.minute)
        var t = now - 120 * Self.minute
        var k: UInt64 = 0
        while t < now - 2 * Self.minute {
            func hit(_ address: UInt64, rssi: Int32) -> ScanHit {
                var h = ScanHit()
                h.address = address
                h.addressType = .addressRandom
                h.count = 3
                h.rssiMin = rssi - 4; h.rssiMax = rssi + 3; h.rssiSum = Int64(rssi) * 3
                h.firstOffsetUs = 1_900_000
                h.lastOffsetUs = 100_000
                return h
            }
            var window: [ScanHit] = []
            func heard(_ h: ScanHit, at time: UInt64) async throws {
                if batched { window.append(h) } else { try await put(.scanHit(h), at: time) }
            }
            if t < now - 90 * Self.minute {
                var h = hit(Self.phone, rssi: -58 - Int32(k % 5))
                var rpi = [UInt8](repeating: 0x77, count: 16)
                rpi[0] = UInt8(truncatingIfNeeded: t / (15 * Self.minute))
                h.advertisement.gaenRpi = Data(rpi)
                h.advertisement.gaenAem = Data([0x40, 0xF6, 0, 0])
                try await heard(h, at: t)
            }
            if t < now - 95 * Self.minute, k % 2 == 0 { try await heard(hit(Self.laptop, rssi: -80), at: t + 500_000) }
            if k % 3 == 0 { try await heard(hit(Self.beacon, rssi: -66), at: t + 700_000) }
            if !window.isEmpty {
                let (batch, rest) = ScanBatch.packing(window)
                #expect(rest.isEmpty)
                try await put(.scanBatch(batch), at: t + 800_000)
            }
            if k % 4 == 0 { try await put(.scanHit(hit(Self.tag, rssi: -71)), at: t + 900_000) }
            t += 10_000_000
            k += 1
        }
        log.close()
        return written
    }

    /// Advances a second at a time until no slot over an hour old is left to compact (at most
    /// 2,000 seconds): a box catching up compacts a slot as soon as the last one's purge is done.
    func caughtUp(_ node: NodeThread, _ clock: ManualClock) async -> Bool {
        for _ in 0..<2_000 {
            await advance(clock, node, byMicroseconds: 1_000_000, step: 1_000_000)
            let due = await onLoop(node) { n in
                !n.compaction.busy && n.projections.retention.recentScanHits.firstSlotWithDeletable.map {
                    UInt64($0 + 1) * SlotTally.slotMicroseconds > n.clock.nowMicroseconds() - 60 * Self.minute
                } ?? true
            }
            if due { return true }
        }
        return false
    }

    @Test func oldScanHitsAreFoldedIntoSightingsAndReplayContactsAndCountsStayTheSame() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let now = clock.nowMicroseconds()
        let history = try await writeHistory(dir.path, now: now)
        var c = testConfiguration(dir, advertisers: 0)
        c.compactAfterMicroseconds = 60 * Self.minute
        let node = try Node(configuration: c, clock: clock, monotonic: clock, logger: quietLogger)
        let running = try await start(node)
        // The first compaction is due ten minutes in; then the node catches up one slot at a
        // time, each once the last one's purge is done (on the writer thread).
        await advance(clock, running, byMicroseconds: 10 * Self.minute, step: 10 * Self.minute)
        #expect(await caughtUp(running, clock), "every slot over an hour old was compacted")
        let logged = await onLoop(running) { $0.compaction.logged }
        // A clock stepped back past what was compacted: the hit is logged at the first slot not
        // compacted yet, so the next compaction reads it like any other.
        let floor = await onLoop(running) { UInt64($0.projections.retention.recentScanHits.floorSlot) * SlotTally.slotMicroseconds }
        await onLoop(running) { n in
            var h = ScanHit()
            h.address = 0x4D_0000_0004
            h.count = 1
            _ = n.append(.scanHit(h), time: now - 110 * Self.minute)
        }
        await settled(running)
        let stopped = try await stop(running)

        let log = try EventLog.openReadOnly(directory: dir.path)
        let events = try storedEvents(dir)
        let sightings = events.compactMap { if case .scanSightings(let s) = $0.body { s } else { nil } }
        #expect(sightings.count == Int(logged) && logged >= 5, "one event per ten-minute slot: \(logged)")
        let end = sightings.map(\.spanEndUs).max() ?? 0
        // Before the last span's end only the tag's hits are raw (the ladder's data). The beacon
        // went quiet with the history (the node hears nobody), so its stay ended and its hits
        // went the way of the phone's and the laptop's, into sightings. (Stays still going on
        // are kept raw: RetentionLedgerTests.)
        let oldRaw = events.compactMap { e -> UInt64? in
            guard case .scanHit(let h) = e.body, e.timeMicroseconds < end else { return nil }
            return h.address
        }
        #expect(Set(oldRaw) == [Self.tag])
        let stepped = events.filter { if case .scanHit(let h) = $0.body { h.address == 0x4D_0000_0004 } else { false } }
        #expect(stepped.map(\.timeMicroseconds) == [floor], "logged at the first slot not compacted")
        #expect(oldRaw.count > 100)
        #expect(sightings.map(\.hits).reduce(0, +) > 400)
        // Status counts what the log holds, and a rebuild from the log equals the node's state.
        let hits = events.filter { if case .scanHit = $0.body { true } else { false } }.count
        #expect(stopped.projections.health.count(of: .scanHit) == UInt64(hits))
        #expect(stopped.projections.health.totalEvents == UInt64(events.count))
        #expect(try Replay.verify(log, settings: c.projections).matches, "replay of the compacted log equals the running state")
        // Exposure contacts from the compacted log are those of every raw hit.
        var raw = ExposureContacts(settings: c.exposure.contacts)
        for e in history { raw.apply(e) }
        let compacted = try ExposureKeyMatching.contacts(in: log, settings: c.exposure.contacts)
        #expect(compacted.tracks.count >= 2, "the phone's identifiers")
        #expect(compacted.tracks == raw.tracks)
        #expect(sightings.flatMap(\.tracks).count >= 2)
    }

    /// The node's raw tier (issue 12, item 4): history logged as scan batches, and the node's own
    /// radio heard all along, so stays go on across every compaction. Batches before the last
    /// compacted slot are all deleted, the stays come back on replay from the events' device
    /// lists, and counts and contacts are those of every hit.
    @Test func scanBatchesAreDeletedWholeAndTheStaysTheyBuiltSurviveInTheEvents() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let now = clock.nowMicroseconds()
        let history = try await writeHistory(dir.path, now: now, batched: true)
        var c = testConfiguration(dir, advertisers: 2)
        c.simulation.meanStayMicroseconds = 20 * 3_600_000_000
        c.compactAfterMicroseconds = 60 * Self.minute
        let node = try Node(configuration: c, clock: clock, monotonic: clock, logger: quietLogger)
        let running = try await start(node)
        // Eighty minutes of the node's own radio: its first windows become compactable.
        await advance(clock, running, byMicroseconds: 80 * Self.minute, step: 5_000_000)
        #expect(await caughtUp(running, clock), "every slot over an hour old was compacted")
        let live = await onLoop(running) { n in n.projections.devices.sorted.filter { $0.firstSeenMicroseconds >= now } }
        await settled(running)
        let stopped = try await stop(running)

        let log = try EventLog.openReadOnly(directory: dir.path)
        let events = try storedEvents(dir)
        let sightings = events.compactMap { if case .scanSightings(let s) = $0.body { s } else { nil } }
        let end = sightings.map(\.spanEndUs).max() ?? 0
        #expect(end > now + 10 * Self.minute, "the node's own windows were compacted too")
        #expect(sightings.allSatisfy { $0.hasStays }, "every compaction carries the device list")
        // No batch is left before the last compacted slot's end: none held a tag's sighting.
        let batches = events.filter { if case .scanBatch = $0.body { true } else { false } }
        #expect(batches.allSatisfy { $0.timeMicroseconds >= end })
        #expect(batches.count > 100, "the node logs its windows as batches")
        // The radio's advertisers were heard from the start: their stays began in deleted batches.
        #expect(live.count == 2)
        #expect(live.allSatisfy { $0.firstSeenMicroseconds < end }, "\(live.map(\.firstSeenMicroseconds)) \(end)")
        // Their stays hold the windows of all eighty minutes (about six a minute, fewer when the
        // loaded machine sheds a window's hits): a stay begun again at a compaction would hold
        // at most the last twenty minutes' (about 120).
        #expect(live.allSatisfy { $0.hits > 400 }, "\(live.map(\.hits))")
        #expect(sightings.last?.stays.devices.contains { d in live.contains { $0.address == d.address } } == true)
        // Status counts what the log holds, and a rebuild from the log equals the node's state.
        #expect(stopped.projections.health.count(of: .scanBatch) == UInt64(batches.count))
        #expect(stopped.projections.health.totalEvents == UInt64(events.count))
        #expect(try Replay.verify(log, settings: c.projections).matches, "replay of the compacted log equals the running state")
        // Exposure contacts from the compacted log are those of every hit of the history.
        var raw = ExposureContacts(settings: c.exposure.contacts)
        for e in history { raw.apply(e) }
        let compacted = try ExposureKeyMatching.contacts(in: log, settings: c.exposure.contacts)
        #expect(compacted.tracks.count >= 2, "the phone's identifiers")
        #expect(compacted.tracks == raw.tracks)
    }
}
