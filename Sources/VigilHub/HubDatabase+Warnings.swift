import Foundation
import NIOCore
import PostgresNIO
import VigilCAP
import VigilEvents
import VigilWarningFeeds

/// Public warnings the hub relays (`WarningRelay`, docs/warnings.md "The hub relays"): a lease
/// per feed so one hub process polls it however many run, what the feed last answered (so a
/// restarted hub asks "only if changed"), and each message put on the feed once.
extension HubDatabase {
    /// What a feed's poll starts from: the feed's last validators and index entries.
    public struct WarningFeedLease: Sendable {
        /// This lease's token: what the poll learned is saved only while no other process has
        /// taken the lease since (a poll that outlived its lease saves nothing).
        public var token: Int64
        public var validators: WarningFetcher.Validators
        public var seen: [String: String]
    }

    /// A relayed document is at most this (its feed item is read by every box; a page of the
    /// feed is cut at `pageBytes`). Larger ones are left to boxes that poll the feed themselves.
    public static let maxRelayedWarning = 32 << 10
    /// How long a relayed message's (sender, identifier, sent) is remembered: a feed listing it
    /// after that is asked again and relayed again (boxes judge it, long expired, as nothing new).
    static let relayedMemoryDays: Int32 = 30

    /// Takes the feed's lease for `seconds` unless another hub process holds it; nil then.
    public func leaseWarningFeed(url: String, seconds: Double) async throws -> WarningFeedLease? {
        let token = Int64.random(in: 1 ... .max)
        return try await bounded.withTransaction(logger: logger) { connection -> WarningFeedLease? in
            try await connection.query("INSERT INTO warning_feeds (url) VALUES (\(url)) ON CONFLICT DO NOTHING", logger: logger)
            for try await (etag, modified, seen) in try await connection.query("""
                UPDATE warning_feeds SET leased_until = now() + make_interval(secs => \(seconds)), lease = \(token)
                WHERE url = \(url) AND leased_until <= now()
                RETURNING etag, last_modified, seen::text
                """, logger: logger).decode((String?, String?, String).self) {
                let entries = (try? JSONDecoder().decode([String: String].self, from: Data(seen.utf8))) ?? [:]
                return WarningFeedLease(token: token, validators: WarningFetcher.Validators(etag: etag, lastModified: modified), seen: entries)
            }
            return nil
        }
    }

    /// Records what the poll learned; the lease runs on to its end (the next poll is then).
    /// `validators` and `seen` nil: keep the old ones (the poll failed).
    public func finishWarningPoll(url: String, lease: Int64, validators: WarningFetcher.Validators?, seen: [String: String]?,
                                  problem: String?) async throws {
        let seenText = try seen.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try await bounded.query("""
            UPDATE warning_feeds SET polled_at = now(), problem = \(problem),
                etag = CASE WHEN \(validators != nil) THEN \(validators?.etag) ELSE etag END,
                last_modified = CASE WHEN \(validators != nil) THEN \(validators?.lastModified) ELSE last_modified END,
                seen = coalesce(\(seenText)::jsonb, seen)
            WHERE url = \(url) AND lease = \(lease)
            """, logger: logger)
    }

    /// Puts `document` on the feed for every box, once per (feed, sender, identifier, sent)
    /// network-wide: true when it went on now, false when it had already (the feed is in the key:
    /// one feed cannot keep another's message off by sending its identifiers first). The item is the event a box
    /// would log for it (`WarningReceived`: the feed, the document as served, whether its
    /// signature verified under the hub's signers).
    public func relayWarning(feed: String, document: WarningFetcher.Document, nowMicroseconds: UInt64) async throws -> Bool {
        var received = WarningReceived()
        received.feed = feed
        received.link = document.url == feed ? "" : document.url
        received.document = Data(document.bytes)
        received.signatureVerified = document.signatureVerified
        let (kind, payload) = EventCodec.encode(.warningReceived(received))
        let key = document.alert.key
        let days = Self.relayedMemoryDays
        return try await bounded.withTransaction(logger: logger) { connection -> Bool in
            try await connection.query("""
                DELETE FROM relayed_warnings WHERE relayed_at < now() - make_interval(days => \(days))
                """, logger: logger)
            var inserted = false
            for try await _ in try await connection.query("""
                INSERT INTO relayed_warnings (feed, sender, identifier, sent_us)
                VALUES (\(feed), \(key.sender), \(key.identifier), \(key.sent.microseconds))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: logger).decode(Int32.self) {
                inserted = true
            }
            guard inserted else { return false }
            try await appendToFeed([NewFeedItem(seq: 0, kind: kind, timeUs: nowMicroseconds, payload: payload)], origin: 0, epoch: 0, connection)
            return true
        }
    }
}
