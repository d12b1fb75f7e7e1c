import VigilAlarmCentre
import VigilCore
import VigilEvents
import VigilSystem

/// The link to the alarm receiving centre (`arc:`): sends the outbox's `.arc` entries — calls
/// for help, their restores, the box's troubles — as Contact ID events over SIA DC-09 TCP, one at
/// a time and strictly in order, and a periodic test report when nothing else went for
/// `calls.test_every`. Non-blocking sockets on the loop: a receiver that accepts and never answers
/// costs a timer, not the loop.
///
/// The centre's ACK settles an entry as an `OutboxAttempt` (notifier "arc <receiver>"): "received
/// by the centre", never "taken" — a person takes a call (`AlertTaken`). An attempt every
/// receiver failed is recorded as failed, with what each did, and retried with back-off; a stop
/// or a kill -9 before the ACK leaves the entry pending, and the next start sends it again with
/// the same DC-09 sequence number (the entry's own, from the log), so the centre can tell the
/// repeat. Reports take the numbers 0001-4999 in turn; test reports 5000-9999, so neither reuses
/// the other's.
final class AlarmCentreLink: NodeComponent {
    unowned let context: any NodeContext
    /// `arc:`; nil: no centre (entries for it are recorded as failed).
    let settings: AlarmCentreSettings?
    /// Before the log is open too: reports to the centre go out before the log is open.
    var runsBeforeLogOpen: Bool { true }
    private var exchange: Exchange?
    private var attemptsInFlight = AttemptsInFlight()
    private(set) var status: AlarmCentreStatus
    /// When the last exchange ended with an ACK, or the link started (wall clock): the test is
    /// due `testEvery` after it.
    private var lastContactMicroseconds: UInt64 = 0
    private var testSequence: DC09Sequence
    /// What the last NAK's receiver time said of this box's clock (seconds, bounded by
    /// `maximumClockCorrectionSeconds`): added to the time of the one resend after a NAK.
    private var clockCorrectionSeconds: Int64 = 0
    static let maximumClockCorrectionSeconds: Int64 = 3_600
    static let attemptTimer = Scheduler.Timer("arc-attempt")
    static let exchangeTimer = Scheduler.Timer("arc-exchange")
    static let noCentreError = "no alarm receiving centre is configured (arc:)"
    /// The first test report goes this long after the start (the path proved soon after a boot).
    static let firstTestAfterMicroseconds: UInt64 = 60_000_000

    /// One report on its way: to which receiver, over which connection, answered by what.
    private final class Exchange {
        /// The outbox entry; nil for a periodic test or a report the log cannot hold (`unlogged`).
        let entry: String?
        /// A trouble report made while the log takes no writes: not an outbox entry.
        var unlogged = false
        let attempt: UInt32
        let report: AlarmReport
        let sequence: DC09Sequence
        var plan: AlarmCentreAttempt
        var socket: Socket?
        var connecting = false
        var expectation: DC09Expectation?
        var splitter = DC09FrameSplitter()
        /// The time (UTC seconds) of the frame last sent.
        var sentSeconds: Int64 = 0

        init(entry: String?, attempt: UInt32, report: AlarmReport, sequence: DC09Sequence, receivers: [String]) {
            (self.entry, self.attempt, self.report, self.sequence) = (entry, attempt, report, sequence)
            plan = AlarmCentreAttempt(receivers: receivers)
        }
    }

