import Crypto
import Foundation
import Logging
import NIOCore
import PostgresNIO
import VigilEvents
import VigilHex
import VigilHubProtocol

/// Uploads and the feed: storing a box's batch exactly once, and what each box downloads.
extension HubDatabase {
    public enum UploadOutcome: Sendable, Equatable {
        case stored(UploadAnswer)
        case refused(status: Int, Refusal)
    }

    /// Stores a batch in one transaction, idempotently: events already held with the same hash
    /// are duplicates; one held with another hash refuses the whole batch (409) and is recorded
    /// in `conflicts`. The contiguous mark moves to `through` when the batch starts at or before
    /// the mark plus one (urgent batches never move it).
    public func upload(_ batch: UploadBatch, node: UInt64, events decoded: [IncomingEvent]) async throws -> UploadOutcome {
        let nodeID = Int64(bitPattern: node)
        let epoch = Int32(bitPattern: batch.epoch)
        do {
            return try await store(batch, nodeID: nodeID, epoch: epoch, decoded)
        } catch let error as PostgresTransactionError {
            guard let conflict = error.closureError as? ConflictFound else { throw error }
            // The batch was rolled back: nothing of it is stored. The conflict is recorded and
            // shown on both sides.
            try await recordConflict(node: node, epoch: batch.epoch, seq: conflict.seq, held: conflict.held, sent: conflict.sent)
            logger.warning("hub: refused an event whose content differs from the one held",
                           metadata: ["node": "\(NodeIDText.format(node))", "epoch": "\(batch.epoch)", "seq": "\(conflict.seq)"])
            return .refused(status: 409, Refusal(error: "conflict",
                                                 message: "the hub holds a different event at sequence \(conflict.seq) of epoch \(batch.epoch)",
                                                 seq: conflict.seq))
        }
    }

