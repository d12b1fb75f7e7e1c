import VigilCalls
import VigilCore
import VigilEvents
import VigilSystem

/// Delivers outbox messages (texts to residents and contacts): one delivery at a time, through
/// the configured notifier command as a child process watched by its pidfd, killed at its
/// timeout, retried with back-off by the outbox projection. Every attempt is an event, so the
/// log says what was tried, when, and how it ended; an attempt cut short by a stop is not
/// recorded and runs again.
///
/// Without `notify.command` nothing can reach anyone: each attempt is recorded as failed
/// (notifier "none"), the entry stays pending and is retried with the outbox's back-off (a
/// command configured later delivers it), and the amber line says "no way to tell anyone".
final class Deliveries: NodeComponent {
    unowned let context: any NodeContext
    /// `notify:`: the command, its timeout.
    let notifier: NotifierConfiguration
    /// Signs the take links a webhook is given (`WebhookCallbackRule`); `http.public_url` is where
    /// they point (nil: no links).
    let callbackKey: CallbackKey
    let publicURL: String?
    /// Before the log is open too: messages of a call for help go out before the log is open.
    var runsBeforeLogOpen: Bool { true }
    private var attemptsInFlight = AttemptsInFlight()
    private var running: DeliveryAttempt?
    static let attemptTimer = Scheduler.Timer("outbox-attempt")
    static let timeoutTimer = Scheduler.Timer("notifier-timeout")
    static let noNotifierError = "no notify.command is configured: nobody can be told"

    init(context: any NodeContext, notifier: NotifierConfiguration, callbackKey: CallbackKey, publicURL: String?) {
        self.context = context
        self.notifier = notifier
        self.callbackKey = callbackKey
        self.publicURL = publicURL
    }

    func start() throws(NodeError) {
        context.scheduler.register(Self.attemptTimer) { [unowned self] in reconcile() }
        context.scheduler.register(Self.timeoutTimer) { [unowned self] in finish(timedOut: true) }
        if notifier.command == nil,
           context.projections.escalations.residents.values.contains(where: { !$0.contacts.isEmpty }) {
            context.logger.warning("no notify.command is configured: messages to residents and contacts cannot be delivered")
        }
    }

    func inFlight(_ entry: String) -> Bool { attemptsInFlight.contains(entry) }

    func applied(_ event: Event) { attemptsInFlight.settle(event) }

    func refused(_ event: Event) { attemptsInFlight.settle(event) }

    /// Starts the next due delivery, or arms the timer for it.
    func reconcile() {
        guard !context.stopping, running == nil, !context.isCarrying else { return }
        let now = context.clock.nowMicroseconds()
        let outbox = context.projections.outbox
        var earliest: UInt64?
        // Broadcast entries are settled by the radio (AirAlerts), the alarm centre's by the
        // centre's link; not delivered here.
        for entry in outbox.pending where entry.channel != .broadcast && entry.channel != .arc && !attemptsInFlight.contains(entry.id) {
            let due = outbox.nextAttemptMicroseconds(entry)
            if due <= now {
                deliver(entry)
                return
            }
            earliest = earliest.map { min($0, due) } ?? due
        }
        if let earliest {
            context.scheduler.schedule(Self.attemptTimer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: earliest))
        } else {
            context.scheduler.cancel(Self.attemptTimer)
        }
    }

    private func deliver(_ entry: Outbox.Entry) {
        let attempt = entry.attempts + 1
        // Who and what only at debug: residents' numbers and messages are not the journal's
        // (whoever administers the box reads it, and it is copied into bug reports). An entry's
        // id names its recipient (`call/ID/ROUND.TIER/+34…`): masked too.
        context.logger.notice("outbox message", metadata: [
            "entry": "\(PhoneNumberRedaction.redact(entry.id))", "recipients": "\(entry.recipients.count)", "attempt": "\(attempt)",
        ])
        context.logger.debug("outbox message's recipients and text", metadata: [
            "entry": "\(entry.id)", "to": "\(entry.recipients.joined(separator: ", "))", "text": "\(entry.text)",
        ])
        let notifier = self.notifier
        guard let command = notifier.command else {
            context.logger.warning("delivery impossible", metadata: ["entry": "\(PhoneNumberRedaction.redact(entry.id))", "error": "\(Self.noNotifierError)"])
            record(entry: entry.id, attempt: attempt, delivered: false, notifier: "none", error: Self.noNotifierError)
            return
        }
        let child: ChildProcess
        do {
            child = try ChildProcess(path: command, arguments: notifier.arguments,
                                     input: OutboxMessage(entry, attempt: attempt, nodeID: context.nodeID, take: takeLink(for: entry)).json)
        } catch {
            record(entry: entry.id, attempt: attempt, delivered: false, notifier: "command", error: "\(error)")
            return
        }
        running = DeliveryAttempt(entry: entry.id, attempt: attempt, child: child)
        guard context.watch(child.exitDescriptor, "the notifier", handler: { [unowned self] _ in finish(timedOut: false) }) else {
            child.kill()
            return // the node is failing; the entry stays pending
        }
        context.scheduler.schedule(Self.timeoutTimer, afterNanoseconds: notifier.timeoutMicroseconds &* 1_000)
    }

    /// The notifier exited (or timed out and was killed).
    private func finish(timedOut: Bool) {
        guard let running else { return }
        if timedOut {
            running.timedOut = true
            running.child.kill()
        }
        guard let status = running.child.reap() else { return } // the pidfd fires once it exits
        context.unwatch(running.child.exitDescriptor, "the notifier")
        context.scheduler.cancel(Self.timeoutTimer)
        self.running = nil
        let stderr = running.child.standardError()
        let error: String
        if running.timedOut {
            error = "timed out after \(HumanDuration.format(microseconds: notifier.timeoutMicroseconds))"
        } else if status != 0 {
            // The notifier's own words, numbers masked: the error goes to the journal, the log
            // and (with the attempt) to the hub.
            error = "exit status \(status)" + (stderr.isEmpty ? "" : ": \(PhoneNumberRedaction.redact(stderr))")
        } else {
            error = ""
        }
        if !error.isEmpty {
            context.logger.warning("delivery failed", metadata: ["entry": "\(PhoneNumberRedaction.redact(running.entry))", "error": "\(error)"])
        }
        record(entry: running.entry, attempt: running.attempt, delivered: error.isEmpty, notifier: "command", error: error)
        // The next message now, not once this attempt is durable: the entry just tried is held
        // (`attemptsInFlight`) until it is, so it cannot go twice, and 200 calls at once do not
        // wait for a commit between each two messages (mass_call_notify_s).
        reconcile()
    }

    /// Appends an attempt (from a delivery here, or the radio settling a broadcast).
    func record(entry: String, attempt: UInt32, delivered: Bool, notifier: String, error: String) {
        attemptsInFlight.record(on: context, entry: entry, attempt: attempt, delivered: delivered, notifier: notifier, error: error)
    }

    func stop() {
        guard let running else { return }
        // An interrupted attempt is not recorded; the entry stays pending and is retried.
        running.child.kill()
        context.unwatch(running.child.exitDescriptor, "the notifier")
        context.scheduler.cancel(Self.timeoutTimer)
        self.running = nil
    }

    /// A webhook told of a call nobody has taken gets the link that lets it take the call.
    private func takeLink(for entry: Outbox.Entry) -> OutboxMessage.TakeLink? {
        WebhookCallbackRule.link(for: entry, calls: context.projections.calls, key: callbackKey,
                                 publicURL: publicURL)
    }
}