    private final class Socket {
        let descriptor: FileDescriptor
        init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }
    }

    init(context: any NodeContext, settings: AlarmCentreSettings?) {
        self.context = context
        self.settings = settings
        status = AlarmCentreStatus(receivers: settings?.receivers.map(\.description) ?? [])
        status.encrypted = settings?.key != nil
        var generator = SystemRandomNumberGenerator()
        testSequence = DC09Sequence(5_000 + Int(generator.next() % 5_000)) ?? .first
    }

    func start() throws(NodeError) {
        context.scheduler.register(Self.attemptTimer) { [unowned self] in reconcile() }
        context.scheduler.register(Self.exchangeTimer) { [unowned self] in timedOut() }
        started = true
        if let settings, settings.key == nil {
            // In the clear, anyone on the path can read the account and forge an ACK.
            context.logger.warning("the alarm centre's reports go unencrypted: set arc.key (the centre's AES key)")
        }
        if let settings, settings.testEveryMicroseconds > 0 {
            let now = context.clock.nowMicroseconds()
            // So the first test is due `firstTestAfter` from now.
            lastContactMicroseconds = now &+ Self.firstTestAfterMicroseconds &- min(settings.testEveryMicroseconds, now &+ Self.firstTestAfterMicroseconds)
        }
    }

    /// "Running from memory" (Contact ID 300) waiting to go, and when it may be tried again
    /// after a failed attempt. Not an outbox entry: the log that would hold one takes no writes.
    private var unloggedTrouble: AlarmReport?
    private var unloggedRetryAtMicroseconds: UInt64 = 0
    private var started = false

    /// The log stopped taking writes: the centre hears it (once per run), so a box whose card
    /// died is seen before anyone needs it. Sent after any call for help waiting, before a test.
    func reportRunningFromMemory() {
        guard settings != nil, unloggedTrouble == nil, !status.runningFromMemoryReported else { return }
        unloggedTrouble = .raised(.runningFromMemory)
        // A card read-only from the start fails the node's first append, before `start`.
        if started { reconcile() }
    }

    func applied(_ event: Event) { attemptsInFlight.settle(event) }

    func refused(_ event: Event) { attemptsInFlight.settle(event) }

    /// Starts the next report due: the oldest pending `.arc` entry (nothing overtakes it, so the
    /// centre hears each call's alarm before its restore), else a test report when one is due.
    func reconcile() {
        guard !context.stopping, exchange == nil, !context.isCarrying else { return }
        let now = context.clock.nowMicroseconds()
        let outbox = context.projections.outbox
        if let head = outbox.pending.first(where: { $0.channel == .arc }) {
            guard !attemptsInFlight.contains(head.id) else { return }
            let retry = Backoff(base: outbox.retryBaseMicroseconds, max: settings?.retryMaxMicroseconds ?? outbox.retryMaxMicroseconds)
            let due = head.attempts == 0 ? head.createdMicroseconds : head.lastAttemptMicroseconds &+ retry.delay(afterFailures: head.attempts)
            // A wall clock stepped back must not push a call for help out by the step.
            if due <= now { begin(head) } else { schedule(atWall: min(due, now &+ retry.max)) }
            return
        }
        if let trouble = unloggedTrouble {
            if unloggedRetryAtMicroseconds <= now { beginUnlogged(trouble) } else { schedule(atWall: unloggedRetryAtMicroseconds) }
            return
        }
        guard let settings, settings.testEveryMicroseconds > 0 else {
            context.scheduler.cancel(Self.attemptTimer)
            return
        }
        let due = lastContactMicroseconds &+ settings.testEveryMicroseconds
        if due <= now { beginTest() } else { schedule(atWall: min(due, now &+ settings.testEveryMicroseconds)) }
    }

    /// A test report now (`vigil calls test`, or its interval): false when none is configured, a
    /// report is on its way or one waits to be retried (nothing goes before a call for help).
    @discardableResult
    func testNow() -> Bool {
        guard settings != nil, exchange == nil, !context.stopping,
              !context.projections.outbox.pending.contains(where: { $0.channel == .arc }) else { return false }
        beginTest()
        return true
    }

    private func schedule(atWall due: UInt64) {
        context.scheduler.schedule(Self.attemptTimer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: due))
    }

    // MARK: Starting a report

    private func begin(_ entry: Outbox.Entry) {
        let attempt = entry.attempts + 1
        guard let settings else {
            record(entry: entry.id, attempt: attempt, delivered: false, notifier: "none", error: Self.noCentreError)
            return
        }
        guard let alarm = entry.alarm else {
            record(entry: entry.id, attempt: attempt, delivered: false, notifier: "arc", error: "the entry names no report for the centre")
            return
        }
        let report = Self.report(alarm)
        context.logger.notice("report to the alarm centre", metadata: [
            "entry": "\(entry.id)", "report": "\(alarm.text)", "contact-id": "\(report.contactID(partition: settings.partition))",
            "attempt": "\(attempt)",
        ])
        let ex = Exchange(entry: entry.id, attempt: attempt, report: report, sequence: Self.sequence(forReport: entry.alarmNumber ?? 0),
                          receivers: settings.receivers.map(\.description))
        exchange = ex
        follow(ex.plan.first, ex)
    }

    private func beginTest() {
        guard let settings else { return }
        let ex = Exchange(entry: nil, attempt: 1, report: .periodicTest, sequence: testSequence,
                          receivers: settings.receivers.map(\.description))
        testSequence = testSequence.next()
        exchange = ex
        follow(ex.plan.first, ex)
    }

    private func beginUnlogged(_ report: AlarmReport) {
        guard let settings else { return }
        context.logger.notice("report to the alarm centre", metadata: ["report": "running from memory (not in the log)"])
        let ex = Exchange(entry: nil, attempt: 1, report: report, sequence: testSequence, receivers: settings.receivers.map(\.description))
        ex.unlogged = true
        testSequence = testSequence.next()
        exchange = ex
        follow(ex.plan.first, ex)
    }

    /// The Contact ID report for an outbox entry's signal (VigilAlarmCentre's code table).
    /// Numbers go into Contact ID's three digits as 1...999 (000 is the box's own), in turn.
    static func report(_ alarm: AlarmSignal) -> AlarmReport {
        let number = alarm.number == 0 ? 0 : Int(truncatingIfNeeded: (alarm.number - 1) % 999 + 1)
        let condition: AlarmCondition = switch alarm.condition {
        case .sos: .sos(call: number)
        case .medical: .medical(resident: number)
        case .missedCheckIn: .missedCheckIn(resident: number)
        case .logDamaged: .eventLogDamaged
        case .radioLost: .radioLost
        }
        return alarm.restore ? .cleared(condition) : .raised(condition)
    }

    /// The DC-09 sequence number of the `number`-th report (`Outbox.Entry.alarmNumber`):
    /// 0001...4999 in turn, the same on every attempt and after a restart.
    static func sequence(forReport number: UInt64) -> DC09Sequence {
        DC09Sequence(Int((number &- 1) % 4_999) + 1) ?? .first
    }

    // MARK: The exchange

    private func follow(_ next: AlarmCentreAttempt.Next, _ ex: Exchange) {
        switch next {
        case .connect(let index):
            connect(ex, to: index)
        case .resend:
            // Whatever else came with the NAK answers the frame before, not the resend.
            ex.splitter = DC09FrameSplitter()
            send(ex)
        case .delivered(let index):
            finish(ex, delivered: true, receiver: index, error: "")
        case .failed(let why):
            finish(ex, delivered: false, receiver: nil, error: why)
        }
    }

    private func connect(_ ex: Exchange, to index: Int) {
        guard let settings, index < settings.receivers.count else { return }
        let receiver = settings.receivers[index]
        let descriptor: FileDescriptor
        do {
            descriptor = try TCPStream.connect(address: receiver.address, port: receiver.port)
        } catch {
            outcome(.connectFailed("\(error.errno)"), ex)
            return
        }
        let socket = Socket(descriptor)
        ex.socket = socket
        ex.connecting = true
        ex.splitter = DC09FrameSplitter()
        guard context.watch(socket.descriptor.rawValue, "the alarm centre", events: Epoll.writable, handler: { [unowned self] events in
            ready(events)
        }) else {
            ex.socket = nil
            outcome(.connectFailed("the socket cannot be watched"), ex)
            return
        }
        context.scheduler.schedule(Self.exchangeTimer, afterNanoseconds: settings.connectTimeoutMicroseconds &* 1_000)
    }

    private func ready(_ events: UInt32) {
        guard let ex = exchange, let socket = ex.socket else { return }
        if ex.connecting {
            if let error = TCPStream.connectionError(socket.descriptor) {
                outcome(.connectFailed("\(error.errno)"), ex)
                return
            }
            ex.connecting = false
            guard context.changeWatch(socket.descriptor.rawValue, "the alarm centre", events: Epoll.readable) else {
                outcome(.connectFailed("the socket cannot be watched"), ex)
                return
            }
            send(ex)
            return
        }
        readReplies(ex, socket)
    }

    private func send(_ ex: Exchange) {
        guard let settings, let socket = ex.socket else { return }
        var pad = [UInt8](repeating: 0, count: DC09Frame.maximumPadCount)
        var generator = SystemRandomNumberGenerator()
        for i in pad.indices { pad[i] = generator.next() }
        let seconds = Int64(clamping: context.clock.nowMicroseconds() / 1_000_000) &+ clockCorrectionSeconds
        ex.sentSeconds = seconds
        do {
            let frame = try DC09Frame.encode(ex.report, partition: settings.partition, identity: settings.identity,
                                             sequence: ex.sequence, key: settings.key, utcSeconds: seconds, pad: pad)
            try socket.descriptor.sendAll(frame.bytes)
            ex.expectation = frame.expectation
        } catch let error as SystemError {
            outcome(.sendFailed("\(error.errno)"), ex)
            return
        } catch {
            outcome(.sendFailed("\(error)"), ex)
            return
        }
        context.scheduler.schedule(Self.exchangeTimer, afterNanoseconds: settings.replyTimeoutMicroseconds &* 1_000)
    }

    private func readReplies(_ ex: Exchange, _ socket: Socket) {
        var buffer = [UInt8](repeating: 0, count: DC09Reply.maximumLength)
        let read: Int?
        do {
            read = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in try socket.descriptor.read(into: raw) }
        } catch {
            outcome(.closed, ex)
            return
        }
        guard let count = read else { return } // nothing yet
        guard count > 0 else {
            outcome(.closed, ex)
            return
        }
        ex.splitter.append(buffer.prefix(count))
        guard let expectation = ex.expectation else { return } // bytes before a frame was sent
        while let frame = ex.splitter.nextFrame() {
            do {
                switch try DC09Reply.parse(frame, expecting: expectation) {
                case .acknowledged: outcome(.acknowledged, ex)
                case .negative(let receiverTime):
                    // Most NAKs say the frame's time is outside the centre's window: its own time
                    // (not authenticated, so only within an hour) corrects the resend's.
                    if let receiverTime {
                        let skew = receiverTime.utcSeconds &- ex.sentSeconds &+ clockCorrectionSeconds
                        clockCorrectionSeconds = max(-Self.maximumClockCorrectionSeconds, min(Self.maximumClockCorrectionSeconds, skew))
                        status.clockSkewSeconds = skew
                    }
                    outcome(.negative, ex)
                case .notUnderstood: outcome(.notUnderstood, ex)
                }
            } catch {
                outcome(.garbage("\(error)"), ex)
            }
            return // one reply answers a frame; a resend waits for its own
        }
        if ex.splitter.droppedBytes > UInt64(4 * DC09Reply.maximumLength) {
            outcome(.garbage("too many bytes without a frame"), ex)
        }
    }

    private func timedOut() {
        guard let ex = exchange else { return }
        outcome(ex.connecting || ex.socket == nil ? .connectTimedOut : .silent, ex)
    }

    /// What the current receiver did: counted, and the attempt goes on as the plan says.
    private func outcome(_ outcome: AlarmCentreAttempt.Outcome, _ ex: Exchange) {
        context.scheduler.cancel(Self.exchangeTimer)
        status.count(outcome)
        if outcome != .acknowledged, ex.plan.current < ex.plan.receivers.count {
            context.logger.warning("alarm centre receiver failed", metadata: [
                "receiver": "\(ex.plan.receivers[ex.plan.current])", "outcome": "\(outcome.text)",
                "report": "\(ex.entry ?? "test")",
            ])
        }
        let next = ex.plan.record(outcome)
        if next != .resend { close(ex) }
        follow(next, ex)
    }

    private func close(_ ex: Exchange) {
        guard let socket = ex.socket else { return }
        context.unwatch(socket.descriptor.rawValue, "the alarm centre")
        ex.socket = nil // closes it
        ex.expectation = nil
        ex.connecting = false
    }

    private func finish(_ ex: Exchange, delivered: Bool, receiver: Int?, error: String) {
        close(ex)
        context.scheduler.cancel(Self.exchangeTimer)
        exchange = nil
        let now = context.clock.nowMicroseconds()
        let name = receiver.map { ex.plan.receivers[$0] }
        let hadProblem = status.problem != nil
        status.finished(delivered: delivered, receiver: name, error: error, test: ex.entry == nil && !ex.unlogged, at: now)
        // "Cannot call for help" on amber comes and goes with the link's state, not an event.
        if hadProblem != (status.problem != nil) { context.outputsMayHaveChanged() }
        if delivered { lastContactMicroseconds = now }
        if ex.unlogged {
            if delivered {
                unloggedTrouble = nil
                status.runningFromMemoryReported = true
            } else if let settings {
                unloggedRetryAtMicroseconds = now &+ settings.retryMaxMicroseconds
            }
            reconcile()
        } else if let entry = ex.entry {
            record(entry: entry, attempt: ex.attempt, delivered: delivered, notifier: name.map { "arc \($0)" } ?? "arc", error: error)
        } else {
            if !delivered, let settings {
                // A failed test is tried again after `retry_max`, not a whole interval later: the
                // amber line clears soon after the path is back.
                lastContactMicroseconds = now &+ settings.retryMaxMicroseconds &- min(settings.testEveryMicroseconds, now &+ settings.retryMaxMicroseconds)
            }
            reconcile()
        }
    }

    private func record(entry: String, attempt: UInt32, delivered: Bool, notifier: String, error: String) {
        attemptsInFlight.record(on: context, entry: entry, attempt: attempt, delivered: delivered, notifier: notifier, error: error)
    }

    func stop() {
        guard let ex = exchange else { return }
        // An interrupted report is not recorded: the entry stays pending and goes again.
        close(ex)
        context.scheduler.cancel(Self.exchangeTimer)
        context.scheduler.cancel(Self.attemptTimer)
        exchange = nil
    }
}
