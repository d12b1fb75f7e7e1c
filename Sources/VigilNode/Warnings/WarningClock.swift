import VigilCore
import VigilEvents

/// Time acting on public warnings (docs/warnings.md): when the earliest expiry of a warning in
/// force comes, `WarningDeadline` says so at that moment; the warning book ends what expired,
/// outputs follow, and replay needs no clock. A box whose feeds have gone quiet still ends its
/// warnings and stops sounding.
///
/// One deadline at a time; one appended and not yet durable is not appended again.
final class WarningClock: NodeComponent {
    unowned let context: any NodeContext
    static let timer = Scheduler.Timer("warning-deadline")
    /// The deadline appended and not yet applied.
    private var appended: UInt64?

    init(context: any NodeContext) { self.context = context }

    func start() throws(NodeError) {
        context.scheduler.register(Self.timer) { [unowned self] in reconcile() }
    }

    func applied(_ event: Event) {
        if case .warningDeadline(let d) = event.body, d.dueUs == appended { appended = nil }
    }

    func refused(_ event: Event) {
        if case .warningDeadline(let d) = event.body, d.dueUs == appended { appended = nil }
    }

    func reconcile() {
        guard !context.stopping, let due = context.projections.warnings.nextDeadlineMicroseconds else {
            context.scheduler.cancel(Self.timer)
            return
        }
        if let appended, appended >= due { return } // waiting to become durable
        let now = context.clock.nowMicroseconds()
        if due <= now {
            var deadline = WarningDeadline()
            deadline.dueUs = due
            if context.append(.warningDeadline(deadline), time: now) != nil {
                appended = due
                context.scheduler.cancel(Self.timer)
            } else {
                // Refused at once: try again shortly, or a quiet box would keep sounding.
                context.scheduler.schedule(Self.timer, afterNanoseconds: 1_000_000_000)
            }
        } else {
            context.scheduler.schedule(Self.timer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: due))
        }
    }
}
