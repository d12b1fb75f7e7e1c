import VigilBoard
import VigilCore
import VigilEvents
import VigilGATT
import VigilRadio
import VigilSystem

/// Answers commands from outside the loop (the CLI over `DATA/control.sock` now, the HTTP API
/// later): status and pings at once; the simulated button; everything else through
/// `CommandInterpreter`, appended, and answered once durable.
final class ControlHandler: NodeComponent {
    /// What commands act on and read, given at construction (decision 0008): the components a
    /// command reaches, and what status and the interpreter read of the context.
    struct Targets {
        let connections: GATTLinks
        let chatCentral: ChatCentral
        let alarmCentre: AlarmCentreLink
        let notifierTest: NotifierSelfTest
        let uplink: HubUplink
        /// The simulated button is pressed through it.
        let board: any BoardAdapter
        /// Signs and checks the take links webhooks are given.
        let callbackKey: CallbackKey
        /// Whether the shelter key is there (`CommandInterpreter` needs it for alerts on the air).
        let hasShelterKey: () -> Bool
        /// `vigil status`'s answer.
        let liveStatus: () -> LiveStatus
        /// Set while a start checks and opens the card's log.
        let opening: () -> LogOpening?
    }

    /// What the handler needs of the configuration.
    struct Settings {
        /// Where `control.sock` is made.
        var dataDirectory: String
        /// Whether `arc:` names an alarm centre (a call test goes there too).
        var alarmCentreConfigured: Bool
        /// `radio.alerts.max_lifetime`.
        var maxAlertLifetimeMicroseconds: UInt64
    }

    unowned let context: any NodeContext
    let settings: Settings
    let targets: Targets
    /// Before the log is open too: presses, takes and status from the first second.
    var runsBeforeLogOpen: Bool { true }
    private var server: ControlServer?
    /// Answers owed to `NodeHandle.perform` callers, once their events are durable.
    private var durableWaiters: [(sequence: UInt64, alert: String?, answer: @Sendable (NodeReply) -> Void)] = []
    /// Webhook callbacks taken and refused this run.
    private(set) var callbacks = WebhookCallbackStatus()

    init(context: any NodeContext, settings: Settings, targets: Targets) {
        self.context = context
        self.settings = settings
        self.targets = targets
    }

    func open() throws(NodeError) {
        // The control socket is a convenience (CLI status, writes, the simulated button): if it
        // cannot be made (a data path longer than a socket address allows), the node runs
        // without it rather than not at all.
        do {
            let logger = context.logger
            server = try ControlServer(path: settings.dataDirectory + "/control.sock", loop: context, clock: context.monotonic,
                                       onRefused: { user, total in
                                           // The first, then every hundredth: a local flood must not fill the journal.
                                           guard total == 1 || total % 100 == 0 else { return }
                                           logger.warning("the control socket refused a process of another user", metadata: [
                                               "user": "\(user.map(String.init) ?? "unknown")", "refused_since_start": "\(total)",
                                           ])
                                       }) { [unowned self] command in answer(command) }
        } catch {
            context.logger.warning("no control socket: the CLI cannot reach this node (it still reads its log)",
                                metadata: ["error": "\(error)"])
        }
    }

    func settle(durableThrough: UInt64, refused: Set<UInt64>, unlogged: Bool) {
        server?.settle(durableThrough: durableThrough, refused: refused, unlogged: unlogged)
        guard !durableWaiters.isEmpty else { return }
        durableWaiters.removeAll { waiting in
            guard waiting.sequence <= durableThrough else { return false }
            var reply = NodeReply.durable(waiting.sequence, alert: waiting.alert)
            if unlogged { reply.unlogged = true }
            waiting.answer(refused.contains(waiting.sequence) ? .refused(.logRefused, "the log refused the event") : reply)
            return true
        }
    }

    /// `answer` gets the reply to `command` on the loop: at once, or once its event is durable.
    func perform(_ command: NodeCommand, answer: @escaping @Sendable (NodeReply) -> Void) {
        switch self.answer(command) {
        case .now(let reply): answer(reply)
        case .whenDurable(let sequence, let alert): durableWaiters.append((sequence, alert, answer))
        }
    }

    func close() {
        server?.close()
        server = nil
    }

    func stop() {
        // The node stops once everything appended is durable, so nobody should be left; anyone
        // who is hears that the node is gone rather than nothing.
        for w in durableWaiters { w.answer(.refused(.unavailable, "the node stopped")) }
        durableWaiters.removeAll()
    }