    /// One transaction of one statement in the usual case (every event new): the epoch's row is
    /// upserted (which locks it, so no other upload of this box's epoch runs until this one
    /// commits) with its new mark already, the events are inserted unless the batch leaves a gap,
    /// and the box's report recorded. Connections are what 200 boxes uploading at once wait for,
    /// so each round trip counts (`hub_ingest_eps`).
    private func store(_ batch: UploadBatch, nodeID: Int64, epoch: Int32,
                       _ decoded: [IncomingEvent]) async throws -> UploadOutcome {
        let seqs = decoded.map { Int64(bitPattern: $0.seq) }
        let kinds = decoded.map { Int32(bitPattern: $0.kind) }
        let times = decoded.map { Int64(bitPattern: $0.timeUs) }
        let hashes = decoded.map { ByteBuffer(bytes: $0.hash) }
        let payloads = decoded.map { ByteBuffer(bytes: $0.payload) }
        // Which of the new rows feed the other boxes (answered as one array, not a row each).
        let feeding = decoded.filter(\.feeds).map { Int64(bitPattern: $0.seq) }
        let (from, through) = (Int64(bitPattern: batch.from), Int64(bitPattern: batch.through))
        let epochStart = Int64(bitPattern: batch.epochFirst - 1)
        let top = seqs.max() ?? 0
        let urgent = batch.urgent
        let report = batch.box
        let position = report?.coordinates
        // The last sample in the log's order (batches come in order; urgent ones hold none).
        let sample = decoded.last { $0.occupancy != nil }?.occupancy
        return try await bounded.withTransaction(logger: logger) { connection -> UploadOutcome in
            // The mark moves to `through` when the batch starts at or before the mark plus one
            // (a new epoch's mark starts just before its first sequence: what came before it was
            // acknowledged under an earlier epoch); urgent batches never move it. A batch that
            // would leave a gap moves nothing and stores nothing: the mark it returns is then
            // below `through`.
            var held: Int64 = 0
            var inserted = 0
            var fed: [Int64] = []
            for try await (h, count, new) in try await connection.query("""
                WITH e AS (
                    INSERT INTO box_epochs AS b (node_id, epoch, held_through, highest)
                    VALUES (\(nodeID), \(epoch),
                            CASE WHEN \(urgent) OR \(from) > \(epochStart) + 1 THEN \(epochStart) ELSE \(through) END,
                            CASE WHEN \(urgent) OR \(from) <= \(epochStart) + 1
                                 THEN greatest(\(top), CASE WHEN \(urgent) THEN \(epochStart) ELSE \(through) END) ELSE 0 END)
                    ON CONFLICT (node_id, epoch) DO UPDATE SET
                        held_through = CASE WHEN \(urgent) OR \(from) > b.held_through + 1 THEN b.held_through
                                            ELSE greatest(b.held_through, \(through)) END,
                        highest = CASE WHEN \(urgent) THEN greatest(b.highest, \(top), b.held_through)
                                       WHEN \(from) > b.held_through + 1 THEN b.highest
                                       ELSE greatest(b.highest, \(top), b.held_through, \(through)) END
                    RETURNING held_through, \(urgent) OR held_through >= \(through) AS accepted
                ),
                stored AS (
                    INSERT INTO events (node_id, epoch, seq, kind, time_us, hash, payload)
                    SELECT \(nodeID), \(epoch), s, k, t, h, p
                    FROM unnest(\(seqs)::bigint[], \(kinds)::integer[], \(times)::bigint[], \(hashes)::bytea[], \(payloads)::bytea[]) AS u(s, k, t, h, p)
                    WHERE (SELECT accepted FROM e)
                    ON CONFLICT (node_id, epoch, seq) DO NOTHING
                    RETURNING seq
                ),
                reported AS (
                    UPDATE boxes SET
                        site = CASE WHEN \(report != nil) THEN \(report?.site.map(Self.printable)) ELSE site END,
                        latitude = CASE WHEN \(report != nil) THEN \(position?.latitude) ELSE latitude END,
                        longitude = CASE WHEN \(report != nil) THEN \(position?.longitude) ELSE longitude END,
                        backlog = coalesce(\(report.map { Int64(clamping: $0.backlog) }), backlog),
                        reported_at = CASE WHEN \(report != nil) THEN now() ELSE reported_at END,
                        occupancy = coalesce(\(sample.map { Int32(clamping: $0.advertisers) }), occupancy),
                        occupancy_minute_us = coalesce(\(sample.map { Int64(clamping: $0.minute) }), occupancy_minute_us)
                    WHERE node_id = \(nodeID) AND (SELECT accepted FROM e)
                )
                SELECT (SELECT held_through FROM e), (SELECT count(*) FROM stored),
                       (SELECT coalesce(array_agg(seq) FILTER (WHERE seq = ANY(\(feeding)::bigint[])), '{}')::bigint[] FROM stored)
                """, logger: logger).decode((Int64, Int64, [Int64]).self) {
                held = h
                inserted = Int(count)
                fed = new
            }
            if !urgent, held < through {
                let heldThrough = UInt64(bitPattern: held)
                return .refused(status: 409, Refusal(error: "out_of_order", message: "this batch starts after a gap: the hub holds through \(heldThrough)",
                                                     heldThrough: heldThrough))
            }
            // Events already held (a batch sent again) must be the same: checked only when there
            // are some. A difference throws, so the transaction rolls back whole.
            if inserted < decoded.count {
                var stored: [Int64: ByteBuffer] = [:]
                for try await (s, h) in try await connection.query("""
                    SELECT seq, hash FROM events WHERE node_id = \(nodeID) AND epoch = \(epoch) AND seq = ANY(\(seqs)::bigint[])
                    """, logger: logger).decode((Int64, ByteBuffer).self) { stored[s] = h }
                for e in decoded {
                    if let mine = stored[Int64(bitPattern: e.seq)].map({ Array($0.readableBytesView) }), mine != e.hash {
                        throw ConflictFound(seq: e.seq, held: mine, sent: e.hash)
                    }
                }
            }
            let newlyFed = Set(fed)
            let forFeed = decoded.filter { $0.feeds && newlyFed.contains(Int64(bitPattern: $0.seq)) }
            if !forFeed.isEmpty {
                try await appendToFeed(forFeed.map { NewFeedItem(seq: $0.seq, kind: $0.kind, timeUs: $0.timeUs, payload: $0.payload) },
                                       origin: nodeID, epoch: epoch, connection)
            }
            return .stored(UploadAnswer(epoch: batch.epoch, heldThrough: UInt64(bitPattern: held), accepted: inserted,
                                        duplicates: decoded.count - inserted))
        }
    }

