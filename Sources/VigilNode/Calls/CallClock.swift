import VigilCore
import VigilEvents

/// Time walking the call tree: when the next tier of an unanswered call is due (or the top of
/// its next round, "STILL UNANSWERED"), `CallDeadline` says so at that moment. The call book then
/// makes that tier's messages, the outbox delivers them, and replay needs no clock: a quiet box
/// escalates all the same.
///
/// One deadline at a time; one appended and not yet durable is not appended again.
final class CallClock: NodeComponent {
    unowned let context: any NodeContext
    /// Before the log is open too: a call before the open moves up its tree.
    var runsBeforeLogOpen: Bool { true }
    static let timer = Scheduler.Timer("call-deadline")
    /// The deadline appended and not yet applied.
    private var appended: CallBook.Deadline?

    init(context: any NodeContext) { self.context = context }

    func start() throws(NodeError) {
        context.scheduler.register(Self.timer) { [unowned self] in reconcile() }
    }

    func applied(_ event: Event) { settle(event) }

    func refused(_ event: Event) { settle(event) }

    private func settle(_ event: Event) {
        if case .callDeadline(let d) = event.body, let a = appended, a.call == d.call, a.tier == d.tier, a.round == d.round {
            appended = nil
        }
    }

    func reconcile() {
        guard !context.isCarrying else { return } // the calls from before the open are not all back yet
        guard !context.stopping, let due = context.projections.calls.nextDeadline else {
            context.scheduler.cancel(Self.timer)
            return
        }
        if let appended, appended == due { return } // waiting to become durable
        let now = context.clock.nowMicroseconds()
        if due.dueMicroseconds <= now {
            var deadline = CallDeadline()
            deadline.call = due.call
            deadline.tier = due.tier
            deadline.round = due.round
            deadline.dueUs = due.dueMicroseconds
            if context.append(.callDeadline(deadline), time: now) != nil {
                appended = due
                context.scheduler.cancel(Self.timer)
            } else {
                // Refused at once (a full queue): try again shortly, or the tree would stall.
                context.scheduler.schedule(Self.timer, afterNanoseconds: 1_000_000_000)
            }
        } else {
            context.scheduler.schedule(Self.timer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: due.dueMicroseconds))
        }
    }
}