    /// What the state says about `command` now; commands that become events are answered once
    /// the event is durable.
    func answer(_ command: NodeCommand) -> ControlServer.Answer {
        if let opening = targets.opening(), !Self.worksBeforeLogOpen(command) {
            let seconds = Double(context.monotonic.nowNanoseconds() &- opening.startedNanoseconds) / 1e9
            return .now(.refused(.unavailable, "the log is being checked and opened after an unclean stop (\(String(format: "%.0f", seconds)) s so far); "
                + "until it is, the box takes presses, alerts and takes only: try again in a moment"))
        }
        let answer = decide(command)
        // Before the open a call or alert from before the restart is unknown: "try again", not
        // "no such call".
        if targets.opening() != nil, case .now(let reply) = answer, reply.refusal == .conflict || reply.refusal == .invalid {
            switch command {
            case .cancelAlert, .acknowledgeAlert, .takeCall, .takeCallByCallback, .decidePhoneCall:
                var retry = reply
                retry.refusal = .unavailable
                retry.error = (reply.error ?? "") + " (the log is still being opened after an unclean stop: a call or alert from before it is not known yet; try again in a moment)"
                return .now(retry)
            default:
                break
            }
        }
        return answer
    }

    private func decide(_ command: NodeCommand) -> ControlServer.Answer {
        switch command {
        case .ping:
            return .now(.done)
        case .status:
            var reply = NodeReply.done
            reply.status = targets.liveStatus()
            return .now(reply)
        case .press(let press):
            return .now(self.press(press))
        case .chatSend(let request):
            guard !context.stopping else { return .now(.refused(.unavailable, "the node is stopping")) }
            guard let peer = LEAddress(request.peer)?.value else { return .now(.refused(.invalid, "a device is AA:BB:CC:DD:EE:FF, with /random for a random address")) }
            guard !request.text.isEmpty, request.text.utf8.count <= BoxServices.maximumChatBytes else {
                return .now(.refused(.invalid, "a chat message is 1 to \(BoxServices.maximumChatBytes) bytes"))
            }
            switch targets.connections.sendChat(to: peer, text: request.text) {
            case .notConnected: return .now(.refused(.conflict, "\(request.peer) is not connected"))
            case .sent(let sequence):
                guard let sequence else { return .now(.refused(.logRefused, "the log refused the event")) }
                return .whenDurable(sequence, alert: nil)
            case .notDelivered(_, let why):
                // Logged as not delivered; the sender is told it did not go out.
                return .now(.refused(.unavailable, "not delivered: \(why)"))
            }
        case .chatConnect(let request):
            guard !context.stopping else { return .now(.refused(.unavailable, "the node is stopping")) }
            guard let peer = LEAddress(request.peer) else { return .now(.refused(.invalid, "a device is AA:BB:CC:DD:EE:FF, with /random for a random address")) }
            switch targets.chatCentral.connect(to: peer) {
            case .connecting, .alreadyLinked: return .now(.done)
            case .failed(let why): return .now(.refused(.unavailable, why))
            }
        case .chatDisconnect(let request):
            guard let peer = LEAddress(request.peer) else { return .now(.refused(.invalid, "a device is AA:BB:CC:DD:EE:FF")) }
            return .now(targets.chatCentral.disconnect(peer.value) ? .done : .refused(.conflict, "the box has no chat link to \(request.peer)"))
        case .testCalls:
            guard !context.stopping else { return .now(.refused(.unavailable, "the node is stopping")) }
            let arc = settings.alarmCentreConfigured, messages = targets.notifierTest.configured
            guard arc || messages else {
                return .now(.refused(.conflict, "nothing to test: no alarm receiving centre (arc:) and no calls.test_to"))
            }
            // Each path its own test; one already on its way is its own answer.
            let arcStarted = arc && targets.alarmCentre.testNow(), messagesStarted = messages && targets.notifierTest.testNow()
            guard arcStarted || messagesStarted else {
                return .now(.refused(.conflict, "a test is on its way already, or a report to the alarm centre is waiting to be retried: its outcome is the test (vigil status)"))
            }
            return .now(.done)
        case .takeCallByCallback(let request):
            guard !context.stopping else { return .now(.refused(.unavailable, "the node is stopping")) }
            let rule = WebhookCallbackRule(interpreter: interpreter, calls: context.projections.calls, key: targets.callbackKey)
            switch rule.decide(request) {
            case .refused(let why, let message):
                callbacks.refused(message, at: context.clock.nowMicroseconds())
                if callbacks.worthLogging {
                    context.logger.notice("webhook callback refused", metadata: ["why": "\(message)", "refused": "\(callbacks.refused)"])
                }
                return .now(.refused(why, message))
            case .event(let body, let alert):
                guard let sequence = context.append(body, time: nil) else { return .now(.refused(.logRefused, "the log refused the event")) }
                callbacks.taken += 1
                context.logger.notice("call taken by webhook callback", metadata: ["call": "\(request.call.prefix(80))"])
                return .whenDurable(sequence, alert: alert)
            }
        case .decidePhoneCall(let request):
            guard !context.stopping else { return .now(.refused(.unavailable, "the node is stopping")) }
            switch interpreter.decidePhoneCall(request) {
            case .refused(let why, let message):
                return .now(.refused(why, message))
            case .decided(let raised, let decision, let alert):
                // The alert first: the decision names it, and a decision the log refused after it
                // leaves a raised alert and an open call staff can dismiss, never the reverse.
                if let raised {
                    guard context.append(raised, time: nil) != nil else { return .now(.refused(.logRefused, "the log refused the event")) }
                    context.logger.notice("a phone's call was confirmed and raised", metadata: ["call": "\(decision.call.prefix(80))", "alert": "\(alert ?? "")"])
                }
                guard let sequence = context.append(.phoneCallDecided(decision), time: nil) else { return .now(.refused(.logRefused, "the log refused the event")) }
                return .whenDurable(sequence, alert: alert)
            }
        case .reloadHubLinks:
            guard !context.stopping else { return .now(.refused(.unavailable, "the node is stopping")) }
            do {
                try targets.uplink.reload()
                return .now(.done)
            } catch {
                return .now(.refused(.invalid, "\(error)"))
            }
        default:
            guard !context.stopping else { return .now(.refused(.unavailable, "the node is stopping")) }
            switch interpreter.interpret(command) {
            case .refused(let why, let message):
                return .now(.refused(why, message))
            case .event(let body, let alert):
                guard let sequence = context.append(body, time: nil) else { return .now(.refused(.logRefused, "the log refused the event")) }
                if case .alertRaised(let a) = body {
                    context.logger.notice("alert raised", metadata: ["alert": "\(a.id.text)", "kind": "\(a.kind)"])
                }
                return .whenDurable(sequence, alert: alert)
            }
        }
    }