    /// A box's text as the page shows it: no control characters (PostgreSQL refuses NUL), at
    /// most 120 characters.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }).prefix(120))
    }

    /// The advisory lock the feed's positions are given under (held to commit).
    static let feedLock: Int64 = 7431002

    /// An item about to go on the feed.
    struct NewFeedItem: Sendable {
        var seq: UInt64
        var kind: UInt32
        var timeUs: UInt64
        var payload: [UInt8]
    }

    /// Gives the new items the next feed positions, in this transaction (the lock is held to its
    /// commit, so positions commit in order), and wakes the long polls when it commits. `origin`
    /// 0 with `coordinator`: made at the hub.
    func appendToFeed(_ items: [NewFeedItem], origin: Int64, epoch: Int32, coordinator: String? = nil,
                      _ connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.feedLock))", logger: logger)
        try await connection.query("""
            INSERT INTO feed (position, origin_node, origin_epoch, origin_seq, kind, time_us, payload, coordinator)
            SELECT (SELECT coalesce(max(position), 0) FROM feed) + row_number() OVER (ORDER BY o), \(origin), \(epoch), s, k, t, p, \(coordinator)
            FROM unnest(\(items.map { Int64(bitPattern: $0.seq) })::bigint[], \(items.map { Int32(bitPattern: $0.kind) })::integer[],
                        \(items.map { Int64(bitPattern: $0.timeUs) })::bigint[], \(items.map { ByteBuffer(bytes: $0.payload) })::bytea[])
                 WITH ORDINALITY AS u(s, k, t, p, o)
            """, logger: logger)
        try await connection.query("SELECT pg_notify(\(Self.feedChannel), '')", logger: logger)
    }

    /// An uploaded event, checked (`SyncRoutes.validate`).
    public struct IncomingEvent: Sendable {
        public var seq: UInt64
        public var kind: UInt32
        public var timeUs: UInt64
        public var payload: [UInt8]
        public var hash: [UInt8]
        /// Whether the feed carries it to the other boxes: an alert made at this box (a raise,
        /// re-affirmation or cancel of its own alert, or its answer to another's call).
        public var feeds: Bool
        /// An occupancy sample's minute and count.
        public var occupancy: (minute: UInt64, advertisers: UInt32)? = nil
    }

    /// A feed item as the hub serves it.
    public struct FeedItem: Sendable, Equatable {
        public var position: UInt64
        public var originNode: UInt64
        public var kind: UInt32
        public var timeUs: UInt64
        public var payload: [UInt8]

        public init(position: UInt64, originNode: UInt64, kind: UInt32, timeUs: UInt64, payload: [UInt8]) {
            (self.position, self.originNode, self.kind, self.timeUs, self.payload) = (position, originNode, kind, timeUs, payload)
        }
    }

    /// A page of the feed for a box, with what it needs to check its cursor.
    public struct FeedPage: Sendable {
        public var items: [FeedItem]
        /// The newest position the feed holds.
        public var head: UInt64
        /// The item at the cursor asked after (nil: none, or the cursor is 0).
        public var atCursor: FeedItem?
        /// Items were left out for `pageBytes` (more follow at once, as after a full page).
        public var cut = false

        public init(items: [FeedItem], head: UInt64, atCursor: FeedItem?) {
            (self.items, self.head, self.atCursor) = (items, head, atCursor)
            var bytes = 0
            for (index, item) in items.enumerated() {
                bytes += item.payload.count
                if bytes > HubDatabase.pageBytes, index > 0 {
                    self.items = Array(items[..<index])
                    cut = true
                    break
                }
            }
        }

        /// Whether the box should read again at once: the page was full, or cut.
        public func more(limit: Int) -> Bool { cut || items.count == limit }
    }

    /// A page's payloads at most (after its first item): a box reads a page as one line of at
    /// most 2 MiB (`FeedLines`), and a relayed public warning is up to `maxRelayedWarning`.
    public static let pageBytes = 1 << 20

    /// Feed items after `position` that did not come from `node`, with the newest position and
    /// the item at `position`, from the database (the truth: positions commit in order).
    public func feedPage(after position: UInt64, for node: UInt64, limit: Int = 200) async throws -> FeedPage {
        let items = try await feed(after: position, for: node, limit: limit)
        var head: Int64 = 0
        for try await (h) in try await bounded.query("SELECT coalesce(max(position), 0) FROM feed", logger: logger).decode(Int64.self) { head = h }
        let at = position == 0 ? [] : try await feedRows("""
            SELECT position, origin_node, kind, time_us, payload FROM feed WHERE position = \(Int64(bitPattern: position))
            """)
        return FeedPage(items: items, head: UInt64(bitPattern: head), atCursor: at.first)
    }

    /// Feed items after `position` that did not come from `node`, oldest first.
    public func feed(after position: UInt64, for node: UInt64, limit: Int = 200) async throws -> [FeedItem] {
        try await feedRows("""
            SELECT position, origin_node, kind, time_us, payload FROM feed
            WHERE position > \(Int64(bitPattern: position)) AND origin_node <> \(Int64(bitPattern: node))
            ORDER BY position LIMIT \(limit)
            """)
    }

    /// Every feed item after `position` (all origins), oldest first (`FeedCache`).
    func feedWindow(after position: UInt64, limit: Int) async throws -> [FeedItem] {
        try await feedRows("""
            SELECT position, origin_node, kind, time_us, payload FROM feed WHERE position > \(Int64(bitPattern: position))
            ORDER BY position LIMIT \(limit)
            """)
    }

    /// The newest `limit` feed items, oldest first (`FeedCache`).
    func feedTail(limit: Int) async throws -> [FeedItem] {
        try await feedRows("""
            SELECT position, origin_node, kind, time_us, payload FROM (
                SELECT position, origin_node, kind, time_us, payload FROM feed ORDER BY position DESC LIMIT \(limit)) AS t
            ORDER BY position
            """)
    }

    private func feedRows(_ query: PostgresQuery) async throws -> [FeedItem] {
        var items: [FeedItem] = []
        for try await (p, o, k, t, payload) in try await bounded.query(query, logger: logger).decode((Int64, Int64, Int32, Int64, ByteBuffer).self) {
            items.append(FeedItem(position: UInt64(bitPattern: p), originNode: UInt64(bitPattern: o), kind: UInt32(bitPattern: k),
                                  timeUs: UInt64(bitPattern: t), payload: Array(payload.readableBytesView)))
        }
        return items
    }

    struct ConflictFound: Error, Sendable {
        let seq: UInt64
        let held: [UInt8]
        let sent: [UInt8]
    }

    /// Records a refused conflict (after its batch was rolled back).
    func recordConflict(node: UInt64, epoch: UInt32, seq: UInt64, held: [UInt8], sent: [UInt8]) async throws {
        try await bounded.query("""
            INSERT INTO conflicts (node_id, epoch, seq, held_hash, sent_hash)
            VALUES (\(Int64(bitPattern: node)), \(Int32(bitPattern: epoch)), \(Int64(bitPattern: seq)), \(ByteBuffer(bytes: held)), \(ByteBuffer(bytes: sent)))
            """, logger: logger)
    }

    /// What the hub holds of `node`.
    public func syncState(node: UInt64) async throws -> SyncState {
        let nodeID = Int64(bitPattern: node)
        var epochs: [SyncState.Epoch] = []
        for try await (e, h, top) in try await bounded.query(
            "SELECT epoch, held_through, highest FROM box_epochs WHERE node_id = \(nodeID) ORDER BY epoch", logger: logger)
            .decode((Int32, Int64, Int64).self) {
            epochs.append(SyncState.Epoch(epoch: UInt32(bitPattern: e), heldThrough: UInt64(bitPattern: h), highest: UInt64(bitPattern: top)))
        }
        var conflicts = 0
        for try await (n) in try await bounded.query("SELECT count(*) FROM conflicts WHERE node_id = \(nodeID)", logger: logger).decode(Int64.self) {
            conflicts = Int(n)
        }
        return SyncState(node: NodeIDText.format(node), epochs: epochs, conflicts: conflicts)
    }

    /// Every event held of `node`'s `epoch`, by sequence (tests compare these with the box's log).
    public func events(node: UInt64, epoch: UInt32) async throws -> [(seq: UInt64, kind: UInt32, timeUs: UInt64, hash: [UInt8])] {
        var out: [(seq: UInt64, kind: UInt32, timeUs: UInt64, hash: [UInt8])] = []
        for try await (s, k, t, h) in try await bounded.query("""
            SELECT seq, kind, time_us, hash FROM events
            WHERE node_id = \(Int64(bitPattern: node)) AND epoch = \(Int32(bitPattern: epoch)) ORDER BY seq
            """, logger: logger).decode((Int64, Int32, Int64, ByteBuffer).self) {
            out.append((UInt64(bitPattern: s), UInt32(bitPattern: k), UInt64(bitPattern: t), Array(h.readableBytesView)))
        }
        return out
    }
}
