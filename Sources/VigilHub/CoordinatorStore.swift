import Foundation
import Logging
import NIOCore
import PostgresNIO
import VigilEvents
import VigilAccess
import VigilHubProtocol

/// Coordinators, their sessions and what they do at the hub, in PostgreSQL like everything else
/// (any hub process serves any coordinator).
///
/// Contract: a session is a random token the browser holds in an HttpOnly cookie; the database
/// keeps its SHA-256 and a CSRF token every form must carry. Five failed sign-ins for one name in
/// 15 minutes refuse that name for the rest of the window, whichever hub process is asked.
extension HubDatabase {
    public static let sessionSeconds = 12 * 3_600
    public static let failuresAllowed = 5
    public static let failureWindowSeconds = 15 * 60
    /// Failed sign-ins per client, whatever the names, in the window.
    public static let clientFailuresAllowed = 20

    /// Failed sign-ins for one name from every client together, in the window: guessing from
    /// many addresses (an IPv6 /64 has 2^64) is bounded too. High, so that one guesser cannot
    /// lock a coordinator out cheaply; reaching it takes a hundred scrypt checks.
    public static let nameFailuresAllowed = 100

    struct FailureCount: Sendable {
        var named = 0
        var namedAge = 0.0
        var all = 0
        var allAge = 0.0
        var everywhere = 0
        var everywhereAge = 0.0
        /// The row this attempt added (a busy answer takes it back).
        var recorded: String?
    }

    /// Adds the coordinator `name`, or gives them a new password (their sessions end).
    public func setCoordinator(name: String, passwordHash: String) async throws {
        try await bounded.withTransaction(logger: logger) { connection in
            try await connection.query("""
                INSERT INTO coordinators (name, password_hash) VALUES (\(name), \(passwordHash))
                ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash
                """, logger: logger)
            try await connection.query("DELETE FROM sessions WHERE coordinator = \(name)", logger: logger)
        }
    }

    public enum SignIn: Sendable, Equatable {
        case signedIn(token: String, csrf: String)
        /// Unknown name or wrong password: one answer for both.
        case refused
        case rateLimited(retryAfterSeconds: Int)
        /// Too many password checks already wait their turn: nothing was checked or counted.
        case busy
    }