    /// What a box answers while its log is being checked and opened (`LogOpening`): what a call
    /// for help needs. The rest reads or changes history the box does not hold yet (residents,
    /// exposure, the hub, chat, hazards) and waits for the open.
    static func worksBeforeLogOpen(_ command: NodeCommand) -> Bool {
        switch command {
        case .ping, .status, .press, .silenceAlarms, .raiseAlert, .cancelAlert, .acknowledgeAlert, .takeCall, .takeCallByCallback, .testCalls,
             .decidePhoneCall:
            true
        case .checkIn, .enrolResident, .updateResident, .removeResident, .recordExposure, .recordKeysPublished, .reloadHubLinks,
             .chatSend, .chatOpen, .chatConnect, .chatDisconnect, .reportHazard, .importWarning:
            false
        }
    }

    var interpreter: CommandInterpreter {
        CommandInterpreter(context: .init(
            projections: context.projections, pending: context.pending, nodeID: context.nodeID,
            nowMicroseconds: context.clock.nowMicroseconds(), hasShelterKey: targets.hasShelterKey(),
            maxAlertLifetimeMicroseconds: settings.maxAlertLifetimeMicroseconds))
    }

    private func press(_ press: ButtonPress) -> NodeReply {
        guard let sim = targets.board as? SimulatedBoard else {
            return .refused(.unavailable, "this node's board is not simulated")
        }
        guard press.holdMicroseconds > 0, press.holdMicroseconds <= 60_000_000 else {
            return .refused(.invalid, "a press is held for up to 60 s")
        }
        var line: UInt32?
        if let resident = press.resident {
            guard let l = targets.board.profile.checkInButtons[resident]?.offset else {
                return .refused(.conflict, "the board has no check-in button for that resident")
            }
            line = l
        }
        do {
            try sim.press(holdMicroseconds: press.holdMicroseconds, bounces: min(max(press.bounces, 0), 50), line: line)
            return .done
        } catch {
            return .refused(.unavailable, "\(error)")
        }
    }
}
