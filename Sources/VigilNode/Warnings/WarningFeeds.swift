import Foundation
import VigilCAP
import VigilCore
import VigilEvents
import VigilWarningFeeds

/// Public warnings feeds (`warnings.feeds`; docs/warnings.md, "Feeds"): each polled on its own
/// timer on the loop (first at start, then every `interval`, longer after failures), fetched and
/// read beside the loop (`WarningFetcher`), and what comes back judged here: a message that
/// changes the warnings is logged as a `WarningReceived`; a copy is counted, never logged.
///
/// One fetch per feed at a time; a stop abandons those under way (their answers find no loop).
final class WarningFeeds: NodeComponent {
    unowned let context: any NodeContext
    private let settings: [WarningFeedSettings]
    private let dataDirectory: String
    private var feeds: [Feed] = []
    /// Messages appended and not yet applied, by sequence: what comes next is judged as if they
    /// were (a cancel and the warning it names, in one answer, log only the cancel).
    private var appended: [UInt64: Event] = [:]

    /// The longest wait after failures.
    static let maximumBackoffMicroseconds: UInt64 = 15 * 60_000_000

    struct Feed {
        var settings: WarningFeedSettings
        var fetcher: WarningFetcher?
        var timer: Scheduler.Timer
        var polling = false
        var validators = WarningFetcher.Validators()
        var seen: [String: String] = [:]
        var budget = LogBudget()
        var status: WarningFeedStatus
    }

    /// At most `perHour` messages logged from one feed an hour (a feed gone rogue cannot fill the
    /// card: a real one sends a few a day): the count restarts an hour after the hour's first.
    struct LogBudget {
        static let perHour = 120
        var spent = 0
        var since: UInt64 = 0

        mutating func spend(nowNanoseconds: UInt64) -> Bool {
            if spent == 0 || nowNanoseconds &- since >= 3_600_000_000_000 {
                spent = 0
                since = nowNanoseconds
            }
            guard spent < Self.perHour else { return false }
            spent += 1
            return true
        }
    }

    init(context: any NodeContext, settings: [WarningFeedSettings], dataDirectory: String) {
        self.context = context
        self.settings = settings
        self.dataDirectory = dataDirectory
    }

    func start() throws(NodeError) {
        for (index, feed) in settings.enumerated() {
            let timer = Scheduler.Timer("warning-feed-\(index)")
            var state = Feed(settings: feed, timer: timer, status: WarningFeedStatus(url: feed.url))
            do {
                state.fetcher = try feed.fetcher(dataDirectory: dataDirectory)
            } catch {
                // A missing CA or signers file is the operator's to fix; the box runs on, and says so.
                state.status.problem = "cannot use ca_file or signers: \(error)"
                context.logger.error("warnings: a feed cannot be used", metadata: ["feed": "\(feed.url)", "error": "\(error)"])
            }
            feeds.append(state)
            context.scheduler.register(timer) { [unowned self] in poll(index) }
            if state.fetcher != nil { context.scheduler.schedule(timer, afterNanoseconds: 0) }
        }
    }

    func stop() {
        for index in feeds.indices {
            context.scheduler.cancel(feeds[index].timer)
            feeds[index].fetcher?.close()
        }
    }

    func applied(_ event: Event) { appended[event.sequence] = nil }

    /// Refused after it was appended (the log failed it): its feed reads it again at the next poll.
    func refused(_ event: Event) {
        guard appended.removeValue(forKey: event.sequence) != nil, case .warningReceived(let w) = event.body,
              let index = feeds.firstIndex(where: { $0.settings.url == w.feed }) else { return }
        feeds[index].seen[w.link.isEmpty ? w.feed : w.link] = nil
        feeds[index].validators = WarningFetcher.Validators()
        feeds[index].status.notLogged &+= 1
    }

    /// Each feed's state, for `vigil status` and the metrics.
    var status: [WarningFeedStatus] { feeds.map(\.status) }

    private func path(_ file: String) -> String { file.hasPrefix("/") ? file : dataDirectory + "/" + file }

    private func poll(_ index: Int) {
        guard !context.stopping, feeds.indices.contains(index), !feeds[index].polling, let fetcher = feeds[index].fetcher else { return }
        feeds[index].polling = true
        feeds[index].status.polls &+= 1
        let validators = feeds[index].validators, seen = feeds[index].seen
        let bound = context.loopBound(self)
        Task {
            let result = await fetcher.poll(validators: validators, seen: seen)
            bound.send { $0.finished(index, result) }
        }
    }

