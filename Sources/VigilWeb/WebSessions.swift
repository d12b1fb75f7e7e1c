import Crypto
import Foundation
import VigilAccess
import VigilHubProtocol

/// Signed-in browsers and the limit on failed sign-ins, in memory: a restart signs everyone out,
/// which on a box that restarts rarely (and then on purpose) costs a sign-in, never safety.
///
/// A session lasts `lifetimeSeconds` from its last use (a volunteer's shift, not forever), and
/// ends when the admin password changes. Sign-in attempts are counted per client address (the
/// full address, IPv4-mapped ones as IPv4: `WebContext.signInKey`), each from before its
/// password is checked: after `allowedFailures` within `failureWindowSeconds` that address
/// waits until the window passes. At most
/// `maximumChecking` passwords are checked at once; more attempts are refused (503) at once.
/// Every count is bounded: the tables drop their oldest entries beyond `maximumEntries`.
actor WebSessions {
    struct Session: Sendable {
        var csrf: String
        /// The admin hash it was signed in with.
        var passwordHash: String
        var lastUsedSeconds: UInt64
    }

    static let lifetimeSeconds: UInt64 = 12 * 3_600
    static let allowedFailures = 5
    static let failureWindowSeconds: UInt64 = 15 * 60
    static let maximumEntries = 1_024

    private var sessions: [String: Session] = [:]
    private var failures: [String: [UInt64]] = [:]
    /// Monotonic seconds (injected: tests drive it).
    nonisolated let now: @Sendable () -> UInt64

    init(now: @escaping @Sendable () -> UInt64) { self.now = now }

    /// Opens a session for a browser that gave the password whose hash is `passwordHash`; returns
    /// its cookie token and CSRF token.
    func open(passwordHash: String) -> (token: String, csrf: String) {
        let t = now()
        sessions = sessions.filter { t - $0.value.lastUsedSeconds < Self.lifetimeSeconds }
        if sessions.count >= Self.maximumEntries, let oldest = sessions.min(by: { $0.value.lastUsedSeconds < $1.value.lastUsedSeconds }) {
            sessions[oldest.key] = nil
        }
        let token = Self.randomText()
        let csrf = Self.randomText()
        sessions[Self.digest(token)] = Session(csrf: csrf, passwordHash: passwordHash, lastUsedSeconds: t)
        return (token, csrf)
    }

    /// The live session `token` names, if the password it was signed in with is still the admin
    /// password. A use (`touch`) keeps it alive; a live stream only looks (a page left open is not
    /// someone using it).
    func session(_ token: String, currentHash: String?, touch: Bool = true) -> Session? {
        let key = Self.digest(token)
        guard var s = sessions[key] else { return nil }
        let t = now()
        guard t - s.lastUsedSeconds < Self.lifetimeSeconds, let currentHash, s.passwordHash == currentHash else {
            sessions[key] = nil
            return nil
        }
        if touch {
            s.lastUsedSeconds = t
            sessions[key] = s
        }
        return s
    }

    func close(_ token: String) {
        sessions[Self.digest(token)] = nil
    }

    /// Sign-in attempts being checked now (each runs scrypt): beyond this many, more are refused
    /// at once, so a flood neither queues up nor delays staff for long.
    static let maximumChecking = 4
    private var checking = 0

    enum SignInTurn: Equatable {
        /// Check the password; the attempt is already counted as a failure until `finishSignIn`.
        case go
        /// This client failed too often: wait this many seconds.
        case wait(UInt64)
        /// Too many sign-ins are being checked at once.
        case busy
    }

    /// Takes an attempt for `client` before its password is checked, so parallel attempts cannot
    /// all slip under the limit: each counts as a failure from now until it succeeds.
    func beginSignIn(client: String) -> SignInTurn {
        let t = now()
        let recent = (failures[client] ?? []).filter { t - $0 < Self.failureWindowSeconds }
        failures[client] = recent.isEmpty ? nil : recent
        if recent.count >= Self.allowedFailures, let oldest = recent.first {
            return .wait(Self.failureWindowSeconds - (t - oldest))
        }
        guard checking < Self.maximumChecking else { return .busy }
        checking += 1
        if failures[client] == nil && failures.count >= Self.maximumEntries {
            // Bounded memory: forget the address whose last failure is oldest.
            if let stale = failures.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) })?.key { failures[stale] = nil }
        }
        failures[client, default: []].append(t)
        return .go
    }

    /// The attempt `beginSignIn` took is over: a success clears the client's failures.
    func finishSignIn(client: String, succeeded: Bool) {
        checking -= 1
        if succeeded { failures[client] = nil }
    }

    static func randomText() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = rng.next() }
        return Base64URL.encode(bytes)
    }

    /// Sessions are kept by their token's hash: a memory dump does not hand out live cookies.
    static func digest(_ token: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(token.utf8))))
    }
}
