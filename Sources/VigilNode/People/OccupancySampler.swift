import VigilCore
import VigilEvents

/// How many people are at the shelter, minute by minute: when a wall-clock minute has ended (and
/// the scan window that straddles its end has been reported), `OccupancySampled` records how many
/// distinct advertisers were heard in it. That count is what the hub shows coordinators instead
/// of anything the radio heard (docs/hub.md "What leaves the box").
///
/// Only the latest complete minute is sampled: after downtime nothing is back-filled, since what
/// was heard then is not known. Nothing is sampled while the radio is off (a 0 would read as an
/// empty shelter).
final class OccupancySampler: NodeComponent {
    unowned let context: any NodeContext
    static let timer = Scheduler.Timer("occupancy")
    static let minuteMicroseconds: UInt64 = 60_000_000
    /// After a minute ends, the scan window that was open at its end must be reported before the
    /// minute is counted.
    static let graceMicroseconds: UInt64 = 5_000_000
    private var lastSampledMinute: UInt64 = 0

    init(context: any NodeContext) { self.context = context }

    func start() throws(NodeError) {
        lastSampledMinute = context.projections.health.occupancy?.minuteStartMicroseconds ?? 0
        context.scheduler.register(Self.timer) { [unowned self] in sample() }
        arm()
    }

    func stop() { context.scheduler.cancel(Self.timer) }

    /// The minute that has most recently ended at least the grace before `now`.
    static func latestCompleteMinute(at now: UInt64) -> UInt64? {
        guard now >= graceMicroseconds + minuteMicroseconds else { return nil }
        let end = (now - graceMicroseconds) / minuteMicroseconds * minuteMicroseconds
        return end - minuteMicroseconds
    }

    private func sample() {
        defer { arm() }
        // "Not the minute sampled last", not "after it": a clock stepped back must not stop the
        // sampling until it catches up again.
        // One reading of the clock: a second one, stepped back, would make the age check below
        // subtract past zero.
        let now = context.clock.nowMicroseconds()
        guard !context.stopping, let minute = Self.latestCompleteMinute(at: now), minute != lastSampledMinute else { return }
        let p = context.projections
        guard p.health.radioState == RadioState.on.rawValue else { return }
        // A device is forgotten after `device prune` unheard: a minute that ended longer ago
        // than that cannot be counted exactly (the clock jumped, or the loop was held up).
        guard now - (minute + Self.minuteMicroseconds) < p.devices.pruneAfterMicroseconds else { return }
        let heard = p.devices.heard(from: minute, until: minute + Self.minuteMicroseconds, isTag: { p.escalations.isTag($0) })
        var o = OccupancySampled()
        o.minuteStartUs = minute
        o.advertisers = UInt32(clamping: heard.advertisers)
        o.tags = UInt32(clamping: heard.tags)
        // The radio came on during the minute: part of it was not heard.
        o.radioOn = p.health.radioStateChangedMicroseconds <= minute
        lastSampledMinute = minute
        context.append(.occupancySampled(o), time: now)
    }

    private func arm() {
        guard !context.stopping else { return }
        let now = context.clock.nowMicroseconds()
        let next = (now / Self.minuteMicroseconds + 1) * Self.minuteMicroseconds + Self.graceMicroseconds
        context.scheduler.schedule(Self.timer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: next))
    }
}
