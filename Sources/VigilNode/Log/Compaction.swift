import Foundation
import VigilCore
import VigilEvents
import VigilLog

/// Compaction of raw scan hits (docs/log.md "A crowded shelter"): every ten minutes, the scan hits of
/// the oldest ten-minute slot that is older than `log.compact_after` are read on a thread of their
/// own, folded into per-identifier, per-minute sightings (what exposure windows need), and logged
/// as one `ScanSightings` event. Applying it, the projections forget the raw hits the log then
/// deletes (`CompactionPlan`); the log's purge follows, in slices on the writer. A box that was
/// off catches up one slot at a time, the next as soon as the last one's purge is done.
///
/// At most one compaction is under way, from the read to the end of its purge: a new plan
/// replaces the old one in the state, so the old one's purge must have finished first. A purge
/// cut short by a stop is asked again at the next start.
final class Compaction: NodeComponent {
    unowned let context: any LogMaintenanceContext
    /// `log.compact_after`: hits older than this are compacted.
    let afterMicroseconds: UInt64
    /// `exposure.contacts.tags`: the identifiers whose sightings are kept.
    let tags: Set<UInt64>
    static let timer = Scheduler.Timer("compaction")
    static let intervalNanoseconds = SlotTally.slotMicroseconds * 1_000
    /// Whether a read or a purge is under way.
    private(set) var busy = false
    /// The last plan's purge failed (a full map, say): it is asked again before anything new,
    /// since a new plan would take its place in the state.
    private var purgeOwed = false
    /// Compactions logged: counted, for tests and the log.
    private(set) var logged: UInt64 = 0
    /// A compaction read and held back while a retention's event was pending (`read`).
    private var heldBack: (sightings: ScanSightings, sequences: ClosedRange<UInt64>)?

    init(context: any LogMaintenanceContext, afterMicroseconds: UInt64, tags: Set<UInt64>) {
        self.context = context
        self.afterMicroseconds = afterMicroseconds
        self.tags = tags
    }

    func start() throws(NodeError) {
        context.scheduler.register(Self.timer) { [unowned self] in run() }
        if let plan = context.projections.compactionPlan {
            purge(plan)
        } else {
            context.scheduler.schedule(Self.timer, afterNanoseconds: Self.intervalNanoseconds)
        }
    }

    func applied(_ event: Event) {
        if case .scanSightings = event.body, let plan = context.projections.compactionPlan { purge(plan) }
        if case .contactRetention = event.body { releaseHeldBack() }
    }

    func refused(_ event: Event) {
        // The log refused the sightings (it failed): nothing was forgotten or deleted.
        if case .scanSightings = event.body { finished() }
        if case .contactRetention = event.body { releaseHeldBack() }
    }

    private func releaseHeldBack() {
        guard let held = heldBack else { return }
        heldBack = nil
        read(.success(held.sightings), sequences: held.sequences)
    }

    /// The slot to compact now, and the sequences of its hits; nil when none is due.
    private func due() -> (from: UInt32, before: UInt32, sequences: ClosedRange<UInt64>)? {
        let after = afterMicroseconds
        guard after > 0 else { return nil }
        let now = context.clock.nowMicroseconds()
        guard now > after else { return nil }
        let tally = context.projections.retention.recentScanHits
        // (The last slot there is holds nothing a clock could reach: never compacted.)
        guard let from = tally.firstSlotWithDeletable, from < UInt32.max, UInt64(from + 1) * SlotTally.slotMicroseconds <= now - after,
              let sequences = tally.sequences(from: from, before: from + 1) else { return nil }
        return (from, from + 1, sequences)
    }

    private func run() {
        guard !busy, !context.stopping, context.fromMemory == nil, context.log.failure == nil else {
            if !context.stopping { context.scheduler.schedule(Self.timer, afterNanoseconds: Self.intervalNanoseconds) }
            return
        }
        if purgeOwed, let plan = context.projections.compactionPlan {
            purge(plan)
            return
        }
        guard let (from, before, sequences) = due() else {
            context.scheduler.schedule(Self.timer, afterNanoseconds: Self.intervalNanoseconds)
            return
        }
        busy = true
        let log = context.log
        let tags = self.tags
        let start = UInt64(from) * SlotTally.slotMicroseconds
        let end = UInt64(before) * SlotTally.slotMicroseconds
        let back = context.loopBound(self)
        Thread.detachNewThread {
            let result = Result { () throws(LogError) -> ScanSightings in
                try ScanSightingsReader.read(log, sequences: sequences, start: start, end: end, tags: tags)
            }
            back.send { compaction in compaction.read(result, sequences: sequences) }
        }
    }

