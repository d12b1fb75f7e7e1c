import Testing
import VigilCore
import VigilEvents

/// A node without a node: a log, the projections folded from it, a manual clock, and the
/// scheduler the node runs, done by hand.
///
/// The scheduler behaves exactly like `Node.scheduleLadder`: it asks the projections for
/// `escalations.earliestDeadline`; if that is due at or before "now" it appends a DeadlineReached
/// carrying exactly that resident, ladder, step and due time (the event's own time is "now"),
/// applies it, and asks again — one deadline at a time, each computed from the state the previous
/// one produced. So a test moves the clock and watches the ladder move.
struct LadderHarness {
    static let second: UInt64 = 1_000_000
    static let minute: UInt64 = 60 * second
    static let hour: UInt64 = 60 * minute
    static let day: UInt64 = 24 * hour
    /// Day 10, 00:00 UTC. Far enough from the epoch that negative UTC offsets stay positive, and
    /// midnight-aligned so night windows are easy to read.
    static let origin: UInt64 = 10 * day

    var state: Projections
    private(set) var log: [Event] = []
    private(set) var nextSequence: UInt64
    private(set) var now: UInt64

    init(state: Projections = Projections(), now: UInt64 = LadderHarness.origin, nextSequence: UInt64 = 1) {
        self.state = state
        self.now = now
        self.nextSequence = nextSequence
    }

    var escalations: EscalationBook { state.escalations }
    var outbox: Outbox { state.outbox }
    func resident(_ id: String) -> EscalationBook.ResidentState? { state.escalations.residents[id] }
    func step(_ id: String) -> LadderStep? { resident(id)?.ladderStep }
    func nextDeadline(_ id: String) -> EscalationBook.Deadline? {
        resident(id).flatMap { state.escalations.nextDeadline(for: $0) }
    }

    /// Appends an event at the current time (like the node: every event is stamped "now").
    @discardableResult
    mutating func append(_ body: EventBody) -> Event {
        let event = Event(sequence: nextSequence, timeMicroseconds: now, body: body)
        nextSequence += 1
        log.append(event)
        state.apply(event)
        return event
    }

    /// Applies an already-built event again (a duplicate in the log, with its own sequence).
    @discardableResult
    mutating func appendAgain(_ event: Event) -> Event {
        append(event.body)
    }

    /// The node running without interruption until `time`: every timer fires on time, so each
    /// DeadlineReached is stamped with its own due time. Then the clock rests at `time`.
    @discardableResult
    mutating func run(until time: UInt64, sourceLocation: SourceLocation = #_sourceLocation) -> [Event] {
        var appended: [Event] = []
        while let d = state.escalations.earliestDeadline, d.dueMicroseconds <= time {
            guard appended.count < 64 else {
                Issue.record("the ladder keeps producing deadlines before \(time)", sourceLocation: sourceLocation)
                break
            }
            now = max(now, d.dueMicroseconds)
            appended += runScheduler(sourceLocation: sourceLocation)
        }
        now = max(now, time)
        return appended
    }

    /// The node down until `time` and starting again then: the clock jumps, and the scheduler
    /// appends whatever is overdue, one deadline at a time, all stamped `time`.
    @discardableResult
    mutating func jump(to time: UInt64, sourceLocation: SourceLocation = #_sourceLocation) -> [Event] {
        now = max(now, time)
        return runScheduler(sourceLocation: sourceLocation)
    }

    /// `run(until:)` and then an event at that time.
    @discardableResult
    mutating func at(_ time: UInt64, _ body: EventBody, sourceLocation: SourceLocation = #_sourceLocation) -> Event {
        run(until: time, sourceLocation: sourceLocation)
        return append(body)
    }

    /// The manual scheduler: appends DeadlineReached for every deadline due by `now`, one by one.
    /// Each one it appends must be accepted (a stale deadline here would mean the scheduler and
    /// the projection disagree).
    @discardableResult
    mutating func runScheduler(sourceLocation: SourceLocation = #_sourceLocation) -> [Event] {
        var appended: [Event] = []
        while let d = state.escalations.earliestDeadline, d.dueMicroseconds <= now {
            guard appended.count < 64 else {
                Issue.record("the scheduler did not settle at \(now)", sourceLocation: sourceLocation)
                break
            }
            let stale = state.escalations.staleDeadlines
            appended.append(append(LadderEvents.reached(d)))
            if state.escalations.staleDeadlines != stale {
                Issue.record("the scheduler's own deadline \(d) was stale", sourceLocation: sourceLocation)
                break
            }
        }
        return appended
    }

    /// The node restarting from a checkpoint of the current state: the projections go through
    /// `encoded()`/`decoded()`, the log and the clock carry on.
    func restartedFromCheckpoint() throws -> LadderHarness {
        var copy = self
        copy.state = try Projections.decoded(state.encoded())
        return copy
    }

