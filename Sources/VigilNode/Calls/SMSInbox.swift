import VigilCalls
import VigilCore
import VigilEvents
import VigilSystem

/// SMS replies from gammu-smsd's inbox (`calls.sms_inbox`): the directory watched with inotify
/// (files closed after writing or moved in; no polling), each new file read once, bounded,
/// parsed by VigilCalls and judged by `SMSReplyRule`. The fact is logged (`SmsReceived`), then
/// what it caused (a taking, a check-in). A file is never read twice: the log remembers the names
/// read (`SMSBook`), and files older than `horizon` are left alone, so an old inbox is not
/// replayed into today's calls.
///
/// The inbox missing or unreadable never stops the node: the button and every other path work;
/// status says what is wrong and the watch is tried again every 30 s.
final class SMSInbox: NodeComponent {
    unowned let context: any NodeContext
    /// `calls.sms_inbox`.
    let settings: SMSInboxSettings
    /// The interpreter of the moment (the state it judges by changes with every event): the same
    /// decision a command from the page or the CLI gets.
    private let interpreter: () -> CommandInterpreter
    private var watch: DirectoryWatch?
    /// Names waiting to be read, in arrival order (bounded: a flood waits in the directory).
    private var queue: [String] = []
    private var queued: Set<String> = []
    /// Files whose SmsReceived is appended and not yet applied.
    private var appended: Set<String> = []
    /// Names passed over for good (older than the horizon, not files): not looked at again.
    private var skipped: Set<String> = []
    /// The queue was full: names were left in the directory, to be listed again once it drains.
    private var overflowedQueue = false
    /// Why the inbox cannot be read, for status.
    private(set) var problem: String?
    private(set) var counters = Counters()

    struct Counters: Sendable, Equatable, Codable {
        var read: UInt64 = 0
        var actedOn: UInt64 = 0
        var unreadable: UInt64 = 0
        var tooOld: UInt64 = 0
        var overflows: UInt64 = 0
    }

    static let retryTimer = Scheduler.Timer("sms-inbox-retry")
    static let rescanTimer = Scheduler.Timer("sms-inbox-rescan")
    static let drainTimer = Scheduler.Timer("sms-inbox-drain")
    /// Files read per turn of the loop: a flood of texts never holds the button up.
    static let perTurn = 16
    static let queueLimit = 1_024
    /// Files written longer ago than this are not read (a reply answers a question of now).
    static let horizonMicroseconds: UInt64 = 86_400_000_000

    init(context: any NodeContext, settings: SMSInboxSettings, interpreter: @escaping () -> CommandInterpreter) {
        self.context = context
        self.settings = settings
        self.interpreter = interpreter
    }

    func start() throws(NodeError) {
        guard settings.directory != nil else { return }
        context.scheduler.register(Self.retryTimer) { [unowned self] in openWatch() }
        context.scheduler.register(Self.drainTimer) { [unowned self] in readSome() }
        context.scheduler.register(Self.rescanTimer) { [unowned self] in rescan() }
        openWatch()
    }

    func applied(_ event: Event) {
        if case .smsReceived(let m) = event.body { appended.remove(m.file) }
    }

    func refused(_ event: Event) {
        if case .smsReceived(let m) = event.body { appended.remove(m.file) }
    }

    private func openWatch() {
        guard let directory = settings.directory, watch == nil, !context.stopping else { return }
        do {
            let w = try DirectoryWatch(directory: directory)
            guard context.watch(w.fd, "the SMS inbox", handler: { [unowned self] _ in arrived() }) else { return }
            watch = w
            problem = nil
            rescan()
        } catch {
            problem = "cannot watch \(directory): \(error)"
            context.logger.warning("SMS inbox unavailable; retrying in 30 s", metadata: ["error": "\(error)"])
            context.scheduler.schedule(Self.retryTimer, afterNanoseconds: 30_000_000_000)
        }
    }

    /// inotify said files arrived.
    private func arrived() {
        guard let watch else { return }
        do {
            let (names, overflowed) = try watch.drain()
            if overflowed {
                counters.overflows += 1
                rescan()
            } else {
                for name in names { enqueue(name) }
            }
        } catch {
            problem = "reading the SMS inbox's events failed: \(error)"
        }
        readSome()
    }

