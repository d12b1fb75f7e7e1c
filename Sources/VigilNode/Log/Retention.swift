import VigilCore
import VigilEvents
import VigilLog

/// Retention of contact data: once a day a `ContactRetention` event names a cutoff (a UTC
/// midnight); applying it, the projections forget exactly what the deletion will remove
/// (`RetentionPlan`, so replay agrees whether or not the deletion has run), then the log deletes
/// those records in small slices. A deletion cut short by a stop or a crash is finished at the
/// next start (it is idempotent).
final class Retention: NodeComponent {
    unowned let context: any LogMaintenanceContext
    /// `exposure.retention_first_check`: the first run after a start.
    let firstCheckMicroseconds: UInt64
    /// How long contact data is kept (`exposure.contacts.retention`).
    let keepMicroseconds: UInt64
    static let timer = Scheduler.Timer("retention")
    static let checkNanoseconds: UInt64 = 6 * 3_600 * 1_000_000_000

    /// A run held back while a compaction's event was pending (`run`).
    private var heldBack = false

    init(context: any LogMaintenanceContext, firstCheckMicroseconds: UInt64, keepMicroseconds: UInt64) {
        self.context = context
        self.firstCheckMicroseconds = firstCheckMicroseconds
        self.keepMicroseconds = keepMicroseconds
    }

    func start() throws(NodeError) {
        context.scheduler.register(Self.timer) { [unowned self] in
            run()
            context.scheduler.schedule(Self.timer, afterNanoseconds: Self.checkNanoseconds)
        }
        // A minute after start (a box that was off catches up), then every few hours.
        context.scheduler.schedule(Self.timer, afterNanoseconds: firstCheckMicroseconds &* 1_000)
        if let plan = context.projections.retentionPlan { purge(plan) }
    }

    func applied(_ event: Event) {
        if case .contactRetention = event.body, let plan = context.projections.retentionPlan { purge(plan) }
        if case .scanSightings = event.body, heldBack { heldBack = false; run() }
    }

    func refused(_ event: Event) {
        if case .scanSightings = event.body, heldBack { heldBack = false; run() }
    }

    /// Logs a ContactRetention event when one is due.
    private func run() {
        guard !context.stopping else { return }
        let now = context.clock.nowMicroseconds()
        let x = context.projections.exposures
        let last = x.lastRetentionMicroseconds
        // Due once a day; also when the clock went back past the last one (else retention would
        // stop until the clock caught up again).
        guard last == 0 || now >= last &+ 86_400_000_000 || now < last else { return }
        let keep = keepMicroseconds
        guard now > keep else { return }
        var cutoff = RetentionPlan.alignedCutoff(now - keep)
        // A clock stepped far forward (an RTC-less Pi, a bad NTP answer) must not delete everything
        // at once: the cutoff moves at most two days past the previous one per run.
        if x.lastRetentionCutoffMicroseconds > 0, cutoff > x.lastRetentionCutoffMicroseconds &+ 2 * 86_400_000_000 {
            context.logger.warning("retention: the clock jumped ahead; the cutoff advances by two days only",
                                metadata: ["clock_cutoff_us": "\(cutoff)", "previous_cutoff_us": "\(x.lastRetentionCutoffMicroseconds)"])
            cutoff = RetentionPlan.alignedCutoff(x.lastRetentionCutoffMicroseconds &+ 2 * 86_400_000_000)
        }
        guard cutoff > x.lastRetentionCutoffMicroseconds else { return }
        // Whether it carries the device list's entries depends on how far compaction went: a
        // compaction's event still pending may yet be refused, so that is known once it is
        // applied (or refused), a moment from now.
        if context.pending.elements.contains(where: { if case .scanSightings = $0.body { true } else { false } }) {
            heldBack = true
            return
        }
        var r = ContactRetention()
        r.cutoffUs = cutoff
        // Scan batches go whole, never kept for a stay: when it deletes them (no compaction went
        // past the cutoff), it carries the entries of the stays its deletion reaches, as every
        // event appended before it leaves them.
        let state = context.projectedState()
        let aligned = RetentionPlan.alignedCutoff(cutoff)
        if SlotTally.slot(ofMicroseconds: aligned) > state.retention.scanHits.floorDay {
            r.stays = state.devices.stays(at: now, reaching: aligned)
        }
        context.append(.contactRetention(r), time: now)
        context.logger.info("retention: contact data before the cutoff is being deleted", metadata: ["cutoff_us": "\(r.cutoffUs)"])
    }

    /// Deletes what `plan` names, in slices on the log's writer.
    private func purge(_ plan: RetentionPlan) {
        let logger = context.logger
        do {
            try context.log.purge(before: plan.cutoffMicroseconds, throughSequence: plan.throughSequence, matches: { kind, sequence, payload in
                plan.deletes(kind: kind, sequence: sequence, payload: payload)
            }, completion: { result in
                switch result {
                case .success(let removed): logger.info("retention: contact data deleted", metadata: ["events": "\(removed)"])
                case .failure(let error): logger.warning("retention: deletion stopped; it is retried at the next start", metadata: ["error": "\(error)"])
                }
            })
        } catch {
            context.logger.warning("retention: cannot delete now; it is retried at the next start", metadata: ["error": "\(error)"])
        }
    }
}
