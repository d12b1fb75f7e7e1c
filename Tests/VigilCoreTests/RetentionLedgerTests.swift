import Foundation
import Testing
import VigilCore
import VigilEvents

/// Retention forgets only what it deletes (issue 10, item 10): after a retention event the
/// projections are the same whether or not the deletion has run, and their counts agree with
/// what the log still holds.
@Suite struct RetentionLedgerTests {
    static let minute: UInt64 = 60_000_000
    static let day: UInt64 = 86_400_000_000

    /// A deterministic generator (SplitMix64): a failing seed fails the same way again.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    struct Record {
        let event: Event
        let kind: UInt32
        let payload: [UInt8]
    }

    /// The log's purge, as `EventLog.purge` runs it, over records in memory.
    static func purge(_ log: inout [Record], _ plan: RetentionPlan) -> Int {
        let before = log.count
        log.removeAll { r in
            r.event.sequence <= plan.throughSequence && r.event.timeMicroseconds < plan.cutoffMicroseconds
                && r.payload.withUnsafeBytes { plan.deletes(kind: r.kind, sequence: r.event.sequence, payload: $0) }
        }
        return before - log.count
    }

    /// The log's purge of a compaction (`EventLog.purge(sequences:...)`), over records in memory.
    static func purge(_ log: inout [Record], _ plan: CompactionPlan) -> Int {
        let before = log.count
        log.removeAll { r in
            (plan.firstSequence...plan.lastSequence).contains(r.event.sequence)
                && r.event.timeMicroseconds < plan.spanEndMicroseconds
                && r.payload.withUnsafeBytes { plan.deletes(kind: r.kind, sequence: r.event.sequence, payload: $0) }
        }
        return before - log.count
    }

    /// What the node's compaction logs for the slots `[from, from + 1)`: every hit of the span in
    /// `sequences`, folded as `Compaction.read` folds them.
    static func sightings(_ log: [Record], from: UInt32, sequences: ClosedRange<UInt64>) -> ScanSightings {
        let start = UInt64(from) * SlotTally.slotMicroseconds
        let end = start + SlotTally.slotMicroseconds
        var contacts = ExposureContacts()
        var s = ScanSightings()
        for r in log where sequences.contains(r.event.sequence) && r.event.timeMicroseconds >= start && r.event.timeMicroseconds < end {
            switch r.event.body {
            case .scanHit: s.hits += 1
            case .scanBatch(let batch): s.hits += UInt64(batch.count)
            default: continue
            }
            contacts.apply(r.event)
        }
        s.spanStartUs = start
        s.spanEndUs = end
        s.firstSequence = sequences.lowerBound
        s.throughSequence = sequences.upperBound
        s.tracks = contacts.sightingTracks()
        return s
    }

    /// Exposure contacts as `ExposureKeyMatching.contacts` builds them: compacted spans first.
    static func contacts(_ events: [Event]) -> ExposureContacts {
        var c = ExposureContacts()
        for e in events { if case .scanSightings(let s) = e.body { c.noteCompaction(s) } }
        for e in events { c.apply(e) }
        return c
    }

    /// Replay as the node does it: scan hits through the fast path unless they need the event.
    static func replay(_ log: [Record], settings: ProjectionSettings) -> Projections {
        var state = Projections(settings: settings)
        for r in log {
            if case .scanHit = r.event.body,
               let fields = r.payload.withUnsafeBytes({ EventCodec.scanHitFields(payload: $0) }),
               !state.needsWholeEvent(forScanHit: fields) {
                state.apply(scanHit: fields, sequence: r.event.sequence, timeMicroseconds: r.event.timeMicroseconds)
            } else {
                state.apply(r.event)
            }
        }
        return state
    }

    struct Outcome {
        var compactions = 0
        var compacted = 0
        var contactTracks = 0
        var deleted = 0
        var keptOldOfPresentDevices = 0
        var keptOldTagSightings = 0
        var retentions = 0
        var batches = 0
        var batchesKeptForATag = 0
        var staysCarried = 0
        var replayChecks = 0
    }

    /// Twenty days of a box: a beacon heard almost always, people coming and going, residents'
    /// tags enrolled and removed, alerts and exposure events, a retention event a day (some of
    /// whose deletions never ran before the next one), and the clock stepped back once.
    /// `batching`: the hits of each moment are one ScanBatch, as the node logs a scan window (a
    /// tag's sighting on its own, but now and then inside the batch), and the compactions and
    /// retentions carry the device list (`DeviceStays`) as the node's do.
    static func run(seed: UInt64, compacting: Bool = false, batching: Bool = false) throws -> Outcome {
        var rng = SeededGenerator(state: seed)
        var settings = ProjectionSettings()
        settings.devicePruneAfterMicroseconds = 30 * minute
        var live = Projections(settings: settings)
        var log: [Record] = []
        var sequence: UInt64 = 0
        var time = 200 * day + UInt64.random(in: 0..<day, using: &rng)
        let end = time + 20 * day
        var lastRetentionDay = DayTally.day(ofMicroseconds: time)
        var outcome = Outcome()
        var residents: [String] = []
        var counter: UInt32 = 0
        var steppedBack = false
        // Every event but the compactions, never compacted: what exposure windows are without them.
        var raw: [Event] = []
        // A compaction whose purge was cut short: finished before the next one (as the node does).
        var owed: CompactionPlan?

        func append(_ body: EventBody) {
            sequence += 1
            let event = Event(sequence: sequence, timeMicroseconds: time, body: body)
            let (kind, payload) = EventCodec.encode(body)
            log.append(Record(event: event, kind: kind, payload: payload))
            if case .scanSightings = body {} else { raw.append(event) }
            live.apply(event)
        }
        // The hits of this moment, when batching: logged by `flush` as the node logs a window.
        var window: [ScanHit] = []
        func flush() {
            guard !window.isEmpty else { return }
            let inside = Double.random(in: 0..<1, using: &rng) < 0.05
            let tags = window.filter { !inside && live.escalations.wasEverTag($0.address) }
            let (batch, rest) = ScanBatch.packing(window.filter { inside || !live.escalations.wasEverTag($0.address) })
            window = []
            if batch.count > 0 {
                outcome.batches += 1
                if inside, (try? batch.scanHits())?.contains(where: { live.escalations.wasEverTag($0.address) }) == true {
                    outcome.batchesKeptForATag += 1
                }
                append(.scanBatch(batch))
            }
            for h in tags + rest { append(.scanHit(h)) }
        }
        func logHit(_ body: EventBody) {
            guard batching, case .scanHit(let h) = body else { append(body); return }
            window.append(h)
        }
        func hit(_ address: UInt64, count: UInt32, rpi: Bool = false) -> EventBody {
            var h = ScanHit()
            h.address = address
            h.addressType = .addressRandom
            h.count = count
            h.rssiMin = -80; h.rssiMax = -50 - Int32(address % 5); h.rssiSum = Int64(count) * (-65 - Int64(address % 7))
            h.lastOffsetUs = 1_000_000
            h.firstOffsetUs = 4_000_000 + address % 3 * 1_000_000
            if rpi {
                // A phone's identifier, which changes every 15 minutes.
                var id = [UInt8](repeating: UInt8(truncatingIfNeeded: address), count: 16)
                id[0] = UInt8(truncatingIfNeeded: time / (15 * minute))
                h.advertisement.gaenRpi = Data(id)
                h.advertisement.gaenAem = Data([0x40, 0xF4, 0, 0])
            }
            if address % 4 == 0 { h.txPower = -8 - Int32(time % 3) }
            return .scanHit(h)
        }
        func checkReplay(_ when: String) throws {
            let replayed = replay(log, settings: settings)
            #expect(try replayed.encoded() == live.encoded(), "seed \(seed), \(when): replay of the log so far equals the live state")
            outcome.replayChecks += 1
        }
        // Visitors staying one to three hours (longer than compaction waits, shorter than the
        // beacon): their stays run across compactions, and across the bound of some.
        var visitors: [(address: UInt64, leaves: UInt64)] = []
        var visitorCount: UInt64 = 0
        // The node's compaction: every slot older than an hour with hits retention may delete.
        func compact() throws {
            while let from = live.retention.recentScanHits.firstSlotWithDeletable,
                  UInt64(from + 1) * SlotTally.slotMicroseconds + 60 * minute <= time,
                  let sequences = live.retention.recentScanHits.sequences(from: from, before: from + 1) {
                if let plan = owed { outcome.compacted += purge(&log, plan); owed = nil }
                var s = sightings(log, from: from, sequences: sequences)
                // Where the node's purge starts (`Compaction.walkStart`).
                let horizon = time - settings.devicePruneAfterMicroseconds
                for (key, first) in live.retention.keep where first < s.firstSequence {
                    if let d = live.devices.devices[key], d.firstHitSequence == first, d.lastSeenMicroseconds >= horizon { continue }
                    s.firstSequence = first
                }
                if batching {
                    s.stays = live.devices.stays(at: time, reaching: s.spanEndUs)
                    outcome.staysCarried += s.stays.devices.count
                }
                append(.scanSightings(s))
                outcome.compactions += 1
                guard let plan = live.compactionPlan else { throw RetentionTestError.noPlan }
                if Double.random(in: 0..<1, using: &rng) < 0.7 { outcome.compacted += purge(&log, plan) } else { owed = plan }
                // Along the way too, not only at the end (a state a later event repairs would
                // hide there): the log as it is now, purges owed or not, replays to the live state.
                if outcome.compactions % 97 == 0 { try checkReplay("compaction \(outcome.compactions)") }
            }
        }

        var started = NodeStarted()
        started.nodeID = 7
        append(.nodeStarted(started))
        while time < end {
            // Mostly a few minutes apart; now and then hours of silence (every stay ends).
            time += Double.random(in: 0..<1, using: &rng) < 0.0004
                ? UInt64.random(in: 2 * 60...5 * 60, using: &rng) * minute
                : UInt64.random(in: 10...600, using: &rng) * 1_000_000
            if !steppedBack, time > end - 6 * day {
                // NTP stepped the clock back ten minutes once.
                time -= 10 * minute
                steppedBack = true
            }
            if compacting { try compact() }
            logHit(hit(0xB0_0000_0001, count: 2)) // the beacon
            visitors.removeAll { $0.leaves <= time }
            if Double.random(in: 0..<1, using: &rng) < 0.01 {
                visitorCount += 1
                visitors.append((0xD0_0000_0000 | visitorCount, time + UInt64.random(in: 60...180, using: &rng) * minute))
            }
            for v in visitors { logHit(hit(v.address, count: 1, rpi: v.address % 2 == 0)) }
            let roll = Double.random(in: 0..<1, using: &rng)
            if roll < 0.6 {
                let address = 0xC0_0000_0000 | UInt64.random(in: 1...12, using: &rng)
                // A hit of no report is not something a window makes: logged on its own.
                let count = UInt32.random(in: 0...3, using: &rng)
                if count == 0 { append(hit(address, count: 0)) } else { logHit(hit(address, count: count, rpi: address % 3 != 0)) }
                if batching, Double.random(in: 0..<1, using: &rng) < 0.5 {
                    let other = 0xC0_0000_0000 | UInt64.random(in: 13...40, using: &rng)
                    logHit(hit(other, count: UInt32.random(in: 1...3, using: &rng), rpi: true))
                }
            }
            flush()
            if roll < 0.6 {
            } else if roll < 0.62 {
                let id = "r\(Int.random(in: 1...4, using: &rng))"
                let tag = 0xC0_0000_0000 | UInt64.random(in: 1...12, using: &rng)
                append(.residentEnrolled(LadderEvents.resident(id, mode: .off, tag: tag)))
                residents.append(id)
            } else if roll < 0.625, let id = residents.popLast() {
                var removed = ResidentRemoved()
                removed.id = id
                append(.residentRemoved(removed))
            } else if roll < 0.64 {
                counter += 1
                append(.alertRaised(alert(origin: 7, counter: counter, kind: .flood,
                                          expiresAt: Double(time / 1_000_000 + 3_600))))
            } else if roll < 0.66 {
                var x = ExposureDetected()
                x.identifier = Data([UInt8.random(in: 0...255, using: &rng)])
                append(.exposureDetected(x))
            }
            let today = DayTally.day(ofMicroseconds: time)
            if today > lastRetentionDay, time % day > 3 * 3_600_000_000 {
                lastRetentionDay = today
                var r = ContactRetention()
                // Older logs hold cutoffs that are not a midnight; the plan rounds them down.
                r.cutoffUs = time - 5 * day - (outcome.retentions % 2 == 0 ? 0 : time % day)
                if batching, SlotTally.slot(ofMicroseconds: RetentionPlan.alignedCutoff(r.cutoffUs)) > live.retention.scanHits.floorDay {
                    r.stays = live.devices.stays(at: time, reaching: RetentionPlan.alignedCutoff(r.cutoffUs))
                }
                append(.contactRetention(r))
                outcome.retentions += 1
                guard let plan = live.retentionPlan else { throw RetentionTestError.noPlan }
                try checkReplay("retention \(outcome.retentions), before its purge")
                // Some deletions are cut short by a power loss and only the next retention's runs.
                if Double.random(in: 0..<1, using: &rng) < 0.7 {
                    let oldNotDeleted = log.filter {
                        guard $0.event.sequence <= plan.throughSequence, $0.event.timeMicroseconds < plan.cutoffMicroseconds,
                              case .scanHit(let h) = $0.event.body else { return false }
                        return !plan.deletes(scanHit: ScanHitFields(h), sequence: $0.event.sequence)
                    }
                    outcome.keptOldTagSightings += oldNotDeleted.filter { r in
                        guard case .scanHit(let h) = r.event.body else { return false }
                        return plan.tagSince[h.address].map { $0 < r.event.sequence } == true
                    }.count
                    outcome.keptOldOfPresentDevices += oldNotDeleted.count
                    outcome.deleted += purge(&log, plan)
                }
            }
        }
        if let plan = owed { outcome.compacted += purge(&log, plan) }
        if let plan = live.retentionPlan { outcome.deleted += purge(&log, plan) }

        // Exposure windows are the same from the compacted log as from every raw hit.
        let compacted = contacts(log.map(\.event))
        let uncompacted = contacts(raw)
        #expect(compacted.tracks == uncompacted.tracks, "seed \(seed): the same contacts, raw or compacted")
        outcome.contactTracks = compacted.tracks.count

        // The state after deletion equals the state that saw every event...
        let replayed = replay(log, settings: settings)
        #expect(try replayed.encoded() == live.encoded(), "seed \(seed): replay of the shortened log equals the live state")
        // ...and the counts are the log's.
        let scanHits = log.filter { if case .scanHit = $0.event.body { true } else { false } }.count
        let exposures = log.filter { if case .exposureDetected = $0.event.body { true } else { false } }.count
        let batches = log.filter { if case .scanBatch = $0.event.body { true } else { false } }.count
        #expect(live.health.count(of: .scanHit) == UInt64(scanHits), "seed \(seed)")
        #expect(live.health.count(of: .scanBatch) == UInt64(batches), "seed \(seed)")
        #expect(live.health.count(of: .exposureDetected) == UInt64(exposures), "seed \(seed)")
        #expect(live.health.totalEvents == UInt64(log.count), "seed \(seed)")
        return outcome
    }

    enum RetentionTestError: Error { case noPlan }

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func replayOfTheShortenedLogEqualsTheLiveStateAndCountsMatchTheLog(seed: UInt64) throws {
        let outcome = try Self.run(seed: seed)
        // Not vacuous: every run deletes, and keeps old sightings for both reasons.
        #expect(outcome.retentions >= 15)
        #expect(outcome.deleted > 1_000)
        #expect(outcome.keptOldTagSightings > 0)
        #expect(outcome.keptOldOfPresentDevices > outcome.keptOldTagSightings, "the beacon's long stay is kept")
    }

    /// The same twenty days with the node's compaction every ten minutes (some purges cut short
    /// and finished before the next): replay of the compacted log still equals the live state,
    /// status counts still equal the log's, and exposure contacts are those of the raw hits.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func compactedLogReplaysToTheLiveStateAndGivesTheSameContacts(seed: UInt64) throws {
        let outcome = try Self.run(seed: seed, compacting: true)
        #expect(outcome.compactions > 1_000)
        #expect(outcome.compacted > 100, "compactions delete (most hits here are tags' or the beacon's, kept)")
        #expect(outcome.contactTracks > 100)
        #expect(outcome.keptOldOfPresentDevices > 0, "the beacon's stay is kept raw")
    }

    /// The same with the node's raw tier: each moment's hits in one ScanBatch. The compactions
    /// and retentions delete batches whole and carry the device list, so replay of what is left
    /// still equals the live state, counts equal the log's, and contacts those of every hit.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func batchedLogCompactsAndReplaysToTheLiveState(seed: UInt64) throws {
        let outcome = try Self.run(seed: seed, compacting: true, batching: true)
        #expect(outcome.batches > 5_000)
        #expect(outcome.compactions > 1_000)
        #expect(outcome.compacted > outcome.batches / 2, "most batches are deleted by compaction")
        #expect(outcome.batchesKeptForATag > 0, "a batch holding a tag's sighting is kept")
        // The beacon's stay goes on for days: its entry is carried, people's short stays are not.
        #expect(outcome.staysCarried > outcome.compactions, "the beacon's and the visitors' long stays are carried")
        #expect(outcome.replayChecks > 20)
        #expect(outcome.contactTracks > 100)
    }

    @Test(arguments: [1, 2] as [UInt64])
    func batchedLogWithRetentionOnlyReplaysToTheLiveState(seed: UInt64) throws {
        let outcome = try Self.run(seed: seed, batching: true)
        #expect(outcome.retentions >= 15)
        #expect(outcome.deleted > 1_000)
    }

    @Test func aRetentionThatDeletesNothingChangesNoCountAndNoDevice() {
        var settings = ProjectionSettings()
        settings.devicePruneAfterMicroseconds = 30 * Self.minute
        var state = Projections(settings: settings)
        let start = 300 * Self.day
        var sequence: UInt64 = 0
        func append(_ body: EventBody, at time: UInt64) {
            sequence += 1
            state.apply(Event(sequence: sequence, timeMicroseconds: time, body: body))
        }
        for i in 0..<240 { append(scanHit(address: 0xD0_0000_0000 | UInt64(i % 7), rssi: [-60]), at: start + UInt64(i) * 1_000_000) }
        func seen(_ list: DeviceList) -> [[UInt64]] {
            list.sorted.map { [$0.address, $0.hits, $0.reports, $0.firstSeenMicroseconds, $0.lastSeenMicroseconds, $0.firstHitSequence] }
        }
        let devices = seen(state.devices)
        var r = ContactRetention()
        r.cutoffUs = start - 14 * Self.day
        append(.contactRetention(r), at: start + 300_000_000)
        #expect(state.health.count(of: .scanHit) == 240, "status says what the log holds: nothing was deleted")
        #expect(seen(state.devices) == devices)
        #expect(state.devices.devices.values.map(\.hits).reduce(0, +) == 240)
    }

    @Test func aDayTallyCountsByDayAndCollapsesBeforeACutoff() {
        var t = DayTally()
        for day: UInt32 in [10, 10, 11, 13, 12, 10, 14] { t.add(day: day) }
        #expect(t.total == 7)
        #expect(t.count(before: 12) == 4)
        t.collapse(before: 12, earlier: 1)
        #expect(t.earlier == 1 && t.floorDay == 12 && t.total == 4)
        t.add(day: 3) // a clock gone back: before the floor, into `earlier`
        #expect(t.count(before: 13) == 3)
        #expect(t.count(before: 15) == 5)
    }
}