    /// Every name in the directory not read yet (at start, and after the kernel dropped events).
    private func rescan() {
        guard let directory = settings.directory else { return }
        do {
            // Newest first (gammu names files by date and time): a long-kept inbox never crowds
            // out the replies that came while the node was down.
            for name in try FileSystem.names(inDirectory: directory).sorted(by: >) { enqueue(name) }
        } catch {
            problem = "cannot list \(directory): \(error)"
        }
        readSome()
    }

    private func enqueue(_ name: String) {
        guard name.hasPrefix("IN"), !queued.contains(name), !appended.contains(name), !context.projections.sms.hasRead(name),
              !skipped.contains(name) else { return }
        guard queue.count < Self.queueLimit else {
            overflowedQueue = true
            return
        }
        queue.append(name)
        queued.insert(name)
    }

    /// Reads up to `perTurn` waiting files; the rest on the next turn.
    private func readSome() {
        guard let directory = settings.directory, !context.stopping else { return }
        var done = 0
        while done < Self.perTurn, !queue.isEmpty {
            let name = queue.removeFirst()
            queued.remove(name)
            guard !appended.contains(name), !context.projections.sms.hasRead(name) else { continue }
            done += 1
            read(name, in: directory)
        }
        if !queue.isEmpty { context.scheduler.schedule(Self.drainTimer, afterNanoseconds: 0) }
        // A queue that was full left names in the directory: look again once it has room.
        if queue.isEmpty && overflowedQueue {
            overflowedQueue = false
            rescanSoon()
        }
    }

    private func rescanSoon() { context.scheduler.schedule(Self.rescanTimer, afterNanoseconds: 1_000_000_000) }

    private func read(_ name: String, in directory: String) {
        let path = directory + "/" + name
        let now = context.clock.nowMicroseconds()
        let entry: FileSystem.Entry
        do { entry = try FileSystem.entry(path) } catch { return } // gone meanwhile
        guard !entry.isDirectory, !entry.isSymbolicLink else {
            remember(skipped: name)
            return
        }
        guard entry.modifiedMicroseconds &+ Self.horizonMicroseconds >= now else {
            counters.tooOld += 1
            remember(skipped: name)
            return
        }
        let sms: Result<InboundSMS, any Error>
        do {
            let bytes = try FileSystem.readSmallFile(path, limit: InboxMessage.maximumFileSize)
            sms = .success(try InboundSMS.read(name: Array(name.utf8), contents: bytes, format: settings.format))
        } catch {
            // Too large, not a regular file, unreadable, not gammu's: logged as unreadable (the
            // log says why), never retried.
            sms = .failure(error)
        }
        let rule = SMSReplyRule(interpreter: interpreter(), projections: context.projections)
        let decision = rule.decide(file: name, sms: sms, receivedMicroseconds: min(entry.modifiedMicroseconds, now))
        counters.read += 1
        if decision.received.reading == .unreadable { counters.unreadable += 1 }
        guard context.append(.smsReceived(decision.received), time: nil) != nil else { return }
        appended.insert(name)
        if let effect = decision.effect, context.append(effect, time: nil) != nil { counters.actedOn += 1 }
        // Phone numbers and texts stay out of the journal above debug (issue 28).
        context.logger.debug("SMS read", metadata: ["file": "\(name)", "outcome": "\(decision.received.outcome)"])
    }

    private func remember(skipped name: String) {
        if skipped.count >= 10_000 { skipped.removeAll() }
        skipped.insert(name)
    }

    func stop() {
        if let watch { context.unwatch(watch.fd, "the SMS inbox") }
        watch = nil
    }
}

/// `calls.sms_inbox` and `calls.sms_inbox_format`: gammu-smsd's inbox directory and the format it
/// writes (`inboxformat`; detail keeps every character and tells parts and reports apart).
public struct SMSInboxSettings: Sendable, Equatable {
    public var directory: String?
    public var format: InboxFormat = .detail
    public init() {}
}
