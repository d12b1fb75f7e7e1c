import VigilCore
import VigilEvents

/// Time acting on hazards: when the earliest of a hazard's expiry (a road user 10 s after its
/// last message, a work zone when its message says) and the end of the hazard warning comes,
/// `HazardDeadline` says so at that moment. The hazard book then drops what expired and ends the
/// warning, outputs follow at once, and replay needs no clock: a quiet box (no more reports)
/// still clears its pins and stops beeping.
///
/// One deadline at a time; one appended and not yet durable is not appended again.
final class HazardClock: NodeComponent {
    unowned let context: any NodeContext
    static let timer = Scheduler.Timer("hazard-deadline")
    /// The deadline appended and not yet applied.
    private var appended: UInt64?

    init(context: any NodeContext) { self.context = context }

    func start() throws(NodeError) {
        context.scheduler.register(Self.timer) { [unowned self] in reconcile() }
    }

    func applied(_ event: Event) {
        if case .hazardDeadline(let d) = event.body, d.dueUs == appended { appended = nil }
    }

    func refused(_ event: Event) {
        if case .hazardDeadline(let d) = event.body, d.dueUs == appended { appended = nil }
    }

    func reconcile() {
        guard !context.stopping, let due = context.projections.hazards.nextDueMicroseconds else {
            context.scheduler.cancel(Self.timer)
            return
        }
        if let appended, appended >= due { return } // waiting to become durable
        let now = context.clock.nowMicroseconds()
        if due <= now {
            var deadline = HazardDeadline()
            deadline.dueUs = due
            if context.append(.hazardDeadline(deadline), time: now) != nil {
                appended = due
                context.scheduler.cancel(Self.timer)
            } else {
                // Refused at once: try again shortly, or a quiet box would keep beeping.
                context.scheduler.schedule(Self.timer, afterNanoseconds: 1_000_000_000)
            }
        } else {
            context.scheduler.schedule(Self.timer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: due))
        }
    }
}
