import VigilCalls
import VigilCore
import VigilSystem

/// The box proves it can reach people (issue 27, item 6): every `calls.test_every`, a minute
/// after each start and on `vigil calls test`, a test message goes through the notifier to each
/// of `calls.test_to` (a phone number for the SMS path, a webhook for the webhook path), one at a
/// time. A recipient the notifier does not deliver to within `notify.timeout` fails the test:
/// amber says "cannot call for help: …" (with `vigil why`, status, the page and `/metrics`)
/// until a test passes. A failed test is tried again after `retryAfterFailure`.
///
/// Tests are not events (as the alarm centre's test reports are not): they say what the path can
/// do now, not what happened to anyone, and a box that tests daily must not grow its log for it.
/// The journal has each outcome; the notifier's own ledger has each test message's id.
final class NotifierSelfTest: NodeComponent {
    unowned let context: any NodeContext
    /// What the test needs of the configuration.
    struct Settings {
        /// `calls.test_to`.
        var recipients: [String]
        /// `calls.test_every` (0: only at start and on demand).
        var everyMicroseconds: UInt64
        var notifier: NotifierConfiguration
        /// Named in the test message.
        var siteName: String
    }
    private let settings: Settings
    /// Before the log is open too: the call path's own test.
    var runsBeforeLogOpen: Bool { true }
    private(set) var status: NotifierTestStatus
    /// Recipients the running test has still to reach, and what failed so far.
    private var queue: [String] = []
    private var failures: [String] = []
    private var running: (recipient: String, child: ChildProcess, timedOut: Bool)?
    private var startedMicroseconds: UInt64 = 0
    static let dueTimer = Scheduler.Timer("notifier-test-due")
    static let timeoutTimer = Scheduler.Timer("notifier-test-timeout")
    /// The first test goes this long after a start (the path proved soon after a boot).
    static let firstTestAfterMicroseconds: UInt64 = 60_000_000
    static let retryAfterFailureMicroseconds: UInt64 = 300_000_000

    init(context: any NodeContext, settings: Settings) {
        self.context = context
        self.settings = settings
        status = NotifierTestStatus(recipients: settings.recipients)
    }

    var configured: Bool { !status.recipients.isEmpty }

    func start() throws(NodeError) {
        context.scheduler.register(Self.dueTimer) { [unowned self] in _ = testNow() }
        context.scheduler.register(Self.timeoutTimer) { [unowned self] in finishRecipient(timedOut: true) }
        if configured && settings.everyMicroseconds > 0 { schedule(afterWallMicroseconds: Self.firstTestAfterMicroseconds) }
    }

    /// A test now: false when none is configured or one is running.
    func testNow() -> Bool {
        guard configured, running == nil, queue.isEmpty, !context.stopping else { return false }
        context.scheduler.cancel(Self.dueTimer)
        startedMicroseconds = context.clock.nowMicroseconds()
        queue = status.recipients
        failures = []
        next()
        return true
    }

    private func next() {
        guard !queue.isEmpty else { return finishTest() }
        let recipient = queue.removeFirst()
        let notifier = settings.notifier
        guard let command = notifier.command else {
            failures.append("\(recipient): \(Deliveries.noNotifierError)")
            return next()
        }
        let message = OutboxMessage(testTo: recipient, id: "test/\(startedMicroseconds / 1_000_000)/\(recipient)",
                                    text: Self.text(site: settings.siteName, nodeID: context.nodeID),
                                    nodeID: context.nodeID, createdMicroseconds: startedMicroseconds)
        let child: ChildProcess
        do {
            child = try ChildProcess(path: command, arguments: notifier.arguments, input: message.json)
        } catch {
            failures.append("\(recipient): \(error)")
            return next()
        }
        running = (recipient, child, false)
        guard context.watch(child.exitDescriptor, "the notifier's test", handler: { [unowned self] _ in finishRecipient(timedOut: false) }) else {
            child.kill()
            running = nil
            queue = []
            return // the node is failing
        }
        context.scheduler.schedule(Self.timeoutTimer, afterNanoseconds: notifier.timeoutMicroseconds &* 1_000)
    }

    private func finishRecipient(timedOut: Bool) {
        guard var current = running else { return }
        if timedOut {
            current.timedOut = true
            running = current
            current.child.kill()
        }
        guard let exit = current.child.reap() else { return } // the pidfd fires once it exits
        context.unwatch(current.child.exitDescriptor, "the notifier's test")
        context.scheduler.cancel(Self.timeoutTimer)
        running = nil
        if current.timedOut {
            failures.append("\(current.recipient): timed out after \(HumanDuration.format(microseconds: settings.notifier.timeoutMicroseconds))")
        } else if exit != 0 {
            let stderr = current.child.standardError(limit: 300)
            failures.append("\(current.recipient): exit status \(exit)" + (stderr.isEmpty ? "" : ": \(stderr)"))
        }
        next()
    }

    private func finishTest() {
        let now = context.clock.nowMicroseconds()
        let passed = failures.isEmpty
        status.finished(passed: passed, problem: failures.joined(separator: "; "), at: now)
        if passed {
            context.logger.info("self-test: the test messages went out", metadata: ["recipients": "\(status.recipients.count)"])
        } else {
            context.logger.error("self-test: a test message did not go out: the box cannot reach everyone it calls for help",
                              metadata: ["failed": "\(PhoneNumberRedaction.redact(status.lastProblem ?? ""))"])
        }
        let every = settings.everyMicroseconds
        if every > 0 { schedule(afterWallMicroseconds: passed ? every : min(every, Self.retryAfterFailureMicroseconds)) }
        context.outputsMayHaveChanged()
    }

    private func schedule(afterWallMicroseconds delay: UInt64) {
        context.scheduler.schedule(Self.dueTimer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: context.clock.nowMicroseconds() &+ delay))
    }

    func stop() {
        context.scheduler.cancel(Self.dueTimer)
        queue = []
        guard let running else { return }
        running.child.kill()
        context.unwatch(running.child.exitDescriptor, "the notifier's test")
        context.scheduler.cancel(Self.timeoutTimer)
        self.running = nil
    }

    static func text(site: String, nodeID: UInt64) -> String {
        let place = site.isEmpty ? "box \(String(nodeID, radix: 16))" : "\(site) (box \(String(nodeID, radix: 16)))"
        return "TEST from Vigil at \(place): this is how a call for help will reach you. Nothing to do."
    }
}

/// The notifier's self-test as `vigil status`, the page and `/metrics` show it.
public struct NotifierTestStatus: Sendable, Codable, Equatable {
    /// `calls.test_to`.
    public var recipients: [String]
    public var lastTestMicroseconds: UInt64?
    public var lastTestPassed: Bool?
    /// The first failed test since the last that passed.
    public var failingSinceMicroseconds: UInt64?
    /// What the last failed test found, recipient by recipient.
    public var lastProblem: String?

    public init(recipients: [String]) { self.recipients = recipients }

    mutating func finished(passed: Bool, problem: String, at time: UInt64) {
        lastTestMicroseconds = time
        lastTestPassed = passed
        if passed {
            failingSinceMicroseconds = nil
        } else {
            if failingSinceMicroseconds == nil { failingSinceMicroseconds = time }
            lastProblem = String(problem.prefix(600))
        }
    }

    /// "cannot call for help: …" material: nil while the last test passed (or none ran yet).
    public var problem: String? {
        guard let since = failingSinceMicroseconds else { return nil }
        let at = CivilTime(utcSeconds: Int64(clamping: since / 1_000_000)).text
        return "a test message has not gone out since \(at) UTC: \(lastProblem ?? "no answer")"
    }
}
