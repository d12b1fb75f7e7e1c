import Foundation
import Logging
import ServiceLifecycle
import VigilCAP
import VigilWarningFeeds

/// The hub polls public warnings feeds once for its network and puts each new message on the
/// feed, so a box without internet (or without feeds of its own) hears them (docs/warnings.md,
/// "The hub relays"). hub.yaml's `warnings.feeds` are read as a box reads its own: the same
/// fetcher, conditional requests, the same signature rules under the hub's signers.
///
/// However many hub processes share the database, one polls a feed each interval: each poll
/// takes the feed's lease in PostgreSQL for the interval first (`leaseWarningFeed`), and each
/// message goes on the feed once (`relayWarning`). A hub that dies holding a lease loses that
/// feed one interval. What a poll learned (validators, index entries) is kept in the database,
/// so the next poll, in any process, asks "only if changed".
///
/// Beside the HTTP server and never in a request: a feed that hangs costs its own task, bounded
/// by the fetcher's 30 s a request.
struct WarningRelay: Sendable {
    let feeds: [WarningFeedSettings]
    let dataDirectory: String
    let database: HubDatabase
    let logger: Logger
    let now: @Sendable () -> UInt64

    /// After failures the wait doubles from the interval up to this (or the interval, if longer).
    static let maximumBackoffSeconds = 900.0

    func run() async {
        guard !feeds.isEmpty else { return }
        await withDiscardingTaskGroup { group in
            for feed in feeds {
                group.addTask { await follow(feed) }
            }
        }
    }

