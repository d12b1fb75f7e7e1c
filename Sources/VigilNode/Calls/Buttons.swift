import VigilBoard
import VigilCore
import VigilEvents
import VigilSystem

/// The SOS button and residents' check-in buttons: every edge is logged, the gesture decoders
/// turn edges into presses, and presses into events. A long press raises this box's SOS, or,
/// while one is active, re-affirms it (`AlertReaffirmed`: its expiry renewed) — a frightened
/// person pressing again must never cancel their own call. Cancelling at the box takes a
/// deliberate hold (`alarms.cancel_hold`, 8 s) of a press that began with the SOS active, with
/// amber feedback ("keep holding to cancel") from the re-affirmation on. A short press silences
/// this box's own alarms, or, when none sounds, answers the calls for help heard from other
/// boxes. A resident's own button is their "I'm OK".
///
/// A button that stops reporting stops the node: a box whose SOS button is dead must not look
/// healthy (the service manager restarts it, which requests the lines again).
final class Buttons: NodeComponent {
    unowned let context: any NodeContext
    /// The board whose button lines this reads (the node drives its outputs).
    let board: any BoardAdapter
    /// `alarms.sos_expiry`: how long a raised or re-affirmed SOS stands; 0: until cancelled.
    let sosExpiryMicroseconds: UInt64
    /// A read of the button lines failed (counted in `vigil status`).
    private let readFailed: () -> Void
    /// Before the log is open too: the button is what a start must not hold up.
    var runsBeforeLogOpen: Bool { true }
    private var gestures: ButtonGestureDecoder
    /// One decoder per resident check-in button, by line.
    private var checkInGestures: [UInt32: ButtonGestureDecoder] = [:]
    private var edges: [ButtonEdge] = []
    private var reads = DeviceReads()
    /// The press in progress raised an SOS (it began with none active): holding it on must not
    /// cancel the call it just made.
    private var holdRaisedSOS = false
    static let gestureTimer = Scheduler.Timer("gesture")

    init(context: any NodeContext, board: any BoardAdapter, gestures settings: ButtonGestureDecoder.Settings,
         sosExpiryMicroseconds: UInt64, readFailed: @escaping () -> Void) {
        self.context = context
        self.board = board
        self.sosExpiryMicroseconds = sosExpiryMicroseconds
        self.readFailed = readFailed
        gestures = ButtonGestureDecoder(settings: settings)
        for line in board.profile.checkInButtons.values {
            checkInGestures[line.offset] = ButtonGestureDecoder(settings: settings)
        }
    }

    func open() throws(NodeError) {
        context.scheduler.register(Self.gestureTimer) { [unowned self] in tick() }
        do {
            try board.start()
        } catch {
            throw .board("\(error)")
        }
        guard context.watch(board.descriptor, "the button", handler: { [unowned self] events in readable(events) }) else {
            throw .board("the button's descriptor cannot be watched")
        }
    }

    private func readable(_ events: UInt32) {
        edges.removeAll(keepingCapacity: true)
        let board = self.board
        if let gone = reads.read(events: events, { try board.readReady(into: &edges) }, failed: { [context, readFailed] error in
            readFailed()
            context.logger.error("button read failed", metadata: ["error": "\(error)"])
        }) {
            buttonDied(gone)
        }
        for edge in edges { handle(edge) }
    }

    private func buttonDied(_ error: String) {
        context.unwatch(board.descriptor, "the button")
        context.fail(.board("the button stopped reporting: \(error)"))
    }

    private func handle(_ edge: ButtonEdge) {
        var input = ButtonInput()
        input.line = edge.line
        input.edge = edge.pressed ? .falling : .rising
        input.kernelTimestampNs = edge.kernelTimestampNanoseconds
        if edge.line == board.profile.button.offset {
            context.append(.buttonInput(input), time: nil)
            perform(gestures.edge(pressed: edge.pressed, atNanoseconds: edge.kernelTimestampNanoseconds))
        } else if let resident = board.profile.checkInResident(line: edge.line), var decoder = checkInGestures[edge.line] {
            input.role = "checkin:" + resident
            context.append(.buttonInput(input), time: nil)
            let decoded = decoder.edge(pressed: edge.pressed, atNanoseconds: edge.kernelTimestampNanoseconds)
            checkInGestures[edge.line] = decoder
            checkIn(resident, decoded)
        } else {
            input.role = "unassigned"
            context.append(.buttonInput(input), time: nil)
        }
    }

    /// A held button becomes a long press when its time comes, without waiting for the release.
    private func tick() {
        let now = context.monotonic.nowNanoseconds()
        for (line, var decoder) in checkInGestures {
            let decoded = decoder.tick(atNanoseconds: now)
            checkInGestures[line] = decoder
            if let resident = board.profile.checkInResident(line: line) { checkIn(resident, decoded) }
        }
        perform(gestures.tick(atNanoseconds: now))
    }