    private func finished(_ index: Int, _ poll: WarningFetcher.Poll) {
        guard feeds.indices.contains(index) else { return }
        feeds[index].polling = false
        let now = context.clock.nowMicroseconds()
        var status = feeds[index].status
        status.answered &+= 1
        switch poll.outcome {
        case .failed(let why):
            status.failures &+= 1
            status.consecutiveFailures &+= 1
            status.problem = String(why.prefix(300))
            if status.consecutiveFailures == 1 || status.consecutiveFailures % 10 == 0 {
                context.logger.warning("warnings: a feed cannot be read", metadata: [
                    "feed": "\(status.url)", "error": "\(CAPText.oneLine(why, limit: 300))", "failures": "\(status.consecutiveFailures)",
                ])
            }
        case .notModified, .read:
            status.consecutiveFailures = 0
            status.problem = nil
            status.lastReadMicroseconds = now
            feeds[index].validators = poll.validators
            feeds[index].seen = poll.seen
        }
        status.refused &+= UInt64(poll.refused.count)
        if let first = poll.refused.first {
            context.logger.notice("warnings: a feed's document was not read", metadata: [
                "feed": "\(status.url)", "document": "\(CAPText.oneLine(first.url, limit: 200))",
                "error": "\(CAPText.oneLine(first.reason, limit: 300))", "count": "\(poll.refused.count)",
            ])
        }
        // Judged as if everything appended were applied (this feed's, other feeds', staff's).
        var judged = context.projectedState().warnings
        // In the order they were sent (an index need not list a warning before its cancel).
        let documents = poll.documents.sorted { ($0.alert.sent, $0.url) < ($1.alert.sent, $1.url) }
        for document in documents {
            switch take(document, feed: status.url, now: now, budget: &feeds[index].budget, judged: &judged) {
            case .logged: status.logged &+= 1
            case .unchanged: status.unchanged &+= 1
            case .notLogged(let why):
                // Fetched again at the next poll (the index's entry is forgotten).
                feeds[index].seen[document.url] = nil
                feeds[index].validators = WarningFetcher.Validators()
                status.notLogged &+= 1
                status.problem = why
            }
        }
        feeds[index].status = status
        schedule(index, failures: status.consecutiveFailures, deferred: poll.deferred > 0)
    }

    enum Taken { case logged, unchanged, notLogged(String) }

    /// Logs `document` when it changes the warnings as `judged` holds them.
    private func take(_ document: WarningFetcher.Document, feed: String, now: UInt64, budget: inout LogBudget,
                      judged: inout WarningBook) -> Taken {
        let key = document.alert.key
        var received = WarningReceived()
        received.feed = feed
        received.link = document.url == feed ? "" : document.url
        received.document = Data(document.bytes)
        received.signatureVerified = document.signatureVerified
        guard judged.wouldTake(document.alert, atMicroseconds: now, origin: WarningBook.origin(received)) else { return .unchanged }
        guard budget.spend(nowNanoseconds: context.monotonic.nowNanoseconds()) else {
            return .notLogged("over its budget of \(LogBudget.perHour) messages an hour: the rest wait")
        }
        let body = EventBody.warningReceived(received)
        guard let sequence = context.append(body, time: now) else { return .notLogged("the log refused it") }
        let event = Event(sequence: sequence, timeMicroseconds: now, body: body)
        appended[sequence] = event
        judged.apply(event)
        context.logger.notice("warnings: a public warning was received", metadata: [
            "identifier": "\(CAPText.oneLine(key.identifier, limit: 80))", "sender": "\(CAPText.oneLine(key.sender, limit: 80))",
            "type": "\(document.alert.messageType.rawValue)", "status": "\(document.alert.status.rawValue)",
        ])
        return .logged
    }

    /// The next poll: the feed's interval; after failures twice the last wait each time, from
    /// the interval up to 15 minutes (or the interval, when that is longer); within 30 s when an
    /// index had more new entries than one poll fetches.
    private func schedule(_ index: Int, failures: UInt64, deferred: Bool) {
        guard !context.stopping else { return }
        let interval = feeds[index].settings.intervalMicroseconds
        var wait = interval
        if failures > 0 {
            let ceiling = max(interval, Self.maximumBackoffMicroseconds)
            wait = min(ceiling, interval << min(failures, 16))
        } else if deferred {
            wait = min(interval, 30_000_000)
        }
        context.scheduler.schedule(feeds[index].timer, afterNanoseconds: wait &* 1_000)
    }
}

/// One feed, as `vigil status` shows it.
public struct WarningFeedStatus: Sendable, Codable, Equatable {
    public var url: String
    /// Polls begun, and those ended (read, not modified or failed).
    public var polls: UInt64 = 0
    public var answered: UInt64 = 0
    /// Messages logged (they changed the warnings) and copies not logged.
    public var logged: UInt64 = 0
    public var unchanged: UInt64 = 0
    /// Documents the feed linked that were not CAP 1.2 as written, or could not be fetched.
    public var refused: UInt64 = 0
    /// Documents that would have changed the warnings but were not logged (over the feed's
    /// budget, or the log refused them): fetched again at the next poll.
    public var notLogged: UInt64 = 0
    public var failures: UInt64 = 0
    public var consecutiveFailures: UInt64 = 0
    public var lastReadMicroseconds: UInt64?
    /// Why the feed cannot be read now (nil: it can).
    public var problem: String?

    public init(url: String) { self.url = url }
}