    /// Replays the whole log into fresh projections.
    func replayed() -> Projections {
        var fresh = Projections()
        for event in log { fresh.apply(event) }
        return fresh
    }
}

/// Builders for schema-2 events.
enum LadderEvents {
    static let contacts: [(name: String, address: String)] = [("Ana", "+61 400 000 001"), ("Ben", "ben@example.org")]

    /// The resident's own phone (the "are you OK?" prompt and its reply go by SMS to it).
    static let residentPhone = "+34600000999"

    static func resident(_ id: String, name: String = "", mode: CheckInMode = .time,
                         interval: UInt64 = 4 * LadderHarness.hour,
                         confirm: UInt64 = 0, textToAlarm: UInt64 = 0, alarmToNotify: UInt64 = 0,
                         contacts: [(name: String, address: String)] = LadderEvents.contacts,
                         pauses: [(start: UInt64, end: UInt64)] = [],
                         night: (start: UInt32, end: UInt32, utcOffset: Int32)? = nil,
                         tag: UInt64 = 0, ownAddress: String = LadderEvents.residentPhone) -> Resident {
        var r = Resident()
        r.id = id
        r.ownAddress = ownAddress
        r.name = name
        r.mode = mode
        r.intervalUs = interval
        r.confirmUs = confirm
        r.textToAlarmUs = textToAlarm
        r.alarmToNotifyUs = alarmToNotify
        r.contacts = contacts.map {
            var c = Contact()
            c.name = $0.name
            c.address = $0.address
            return c
        }
        r.pauses = pauses.map {
            var p = Pause()
            p.startUs = $0.start
            p.endUs = $0.end
            return p
        }
        if let night {
            var w = DailyWindow()
            w.startMinute = night.start
            w.endMinute = night.end
            w.utcOffsetMinutes = night.utcOffset
            r.night = w
        }
        r.bleTag = tag
        return r
    }

    static func enrolled(_ r: Resident) -> EventBody { .residentEnrolled(r) }
    static func updated(_ r: Resident) -> EventBody { .residentUpdated(r) }

    static func removed(_ id: String) -> EventBody {
        var r = ResidentRemoved()
        r.id = id
        return .residentRemoved(r)
    }

    static func heartRate(_ resident: String, bpm: Double?, flags: UInt32?) -> EventBody {
        var c = CheckIn()
        c.resident = resident
        c.source = .checkInHeartRate
        if let bpm { c.value = bpm }
        if let flags { c.heartRateFlags = flags }
        return .checkIn(c)
    }

    /// A scan window in which the tag was heard `count` times.
    static func tagSeen(_ address: UInt64, count: Int = 3) -> EventBody {
        scanHit(address: address, type: .addressPublic, rssi: Array(repeating: -67, count: count))
    }

    /// Exactly what the node's scheduler appends for a deadline.
    static func reached(_ d: EscalationBook.Deadline) -> EventBody {
        reached(d.resident, ladder: d.ladder, step: d.step, due: d.dueMicroseconds)
    }

    static func reached(_ resident: String, ladder: UInt32, step: LadderStep, due: UInt64) -> EventBody {
        var r = DeadlineReached()
        r.resident = resident
        r.ladder = ladder
        r.step = step
        r.dueUs = due
        return .deadlineReached(r)
    }

    static func attempt(_ entry: String, _ attempt: UInt32, delivered: Bool, error: String = "") -> EventBody {
        var a = OutboxAttempt()
        a.entry = entry
        a.attempt = attempt
        a.delivered = delivered
        a.notifier = "command"
        a.error = error
        return .outboxAttempt(a)
    }

    static func acknowledged(by: String = "button") -> EventBody {
        var a = AlarmAcknowledged()
        a.by = by
        return .alarmAcknowledged(a)
    }
}

extension Event {
    /// The DeadlineReached this event carries, if it is one.
    var reachedDeadline: DeadlineReached? {
        if case .deadlineReached(let d) = body { return d }
        return nil
    }
}

/// A deadline as plain data, to compare what the book asks for with what the scheduler appended.
struct PlainDeadline: Equatable, CustomStringConvertible {
    var resident: String
    var ladder: UInt32
    var step: LadderStep
    var due: UInt64

    init(_ resident: String, ladder: UInt32, step: LadderStep, due: UInt64) {
        self.resident = resident
        self.ladder = ladder
        self.step = step
        self.due = due
    }

    init(_ d: EscalationBook.Deadline) {
        self.init(d.resident, ladder: d.ladder, step: d.step, due: d.dueMicroseconds)
    }

    init?(_ event: Event) {
        guard let d = event.reachedDeadline else { return nil }
        self.init(d.resident, ladder: d.ladder, step: d.step, due: d.dueUs)
    }

    var description: String { "\(resident)#\(ladder) \(step) @\(due)" }
}

extension LadderHarness {
    func plainDeadline(_ id: String) -> PlainDeadline? { nextDeadline(id).map(PlainDeadline.init) }
}
