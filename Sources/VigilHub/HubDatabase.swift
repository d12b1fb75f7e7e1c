import Crypto
import Foundation
import Logging
import NIOCore
import PostgresNIO
import VigilEvents
import VigilHex
import VigilHubProtocol

/// Everything the hub knows, in PostgreSQL: it keeps no state of its own, so any number of hub
/// processes on one database are correct (docs/hub.md "Beyond one machine").
///
/// Contract: every method is one transaction or one statement; an error leaves the database as
/// it was. Node ids (all 64 bits) are stored as `bigint` by bit pattern.
public struct HubDatabase: Sendable {
    /// For what is not a request: migrations and the feed listener.
    public let client: PostgresClient
    /// How long a request waits on PostgreSQL at most: under a box's 30 s read timeout, with
    /// room for a long answer to cross a slow uplink.
    public static let requestSeconds = 20.0
    /// For everything a request does: bounded by `requestSeconds`.
    let bounded: BoundedPostgres
    let logger: Logger

    public init(client: PostgresClient, logger: Logger, requestSeconds: Double = HubDatabase.requestSeconds) {
        self.client = client
        self.bounded = BoundedPostgres(client: client, seconds: requestSeconds, logger: logger)
        self.logger = logger
    }

    // MARK: Schema

    /// Each migration runs once, in order, under an advisory lock so two hubs starting together
    /// do not race.
    static let migrations: [String] = [
        """
        CREATE TABLE boxes (
            node_id bigint PRIMARY KEY,
            name text NOT NULL UNIQUE,
            credential_hash bytea NOT NULL,
            enrolled_at timestamptz NOT NULL DEFAULT now(),
            revoked_at timestamptz,
            last_contact timestamptz
        );
        CREATE TABLE enrolment_tokens (
            token_hash bytea PRIMARY KEY,
            name text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            expires_at timestamptz NOT NULL,
            used_at timestamptz,
            used_by bigint
        );
        CREATE TABLE box_epochs (
            node_id bigint NOT NULL REFERENCES boxes (node_id),
            epoch integer NOT NULL,
            held_through bigint NOT NULL DEFAULT 0,
            highest bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (node_id, epoch)
        );
        CREATE TABLE events (
            node_id bigint NOT NULL,
            epoch integer NOT NULL,
            seq bigint NOT NULL,
            kind integer NOT NULL,
            time_us bigint NOT NULL,
            hash bytea NOT NULL,
            payload bytea NOT NULL,
            received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (node_id, epoch, seq)
        );
        CREATE TABLE conflicts (
            node_id bigint NOT NULL,
            epoch integer NOT NULL,
            seq bigint NOT NULL,
            held_hash bytea NOT NULL,
            sent_hash bytea NOT NULL,
            at timestamptz NOT NULL DEFAULT now()
        );
        """,
        // v2: the download feed. `position` is gap-free and commits in order: one writer at a
        // time (an advisory lock held to commit), so a reader never skips a row committed late.
        """
        CREATE TABLE feed (
            position bigint PRIMARY KEY,
            origin_node bigint NOT NULL,
            origin_epoch integer NOT NULL,
            origin_seq bigint NOT NULL,
            kind integer NOT NULL,
            time_us bigint NOT NULL,
            payload bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX feed_origin ON feed (origin_node, position)
        """,
        // v3: the coordinators' page. What each box last said of itself, coordinators and their
        // sessions, failed sign-ins (rate limit), and the network's own alert origin (alerts a
        // coordinator raises carry it as their origin).
        """
        ALTER TABLE boxes ADD COLUMN site text, ADD COLUMN latitude double precision, ADD COLUMN longitude double precision,
            ADD COLUMN backlog bigint, ADD COLUMN reported_at timestamptz,
            ADD COLUMN occupancy integer, ADD COLUMN occupancy_minute_us bigint;
        CREATE INDEX events_kind ON events (kind, node_id, epoch, seq);
        ALTER TABLE feed ADD COLUMN coordinator text;
        CREATE TABLE coordinators (
            name text PRIMARY KEY,
            password_hash text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE sessions (
            token_hash bytea PRIMARY KEY,
            coordinator text NOT NULL REFERENCES coordinators (name) ON DELETE CASCADE,
            csrf text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            expires_at timestamptz NOT NULL
        );
        CREATE TABLE login_failures (
            name text NOT NULL,
            at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX login_failures_name ON login_failures (name, at);
        CREATE TABLE network (
            alert_origin bigint NOT NULL
        );
        INSERT INTO network (alert_origin) VALUES ((random() * 9.2e18)::bigint | 1);
        CREATE SEQUENCE coordinator_alert_counter
        """,
        // v4: diagnosis-key files, each offered on the feed (`KeyFiles`).
        """
        CREATE TABLE key_files (
            id bigserial PRIMARY KEY,
            name text NOT NULL,
            sha256 bytea NOT NULL UNIQUE,
            export_bin bytea NOT NULL,
            export_sig bytea NOT NULL,
            keys integer NOT NULL,
            added_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        // v5: failed sign-ins are counted per client too: a name is locked only for the client
        // that failed with it (coordinators' names are on the feed, in cancel reasons).
        """
        ALTER TABLE login_failures ADD COLUMN client text NOT NULL DEFAULT '';
        CREATE INDEX login_failures_client ON login_failures (client, at)
        """,
        // v6: a key per box (`BoxKeys`): the network's signing key, made by the first hub that
        // needs it, and every box key the hub certified (revoked with its box, or when the box
        // comes with a new one).
        """
        CREATE TABLE network_signing_key (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            seed bytea NOT NULL CHECK (octet_length(seed) = 32),
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE box_keys (
            node_id bigint NOT NULL REFERENCES boxes (node_id),
            box_key bytea NOT NULL CHECK (octet_length(box_key) = 32),
            certificate bytea NOT NULL,
            certified_at timestamptz NOT NULL DEFAULT now(),
            revoked_at timestamptz,
            PRIMARY KEY (node_id, box_key)
        );
        CREATE UNIQUE INDEX box_keys_one_node ON box_keys (box_key)
        """,
        // v7: public warnings the hub relays to its boxes (`WarningRelay`): each feed's lease
        // (one hub process polls it), what it last answered, and each message relayed once.
        """
        CREATE TABLE warning_feeds (
            url text PRIMARY KEY,
            leased_until timestamptz NOT NULL DEFAULT '-infinity',
            lease bigint NOT NULL DEFAULT 0,
            etag text,
            last_modified text,
            seen jsonb NOT NULL DEFAULT '{}',
            polled_at timestamptz,
            problem text
        );
        CREATE TABLE relayed_warnings (
            feed text NOT NULL,
            sender text NOT NULL,
            identifier text NOT NULL,
            sent_us bigint NOT NULL,
            relayed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (feed, sender, identifier, sent_us)
        );
        CREATE INDEX relayed_warnings_at ON relayed_warnings (relayed_at)
        """,
    ]

    /// An item the feed carries is at most this big (an alert with its text is far smaller), so
    /// a page of items always fits what a box reads.
    public static let maxFeedPayload = 4_096
    /// The channel NOTIFY wakes long polls on, in every hub process.
    static let feedChannel = "vigil_feed"

    public func migrate() async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(7431001)", logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)", logger: logger)
            var current = 0
            for try await (version) in try await connection.query("SELECT max(version) FROM schema_version", logger: logger).decode((Int?).self) {
                current = version ?? 0
            }
            for (index, sql) in Self.migrations.enumerated() where index + 1 > current {
                for statement in sql.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }) where !statement.isEmpty {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_version (version) VALUES (\(index + 1))", logger: logger)
                logger.info("hub: database schema migrated", metadata: ["version": "\(index + 1)"])
            }
        }
    }

    // MARK: Enrolment and credentials

    /// A new single-use token for a box to be called `name`, valid for `validSeconds`.
    public func createEnrolmentToken(name: String, validSeconds: Int = 7 * 86_400) async throws -> String {
        var secret = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in secret.indices { secret[i] = rng.next() }
        let text = Base64URL.encode(secret)
        try await bounded.query("""
            INSERT INTO enrolment_tokens (token_hash, name, expires_at)
            VALUES (\(Self.hash(text)), \(name), now() + make_interval(secs => \(Double(validSeconds))))
            """, logger: logger)
        return text
    }

    public enum EnrolOutcome: Sendable, Equatable {
        case enrolled(name: String, credential: String)
        /// Unknown, used or expired: one answer for all three, so a guess learns nothing.
        case tokenRefused
        /// Another box already has the name the token was made for.
        case nameTaken(String)
        /// This node is enrolled under another name: the token is for a different box.
        case nodeEnrolled(String)
        /// The node id is the network's own alert origin (coordinators' alerts): a box holding it
        /// could re-affirm and cancel them. The token is not used up.
        case nodeReserved
    }

    /// Uses a token once: the box `node` gets a new credential (a box that joins again gets a
    /// new one and its old one stops working).
    public func enrol(token: String, node: UInt64) async throws -> EnrolOutcome {
        var secret = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in secret.indices { secret[i] = rng.next() }
        let credential = Base64URL.encode(secret)
        let nodeID = Int64(bitPattern: node)
        do {
            return try await enrolTransaction(token: token, nodeID: nodeID, credential: credential)
        } catch let error as PostgresTransactionError {
            if let conflict = error.closureError as? EnrolConflict {
                return conflict.nodeEnrolled ? .nodeEnrolled(conflict.name) : .nameTaken(conflict.name)
            }
            throw error
        }
    }

    private func enrolTransaction(token: String, nodeID: Int64, credential: String) async throws -> EnrolOutcome {
        try await bounded.withTransaction(logger: logger) { connection -> EnrolOutcome in
            // Before the token is used: the network's origin is public (`GET /api/v1/hub`), so
            // refusing it tells a guesser nothing, and the box's owner can retry with its own id.
            for try await _ in try await connection.query("SELECT 1 FROM network WHERE alert_origin = \(nodeID)", logger: logger).decode(Int32.self) {
                return .nodeReserved
            }
            var name: String?
            for try await (n) in try await connection.query("""
                UPDATE enrolment_tokens SET used_at = now(), used_by = \(nodeID)
                WHERE token_hash = \(Self.hash(token)) AND used_at IS NULL AND expires_at > now()
                RETURNING name
                """, logger: logger).decode(String.self) { name = n }
            guard let name else { return .tokenRefused }
            var holder: Int64?
            for try await (h) in try await connection.query("SELECT node_id FROM boxes WHERE name = \(name)", logger: logger).decode(Int64.self) {
                holder = h
            }
            if let holder, holder != nodeID { throw EnrolConflict(name: name, nodeEnrolled: false) }
            // A node already enrolled under another name cannot be taken over by a token made for
            // a different box (a cloned card, or someone who read the node id in the feed): a
            // box that lost its credential joins again with a token made for its own name.
            for try await (existing) in try await connection.query("SELECT name FROM boxes WHERE node_id = \(nodeID)", logger: logger).decode(String.self) {
                if existing != name { throw EnrolConflict(name: existing, nodeEnrolled: true) }
            }
            try await connection.query("""
                INSERT INTO boxes (node_id, name, credential_hash) VALUES (\(nodeID), \(name), \(Self.hash(credential)))
                ON CONFLICT (node_id) DO UPDATE SET name = excluded.name, credential_hash = excluded.credential_hash,
                    revoked_at = NULL, enrolled_at = now()
                """, logger: logger)
            return .enrolled(name: name, credential: credential)
        }
    }

    struct EnrolConflict: Error {
        let name: String
        /// The node is enrolled under `name` already (else: `name` belongs to another node).
        let nodeEnrolled: Bool
    }

    /// Whether `credential` is the current, unrevoked one of its node; marks the contact.
    public func authenticate(_ credential: BoxCredential) async throws -> Bool {
        // The contact is written at most every 10 s a box (it polls the feed constantly, and every
        // row write is WAL): one statement either way.
        let node = Int64(bitPattern: credential.node)
        let hash = Self.hash(credential.secret)
        let rows = try await bounded.query("""
            WITH touched AS (
                UPDATE boxes SET last_contact = now()
                WHERE node_id = \(node) AND credential_hash = \(hash) AND revoked_at IS NULL
                  AND (last_contact IS NULL OR last_contact < now() - interval '10 seconds')
            )
            SELECT node_id FROM boxes WHERE node_id = \(node) AND credential_hash = \(hash) AND revoked_at IS NULL
            """, logger: logger)
        for try await _ in rows.decode(Int64.self) { return true }
        return false
    }

    /// Of the credentials feed streams were opened with (`FeedStreams`), the hashes that still
    /// hold (the box enrolled with that secret, not revoked); their boxes' last contact becomes
    /// now. One statement for every stream of the process, however many.
    func credentialsStillHeld(_ held: [(node: UInt64, hash: String)]) async throws -> Set<String> {
        guard !held.isEmpty else { return [] }
        let nodes = held.map { Int64(bitPattern: $0.node) }
        let hashes = held.map(\.hash)
        let rows = try await bounded.query("""
            WITH held(node, hash) AS (SELECT * FROM unnest(\(nodes)::bigint[], \(hashes)::text[])),
            valid AS (
                SELECT DISTINCT b.node_id, h.hash FROM boxes b JOIN held h ON b.node_id = h.node AND b.credential_hash = decode(h.hash, 'hex')
                WHERE b.revoked_at IS NULL
            ),
            touched AS (
                UPDATE boxes SET last_contact = now()
                WHERE node_id IN (SELECT node_id FROM valid) AND (last_contact IS NULL OR last_contact < now() - interval '10 seconds')
            )
            SELECT hash FROM valid
            """, logger: logger)
        var valid: Set<String> = []
        for try await hash in rows.decode(String.self) { valid.insert(hash) }
        return valid
    }

    /// The credential's hash as the hub stores it, in hex (`credentialsStillHeld`).
    static func hashHex(_ secret: String) -> String {
        SHA256.hash(data: Array(secret.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Revokes the box called `name`: its credential stops working, and each of its signing keys
    /// is revoked on the feed (`BoxKeys`), in one transaction. False when there is no such box
    /// (or it is revoked already).
    public func revoke(name: String, nowSeconds: UInt32) async throws -> Bool {
        let network = try await networkSigningKey()
        return try await bounded.withTransaction(logger: logger) { connection -> Bool in
            // After any certification under way: none adds a key to a box revoked here.
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.boxKeysLock))", logger: logger)
            var node: Int64?
            for try await (n) in try await connection.query("""
                UPDATE boxes SET revoked_at = now() WHERE name = \(name) AND revoked_at IS NULL RETURNING node_id
                """, logger: logger).decode(Int64.self) { node = n }
            guard let node else { return false }
            _ = try await revokeKeys(of: node, network: network, nowSeconds: nowSeconds, connection)
            return true
        }
    }

    static func hash(_ text: String) -> ByteBuffer {
        ByteBuffer(bytes: Array(SHA256.hash(data: Array(text.utf8))))
    }
}