    /// A press of a resident's own button (short or long; not a glitch) is their "I'm OK".
    private func checkIn(_ resident: String, _ decoded: [ButtonGestureDecoder.Gesture]) {
        for gesture in decoded {
            switch gesture {
            case .shortPress, .longPress:
                var c = CheckIn()
                c.resident = resident
                c.source = .checkInButton
                context.append(.checkIn(c), time: nil)
            case .pressed, .released, .glitch, .cancelHold:
                break
            }
        }
        scheduleTick()
    }

    /// Acts on gestures. Every action is an event: the outputs follow once it is durable, so an
    /// SOS is in the log before any LED changes.
    private func perform(_ decoded: [ButtonGestureDecoder.Gesture]) {
        for gesture in decoded {
            switch gesture {
            case .pressed:
                holdRaisedSOS = false
            case .longPress:
                if let active = context.pending.ownActiveSOS(context.projections.alerts) {
                    reaffirmSOS(active)
                } else {
                    raiseSOS()
                    holdRaisedSOS = true
                }
            case .cancelHold:
                guard !holdRaisedSOS, let active = context.pending.ownActiveSOS(context.projections.alerts) else { break }
                var cancel = AlertCancelled()
                cancel.id = active
                cancel.by = context.nodeID
                cancel.reason = "cancelled by holding the button at the box"
                context.append(.alertCancelled(cancel), time: nil)
                context.logger.notice("SOS cancelled", metadata: ["alert": "\(active.text)"])
            case .shortPress:
                // First what sounds here is silenced; only a press when nothing sounds answers
                // the calls for help received from other boxes, so silencing a resident's alarm
                // never tells another box "help is on the way" by accident.
                // Only the box's own alarms (a resident's ladder, its own SOS) decide: the chirp
                // of a call heard from another box is answered, not merely silenced.
                // A public warning's tone is silenced by a press only when no call for help
                // waits for one (the press answers calls first); the warning stays on amber.
                let p = context.projections
                if !OutputPolicy.soundingOwnAlarms(p).isEmpty
                    || (p.alerts.awaitingAcknowledgement.isEmpty && !OutputPolicy.soundingWarnings(p).isEmpty) {
                    var ack = AlarmAcknowledged()
                    ack.by = "button"
                    context.append(.alarmAcknowledged(ack), time: nil)
                } else {
                    answerCallsForHelp()
                }
            case .released, .glitch:
                break
            }
        }
        scheduleTick()
    }

    /// The SOS still stands: logged, and its expiry renewed from now (the alert book extends it,
    /// the air carries the new expiry).
    private func reaffirmSOS(_ id: AlertID) {
        let now = context.clock.nowMicroseconds()
        let expiry = sosExpiryMicroseconds
        var again = AlertReaffirmed()
        again.id = id
        again.expiresAtUs = expiry == 0 ? 0 : now.addingReportingOverflow(expiry).partialValue
        again.by = "button"
        context.append(.alertReaffirmed(again), time: now)
        context.logger.notice("SOS re-affirmed", metadata: ["alert": "\(id.text)"])
    }

    private func raiseSOS() {
        let now = context.clock.nowMicroseconds()
        let expiry = sosExpiryMicroseconds
        var sos = Alert()
        sos.id = AlertID(origin: context.nodeID, counter: context.pending.nextAlertCounter(context.projections.alerts, origin: context.nodeID))
        sos.kind = .sos
        sos.severity = .critical
        sos.expiresAtUs = expiry == 0 ? 0 : now.addingReportingOverflow(expiry).partialValue
        sos.text = "SOS button pressed at the shelter box"
        context.append(.alertRaised(sos), time: now)
        context.logger.notice("SOS raised", metadata: ["alert": "\(sos.id.text)"])
    }

    /// Acknowledges, over the air, the calls for help received from other boxes that the blue
    /// LED shows unanswered now: the durable state, so only alerts someone could have seen. One
    /// event per alert, naming it, so the log says exactly what was answered.
    private func answerCallsForHelp() {
        for entry in context.projections.alerts.awaitingAcknowledgement {
            guard !context.pending.containsAcknowledgement(AlertID(origin: entry.origin, counter: entry.counter)) else { continue }
            context.append(.alertAcknowledged(CommandInterpreter.acknowledgementMadeHere(entry)), time: nil)
            context.logger.notice("call for help acknowledged", metadata: ["alert": "\(entry.idText)"])
        }
    }

    private func scheduleTick() {
        if let next = ([gestures.nextTick] + checkInGestures.values.map(\.nextTick)).compactMap({ $0 }).min() {
            context.scheduler.schedule(Self.gestureTimer, atNanoseconds: next)
        } else {
            context.scheduler.cancel(Self.gestureTimer)
        }
    }
}
