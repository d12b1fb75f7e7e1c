import VigilCore
import VigilEvents

/// Time acting on a projection that holds things with an end (hazards and their warning,
/// public warnings): when the earliest end it reports comes, the clock appends the deadline event
/// for that moment. The projection then drops what ended, outputs follow, and replay needs no
/// clock: a quiet box (no more messages) still ends them and stops beeping.
///
/// One deadline at a time; one appended and not yet durable is not appended again.
final class DeadlineClock: NodeComponent {
    unowned let context: any NodeContext
    let timer: Scheduler.Timer
    /// The earliest end the projection holds (nil: none).
    private let nextDue: (Projections) -> UInt64?
    /// The event that says `due` has come.
    private let event: (UInt64) -> EventBody
    /// The time a deadline event of this clock's kind says (nil: another kind).
    private let dueOf: (EventBody) -> UInt64?
    /// The deadline appended and not yet applied.
    private var appended: UInt64?

    init(context: any NodeContext, timer: Scheduler.Timer, nextDue: @escaping (Projections) -> UInt64?,
         event: @escaping (UInt64) -> EventBody, dueOf: @escaping (EventBody) -> UInt64?) {
        self.context = context
        self.timer = timer
        self.nextDue = nextDue
        self.event = event
        self.dueOf = dueOf
    }

    func start() throws(NodeError) {
        context.scheduler.register(timer) { [unowned self] in reconcile() }
    }

    func applied(_ e: Event) { if let due = dueOf(e.body), due == appended { appended = nil } }

    func refused(_ e: Event) { if let due = dueOf(e.body), due == appended { appended = nil } }

    func reconcile() {
        guard !context.stopping, let due = nextDue(context.projections) else {
            context.scheduler.cancel(timer)
            return
        }
        if let appended, appended >= due { return } // waiting to become durable
        let now = context.clock.nowMicroseconds()
        if due <= now {
            if context.append(event(due), time: now) != nil {
                appended = due
                context.scheduler.cancel(timer)
            } else {
                // Refused at once: try again shortly, or a quiet box would keep beeping.
                context.scheduler.schedule(timer, afterNanoseconds: 1_000_000_000)
            }
        } else {
            context.scheduler.schedule(timer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: due))
        }
    }
}

/// `HazardDeadline` when the earliest hazard expiry (a road user 10 s after its last message, a
/// work zone when its message says) or the end of the hazard warning comes.
enum HazardClock {
    static let timer = Scheduler.Timer("hazard-deadline")

    static func make(context: any NodeContext) -> DeadlineClock {
        DeadlineClock(context: context, timer: timer, nextDue: { $0.hazards.nextDueMicroseconds },
                      event: { var d = HazardDeadline(); d.dueUs = $0; return .hazardDeadline(d) },
                      dueOf: { if case .hazardDeadline(let d) = $0 { d.dueUs } else { nil } })
    }
}

/// `WarningDeadline` when the earliest expiry of a public warning in force comes
/// (docs/warnings.md): a box whose feeds went quiet still ends its warnings.
enum WarningClock {
    static let timer = Scheduler.Timer("warning-deadline")

    static func make(context: any NodeContext) -> DeadlineClock {
        DeadlineClock(context: context, timer: timer, nextDue: { $0.warnings.nextDeadlineMicroseconds },
                      event: { var d = WarningDeadline(); d.dueUs = $0; return .warningDeadline(d) },
                      dueOf: { if case .warningDeadline(let d) = $0 { d.dueUs } else { nil } })
    }
}