    /// Whether `name` can be a coordinator's (`vigil-hub coordinator` takes only such names):
    /// anything else is refused before it costs a query or a hash.
    public static func isCoordinatorName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && name.allSatisfy { $0.isLetter || $0.isNumber || "-_.@".contains($0) }
    }

    /// Checks a password (scrypt, off the event loops, at most two at a time) and opens a session.
    ///
    /// Every attempt is recorded and counted before the password is checked, under a lock per
    /// client: parallel attempts cannot all slip under the limit, and the rows of the window are
    /// all there are (older ones are deleted as attempts come). A client (`ClientAddress.key`)
    /// gets `failuresAllowed` failures per name and `clientFailuresAllowed` in all per window: a
    /// name is locked for the client that failed with it, never for the coordinator elsewhere
    /// (names are on the feed, in cancel reasons, for anyone with a box to read).
    public func signIn(name: String, password: String, client address: String) async throws -> SignIn {
        guard Self.isCoordinatorName(name), password.utf8.count <= 256 else { return .refused }
        let window = Double(Self.failureWindowSeconds)
        let counted = try await bounded.withTransaction(logger: logger) { connection -> FailureCount in
            // One client's attempts one at a time, so its counts are exact.
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.signInLock), hashtext(\(address)))", logger: logger)
            try await connection.query("DELETE FROM login_failures WHERE at < now() - make_interval(secs => \(window))", logger: logger)
            var counted = FailureCount()
            for try await (named, namedAge, all, allAge) in try await connection.query("""
                SELECT count(*) FILTER (WHERE name = \(name)),
                       coalesce(extract(epoch FROM now() - min(at) FILTER (WHERE name = \(name))), 0)::float8,
                       count(*), coalesce(extract(epoch FROM now() - min(at)), 0)::float8
                FROM login_failures WHERE client = \(address)
                """, logger: logger).decode((Int64, Double, Int64, Double).self) {
                counted = FailureCount(named: Int(named), namedAge: namedAge, all: Int(all), allAge: allAge)
            }
            for try await (n, age) in try await connection.query("""
                SELECT count(*), coalesce(extract(epoch FROM now() - min(at)), 0)::float8 FROM login_failures WHERE name = \(name)
                """, logger: logger).decode((Int64, Double).self) {
                counted.everywhere = Int(n)
                counted.everywhereAge = age
            }
            if counted.named < Self.failuresAllowed && counted.all < Self.clientFailuresAllowed && counted.everywhere < Self.nameFailuresAllowed {
                for try await ctid in try await connection.query(
                    "INSERT INTO login_failures (name, client) VALUES (\(name), \(address)) RETURNING ctid::text", logger: logger
                ).decode(String.self) { counted.recorded = ctid }
            }
            return counted
        }
        if counted.named >= Self.failuresAllowed {
            return .rateLimited(retryAfterSeconds: max(1, Self.failureWindowSeconds - Int(counted.namedAge)))
        }
        if counted.all >= Self.clientFailuresAllowed {
            return .rateLimited(retryAfterSeconds: max(1, Self.failureWindowSeconds - Int(counted.allAge)))
        }
        if counted.everywhere >= Self.nameFailuresAllowed {
            return .rateLimited(retryAfterSeconds: max(1, Self.failureWindowSeconds - Int(counted.everywhereAge)))
        }
        var stored: String?
        for try await (h) in try await bounded.query("SELECT password_hash FROM coordinators WHERE name = \(name)", logger: logger)
            .decode(String.self) { stored = h }
        // An unknown name costs the same scrypt as a known one: timing says nothing.
        let hash = stored ?? Self.decoyHash
        // The checks waiting are bounded: a flood of sign-ins is answered "busy" at once instead
        // of queueing scrypt work (and requests) without end. A busy answer checked nothing, so
        // it does not count against the name.
        guard let matches = await Self.scrypt.run(maxWaiting: Self.scryptWaiting, { PasswordHash.verify(password, against: hash) }) else {
            if let recorded = counted.recorded {
                try await bounded.query("DELETE FROM login_failures WHERE ctid = \(recorded)::tid", logger: logger)
            }
            return .busy
        }
        guard matches, stored != nil else { return .refused } // the attempt stays counted
        let token = Self.randomText()
        let csrf = Self.randomText()
        try await bounded.withTransaction(logger: logger) { connection in
            try await connection.query("DELETE FROM login_failures WHERE name = \(name) AND client = \(address)", logger: logger)
            try await connection.query("DELETE FROM sessions WHERE expires_at < now()", logger: logger)
            try await connection.query("""
                INSERT INTO sessions (token_hash, coordinator, csrf, expires_at)
                VALUES (\(Self.hash(token)), \(name), \(csrf), now() + make_interval(secs => \(Double(Self.sessionSeconds))))
                """, logger: logger)
        }
        return .signedIn(token: token, csrf: csrf)
    }

    /// The advisory lock space of sign-in attempts (the feed's is `feedLock`).
    static let signInLock: Int32 = 7431003
    /// Password checks at once, per hub process: sign-in attempts cannot take every core.
    static let scrypt = Gate(width: 2)
    /// Password checks that may wait for one of those, at most.
    static let scryptWaiting = 8

    /// A hash of no password anyone has, so unknown names take as long as known ones.
    static let decoyHash = (try? PasswordHash.make(randomText())) ?? ""

    public struct Session: Sendable, Equatable {
        public var coordinator: String
        public var csrf: String
    }

    /// The live session a cookie names, if any.
    public func session(token: String) async throws -> Session? {
        for try await (name, csrf) in try await bounded.query("""
            SELECT coordinator, csrf FROM sessions WHERE token_hash = \(Self.hash(token)) AND expires_at > now()
            """, logger: logger).decode((String, String).self) {
            return Session(coordinator: name, csrf: csrf)
        }
        return nil
    }

    public func signOut(token: String) async throws {
        try await bounded.query("DELETE FROM sessions WHERE token_hash = \(Self.hash(token))", logger: logger)
    }

    static func randomText() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = rng.next() }
        return Base64URL.encode(bytes)
    }

    // MARK: What coordinators do

    /// The origin of alerts coordinators raise (one per database, so every hub process agrees).
    public func networkAlertOrigin() async throws -> UInt64 {
        for try await (o) in try await bounded.query("SELECT alert_origin FROM network LIMIT 1", logger: logger).decode(Int64.self) {
            return UInt64(bitPattern: o)
        }
        throw HubError.configuration("the database has no network row (migration 3 did not run)")
    }

    /// Raises an alert for every box of the network; returns its id.
    public func raiseAlert(by coordinator: String, kind: AlertKind, severity: AlertSeverity, text: String,
                           validSeconds: Int, nowMicroseconds: UInt64) async throws -> AlertID {
        let origin = try await networkAlertOrigin()
        return try await bounded.withTransaction(logger: logger) { connection -> AlertID in
            var counter: Int64 = 0
            for try await (c) in try await connection.query("SELECT nextval('coordinator_alert_counter')", logger: logger).decode(Int64.self) {
                counter = c
            }
            var alert = Alert()
            alert.id = AlertID(origin: origin, counter: UInt32(truncatingIfNeeded: counter))
            alert.kind = kind
            alert.severity = severity
            alert.text = text
            alert.expiresAtUs = nowMicroseconds &+ UInt64(validSeconds) &* 1_000_000
            let (k, payload) = EventCodec.encode(.alertRaised(alert))
            try await appendToFeed([NewFeedItem(seq: 0, kind: k, timeUs: nowMicroseconds, payload: payload)],
                                   origin: 0, epoch: 0, coordinator: coordinator, connection)
            return alert.id
        }
    }

    public enum CoordinatorAction: Sendable, Equatable {
        case done
        case unknownAlert
        /// Already done (a second click, or another coordinator): nothing new is sent.
        case alreadyDone
        /// The alert was cancelled: there is nothing to answer any more.
        case ended
    }

    /// Acknowledges a call for help raised at a box ("help is coming"), for every box to hear.
    public func acknowledge(_ id: AlertID, by coordinator: String, nowMicroseconds: UInt64) async throws -> CoordinatorAction {
        let network = try await networkAlertOrigin()
        guard id.origin != network else { return .unknownAlert } // the network's own alerts are cancelled, not answered
        return try await answer(id, with: .alertAcknowledged, by: coordinator, nowMicroseconds: nowMicroseconds) { raised in
            var ack = AlertAcknowledged()
            ack.id = id
            ack.expiresAtUs = raised.expiresAtUs
            ack.severity = raised.severity
            return .alertAcknowledged(ack)
        }
    }

    /// Cancels an alert a coordinator raised (boxes cancel their own).
    public func cancelNetworkAlert(_ id: AlertID, by coordinator: String, nowMicroseconds: UInt64) async throws -> CoordinatorAction {
        let network = try await networkAlertOrigin()
        guard id.origin == network else { return .unknownAlert }
        return try await answer(id, with: .alertCancelled, by: coordinator, nowMicroseconds: nowMicroseconds) { raised in
            var cancel = AlertCancelled()
            cancel.id = id
            cancel.by = network
            cancel.reason = "cancelled by \(coordinator) at the hub"
            cancel.expiresAtUs = raised.expiresAtUs
            cancel.severity = raised.severity
            return .alertCancelled(cancel)
        }
    }

    /// A coordinator's answer to the alert `id` (made by `make` from the alert as raised), put
    /// on the feed once: under the feed's lock, so two coordinators clicking together send one.
    private func answer(_ id: AlertID, with kind: EventKind, by coordinator: String, nowMicroseconds: UInt64,
                        make: @escaping @Sendable (Alert) -> EventBody) async throws -> CoordinatorAction {
        try await bounded.withTransaction(logger: logger) { connection -> CoordinatorAction in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.feedLock))", logger: logger)
            guard let raised = try await raisedAlert(id, connection) else { return .unknownAlert }
            if try await feedHas(.alertCancelled, of: id, fromCoordinators: false, connection) {
                return kind == .alertCancelled ? .alreadyDone : .ended
            }
            if try await feedHas(kind, of: id, fromCoordinators: true, connection) { return .alreadyDone }
            let (k, payload) = EventCodec.encode(make(raised))
            try await appendToFeed([NewFeedItem(seq: 0, kind: k, timeUs: nowMicroseconds, payload: payload)],
                                   origin: 0, epoch: 0, coordinator: coordinator, connection)
            return .done
        }
    }

    /// The alert as raised, from the feed.
    private func raisedAlert(_ id: AlertID, _ connection: PostgresConnection) async throws -> Alert? {
        for try await (payload) in try await connection.query("""
            SELECT payload FROM feed WHERE kind = \(Int32(EventKind.alertRaised.rawValue))
              AND (origin_node = \(Int64(bitPattern: id.origin)) OR origin_node = 0) ORDER BY position
            """, logger: logger).decode(ByteBuffer.self) {
            if case .alertRaised(let a)? = try? EventCodec.decode(kind: UInt32(EventKind.alertRaised.rawValue),
                                                                  payload: Array(payload.readableBytesView), sequence: 0),
               a.id == id { return a }
        }
        return nil
    }

    /// Whether the feed holds an item of `kind` (an acknowledgement or a cancel) of alert `id`:
    /// from coordinators only, or from anyone.
    private func feedHas(_ kind: EventKind, of id: AlertID, fromCoordinators: Bool, _ connection: PostgresConnection) async throws -> Bool {
        for try await (payload) in try await connection.query("""
            SELECT payload FROM feed WHERE kind = \(Int32(kind.rawValue)) AND (origin_node = 0 OR NOT \(fromCoordinators))
            """, logger: logger).decode(ByteBuffer.self) {
            switch try? EventCodec.decode(kind: UInt32(kind.rawValue), payload: Array(payload.readableBytesView), sequence: 0) {
            case .alertAcknowledged(let k)?: if k.id == id { return true }
            case .alertCancelled(let c)?: if c.id == id { return true }
            default: continue
            }
        }
        return false
    }
}