    private func follow(_ feed: WarningFeedSettings) async {
        let fetcher: WarningFetcher
        do {
            fetcher = try feed.fetcher(dataDirectory: dataDirectory)
        } catch {
            logger.error("hub: a warnings feed cannot be used", metadata: ["feed": "\(feed.url)", "error": "\(error)"])
            return
        }
        defer { fetcher.close() }
        let interval = Double(feed.intervalMicroseconds) / 1e6
        var failures = 0
        var judged = Judged()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            failures = await pollOnce(feed, fetcher: fetcher, leaseSeconds: interval, judged: &judged) ? 0 : failures + 1
            let wait = failures == 0 ? interval : min(max(interval, Self.maximumBackoffSeconds), interval * Double(1 << min(failures, 16)))
            // Ends early at a graceful shutdown or cancellation.
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(wait)) }
        }
    }

    /// What this process has relayed of one feed: the infos of the last message of each
    /// (sender, identifier), so a repeat with nothing new (a public feed re-publishing its alerts
    /// every poll with a new `sent`) is not relayed, and the times of the last hour's relays (at
    /// most `perHour`: a feed gone mad does not fill every box's card). Not a warnings book: a
    /// national feed may hold hundreds of warnings, none of them for the hub's place, and all are
    /// for some box. In memory and bounded: after a restart the first poll relays what is new to
    /// it again, and the database's (feed, sender, identifier, sent) keeps exact copies off.
    struct Judged {
        struct Last { var infos: [CAPInfo]; var expires: Int64 }
        var last: [String: Last] = [:]
        var relayedAt: [UInt64] = []
        static let perHour = 120
        static let remembered = 4_096

        /// Whether a box could want `alert` now: public, a warning or its update or cancel, not
        /// expired, and not the same infos as the last message of its identifier.
        func wanted(_ alert: CAPAlert, now: UInt64) -> Bool {
            guard alert.scope == .public, alert.messageType != .ack, alert.messageType != .error else { return false }
            if alert.messageType == .cancel { return true }
            let expires = Self.expires(alert)
            guard expires > Int64(clamping: now) else { return false }
            return last[Self.key(alert)]?.infos != alert.infos
        }

        mutating func relayed(_ alert: CAPAlert, now: UInt64) {
            last[Self.key(alert)] = Last(infos: alert.infos, expires: Self.expires(alert))
            if last.count > Self.remembered {
                let today = Int64(clamping: now)
                last = last.filter { $0.value.expires > today }
                while last.count > Self.remembered, let oldest = last.min(by: { $0.value.expires < $1.value.expires }) { last[oldest.key] = nil }
            }
        }

        mutating func spend(now: UInt64) -> Bool {
            relayedAt.removeAll { $0 + 3_600_000_000 <= now }
            guard relayedAt.count < Self.perHour else { return false }
            relayedAt.append(now)
            return true
        }

        static func key(_ alert: CAPAlert) -> String { alert.sender + "\u{0}" + alert.identifier }

        /// The latest end its infos give, or a day after it was sent (as a box reads it).
        static func expires(_ alert: CAPAlert) -> Int64 {
            alert.infos.compactMap(\.expires?.microseconds).max() ?? alert.sent.microseconds &+ CAPWarnings.defaultLifetimeMicroseconds
        }
    }

    /// One poll if this process gets the lease; false when the feed or the database failed.
    private func pollOnce(_ feed: WarningFeedSettings, fetcher: WarningFetcher, leaseSeconds: Double, judged: inout Judged) async -> Bool {
        let lease: HubDatabase.WarningFeedLease
        do {
            // Held a little under the interval, so the next poll (here or in another process)
            // finds it free.
            guard let taken = try await database.leaseWarningFeed(url: feed.url, seconds: max(1, leaseSeconds - 1)) else { return true }
            lease = taken
        } catch {
            logger.warning("hub: the database failed while leasing a warnings feed", metadata: ["feed": "\(feed.url)", "error": "\(error)"])
            return false
        }
        let poll = await fetcher.poll(validators: lease.validators, seen: lease.seen)
        var problem: String?
        var relayed = 0, tooLarge = 0
        switch poll.outcome {
        case .failed(let why):
            problem = String(why.prefix(300))
            logger.warning("hub: a warnings feed cannot be read", metadata: ["feed": "\(feed.url)", "error": "\(CAPText.oneLine(why, limit: 300))"])
        case .notModified, .read:
            break
        }
        var seen = poll.seen
        // Something left for the next poll: it must not be answered "not modified" then.
        var again = false
        var overBudget = 0
        // In the order they were sent (an index need not list a warning before its cancel).
        for document in poll.documents.sorted(by: { ($0.alert.sent, $0.url) < ($1.alert.sent, $1.url) }) {
            guard document.bytes.count <= HubDatabase.maxRelayedWarning else {
                tooLarge += 1
                continue
            }
            let at = now()
            // A Cancel always goes (the warning it ends may have been relayed before a restart);
            // anything else only if some box could want it.
            guard judged.wanted(document.alert, now: at) else { continue }
            guard judged.spend(now: at) else {
                overBudget += 1
                seen[document.url] = nil
                again = true
                continue
            }
            do {
                if try await database.relayWarning(feed: feed.url, document: document, nowMicroseconds: at) { relayed += 1 }
                judged.relayed(document.alert, now: at)
            } catch {
                // Asked for again at the next poll.
                seen[document.url] = nil
                again = true
                problem = "the database failed while relaying: \(error)"
                logger.warning("hub: the database failed while relaying a warning", metadata: [
                    "feed": "\(feed.url)", "error": "\(String(reflecting: error))",
                ])
            }
        }
        if overBudget > 0 {
            problem = "over \(Judged.perHour) messages relayed in an hour: \(overBudget) wait for the next poll"
            logger.warning("hub: a warnings feed is over its relay budget", metadata: ["feed": "\(feed.url)", "waiting": "\(overBudget)"])
        }
        if tooLarge > 0 {
            problem = problem ?? "\(tooLarge) document(s) longer than \(HubDatabase.maxRelayedWarning) bytes were not relayed: boxes must poll this feed themselves"
            logger.notice("hub: warnings too large to relay", metadata: ["feed": "\(feed.url)", "count": "\(tooLarge)"])
        }
        if let first = poll.refused.first {
            logger.notice("hub: a warnings feed's document was not read", metadata: [
                "feed": "\(feed.url)", "document": "\(CAPText.oneLine(first.url, limit: 200))",
                "error": "\(CAPText.oneLine(first.reason, limit: 300))", "count": "\(poll.refused.count)",
            ])
        }
        if relayed > 0 { logger.notice("hub: public warnings relayed to the boxes", metadata: ["feed": "\(feed.url)", "count": "\(relayed)"]) }
        let failed = { if case .failed = poll.outcome { true } else { false } }()
        // With something left for later, the feed is read whole next time (its validators would
        // have it answer 304, and what was left would wait for the feed to change).
        let validators = again ? WarningFetcher.Validators() : poll.validators
        do {
            try await database.finishWarningPoll(url: feed.url, lease: lease.token, validators: failed ? nil : validators,
                                                 seen: failed ? nil : seen, problem: problem)
        } catch {
            logger.warning("hub: the database failed after a warnings poll", metadata: ["feed": "\(feed.url)", "error": "\(error)"])
            return false
        }
        return !failed
    }
}