    /// On the loop: logs the sightings, unless a hit of the span came in while they were read.
    private func read(_ result: Result<ScanSightings, LogError>, sequences: ClosedRange<UInt64>) {
        // Stopping, or the log failed meanwhile (a compaction held only in memory would forget
        // hits the log keeps, and could not delete them).
        guard !context.stopping, context.fromMemory == nil, context.log.failure == nil else { finished(); return }
        let sightings: ScanSightings
        switch result {
        case .failure(let error):
            context.logger.warning("compaction: the log could not be read; tried again later", metadata: ["error": "\(error)"])
            finished()
            return
        case .success(let s):
            sightings = s
        }
        // What it deletes and carries depends on what a pending retention does, which may yet be
        // refused: it waits until that is known, a moment from now.
        if context.pending.elements.contains(where: { if case .contactRetention = $0.body { true } else { false } }) {
            heldBack = (sightings, sequences)
            return
        }
        let from = SlotTally.slot(ofMicroseconds: sightings.spanStartUs)
        // The state the event follows: every event appended so far applied (a hit of the span
        // that came in while it was read, the clock having gone back an hour or more, shows in
        // its tally, and the device list is the one it carries).
        let state = context.projectedState()
        let tally = state.retention.recentScanHits
        let current = tally.firstSlotWithDeletable == from ? tally.sequences(from: from, before: from &+ 1) : nil
        guard current == sequences else {
            context.logger.info("compaction: a scan hit of the span came in while it was read (the clock went back); read again")
            finished()
            return
        }
        var event = sightings
        let now = context.clock.nowMicroseconds()
        event.firstSequence = walkStart(spanFirst: sequences.lowerBound, at: now, state: state)
        event.stays = state.devices.stays(at: now, reaching: sightings.spanEndUs)
        guard context.append(.scanSightings(event), time: now) != nil else { finished(); return }
        logged &+= 1
    }

    /// Where the purge must start: the span's first hit, or the first hit of a stay the last
    /// decision kept (`retention.keep`) that will have ended when the event, logged at `now`, is
    /// applied (its hits before the span's end go too). A stay still heard within the prune horizon
    /// of now is still going on then: its device's last sighting only moves forward.
    private func walkStart(spanFirst: UInt64, at now: UInt64, state: Projections) -> UInt64 {
        let devices = state.devices
        let horizon = now > devices.pruneAfterMicroseconds ? now - devices.pruneAfterMicroseconds : 0
        var start = spanFirst
        for (key, first) in state.retention.keep where first < start {
            if let d = devices.devices[key], d.firstHitSequence == first, d.lastSeenMicroseconds >= horizon { continue }
            start = first
        }
        return start
    }

    /// Deletes what `plan` names, then looks for the next slot at once (a box catching up).
    private func purge(_ plan: CompactionPlan) {
        busy = true
        let logger = context.logger
        let back = context.loopBound(self)
        do {
            try context.log.purge(sequences: plan.firstSequence, through: plan.lastSequence, from: 0,
                               before: plan.spanEndMicroseconds, matches: { kind, sequence, payload in
                plan.deletes(kind: kind, sequence: sequence, payload: payload)
            }, completion: { result in
                if case .failure(let error) = result {
                    logger.warning("compaction: deletion stopped; it is retried later", metadata: ["error": "\(error)"])
                }
                back.send { compaction in compaction.purged(result) }
            })
        } catch {
            logger.warning("compaction: cannot delete now; it is retried later", metadata: ["error": "\(error)"])
            purgeOwed = true
            finished()
        }
    }

    private func purged(_ result: Result<UInt64, LogError>) {
        purgeOwed = false
        if case .failure = result { purgeOwed = true }
        finished(soon: !purgeOwed)
    }

    /// Done with one compaction: the next is looked for in a moment when catching up, else at
    /// the next interval.
    private func finished(soon: Bool = false) {
        busy = false
        guard !context.stopping else { return }
        context.scheduler.schedule(Self.timer, afterNanoseconds: soon && due() != nil ? 0 : Self.intervalNanoseconds)
    }
}

/// What a compaction logs, read from the log: the node's compactor and the benchmark use it.
public enum ScanSightingsReader {
    /// Folds the span's hits (`sequences`, event time in `[start, end)`) into sightings. Reads in
    /// bounded transactions; off the loop.
    public static func read(_ log: EventLog, sequences: ClosedRange<UInt64>, start: UInt64, end: UInt64, tags: Set<UInt64>) throws(LogError) -> ScanSightings {
        var settings = ExposureContacts.Settings()
        settings.tags = tags
        var contacts = ExposureContacts(settings: settings)
        var hits: UInt64 = 0
        let scanHitKind = UInt32(EventKind.scanHit.rawValue)
        let scanBatchKind = UInt32(EventKind.scanBatch.rawValue)
        try LogPaging.forEach(log, from: sequences.lowerBound, through: sequences.upperBound) { result in
            guard case .success(let view) = result, view.kind == scanHitKind || view.kind == scanBatchKind,
                  view.timeMicroseconds >= start, view.timeMicroseconds < end, case .event(let e) = Replay.input(result) else { return }
            if case .scanBatch(let batch) = e.body { hits += UInt64(batch.count) } else { hits += 1 }
            contacts.apply(e)
        }
        var s = ScanSightings()
        s.spanStartUs = start
        s.spanEndUs = end
        s.firstSequence = sequences.lowerBound
        s.throughSequence = sequences.upperBound
        s.hits = hits
        s.tracks = contacts.sightingTracks()
        return s
    }
}
