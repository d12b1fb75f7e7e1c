import VigilCore
import VigilEvents

/// Time acting on the escalation ladder: when a resident's earliest deadline comes, a
/// `DeadlineReached` event says so (time enters the pure ladder as events, so replay never needs
/// a clock). After a restart overdue deadlines come one after the other, each computed from the
/// state the previous one produced: none skipped, none repeated.
final class LadderScheduler: NodeComponent {
    unowned let context: any NodeContext
    /// The last deadline appended and not yet applied (so it is appended once).
    private var appended: EscalationBook.Deadline?
    static let deadlineTimer = Scheduler.Timer("ladder-deadline")

    init(context: any NodeContext) { self.context = context }

    func start() throws(NodeError) {
        context.scheduler.register(Self.deadlineTimer) { [unowned self] in reconcile() }
    }

    func applied(_ event: Event) {
        if case .deadlineReached(let d) = event.body,
           appended.map({ $0.resident == d.resident && $0.ladder == d.ladder && $0.step == d.step && $0.dueMicroseconds == d.dueUs }) == true {
            appended = nil
        }
    }

    func refused(_ event: Event) {
        if case .deadlineReached = event.body { appended = nil } // refused: try again
    }

    /// Appends the earliest deadline once it is due, or arms the timer for it.
    func reconcile() {
        guard !context.stopping, let deadline = context.projections.escalations.earliestDeadline else {
            context.scheduler.cancel(Self.deadlineTimer)
            return
        }
        if deadline == appended { return } // appended, waiting to become durable
        let now = context.clock.nowMicroseconds()
        if deadline.dueMicroseconds <= now {
            var reached = DeadlineReached()
            reached.resident = deadline.resident
            reached.ladder = deadline.ladder
            reached.step = deadline.step
            reached.dueUs = deadline.dueMicroseconds
            context.append(.deadlineReached(reached), time: now)
            appended = deadline
            context.scheduler.cancel(Self.deadlineTimer)
        } else {
            context.scheduler.schedule(Self.deadlineTimer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: deadline.dueMicroseconds))
        }
    }
}
