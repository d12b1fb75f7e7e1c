import Crypto
import Foundation
import VigilAccess
import VigilHubProtocol

/// Signed-in browsers and the limit on failed sign-ins, in memory: a restart signs everyone out,
/// which on a box that restarts rarely (and then on purpose) costs a sign-in, never safety.
///
/// A session lasts `lifetimeSeconds` from its last use (a volunteer's shift, not forever), and
/// ends when the admin password changes. Failed sign-ins are counted per client address: after
/// `allowedFailures` within `failureWindowSeconds` that address waits until the window passes.
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
    private let now: @Sendable () -> UInt64

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

    /// The live session `token` names (its use keeps it alive), if the password it was signed
    /// in with is still the admin password.
    func session(_ token: String, currentHash: String?) -> Session? {
        let key = Self.digest(token)
        guard var s = sessions[key] else { return nil }
        let t = now()
        guard t - s.lastUsedSeconds < Self.lifetimeSeconds, let currentHash, s.passwordHash == currentHash else {
            sessions[key] = nil
            return nil
        }
        s.lastUsedSeconds = t
        sessions[key] = s
        return s
    }

    func close(_ token: String) {
        sessions[Self.digest(token)] = nil
    }

    /// Seconds `client` must wait before its next sign-in attempt (0: it may try now).
    func waitBeforeSignIn(client: String) -> UInt64 {
        let t = now()
        let recent = (failures[client] ?? []).filter { t - $0 < Self.failureWindowSeconds }
        failures[client] = recent.isEmpty ? nil : recent
        guard recent.count >= Self.allowedFailures, let oldest = recent.first else { return 0 }
        return Self.failureWindowSeconds - (t - oldest)
    }

    func failed(client: String) {
        if failures[client] == nil && failures.count >= Self.maximumEntries {
            // Bounded memory: forget the address whose last failure is oldest.
            if let stale = failures.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) })?.key { failures[stale] = nil }
        }
        failures[client, default: []].append(now())
        if let n = failures[client]?.count, n > Self.allowedFailures * 2 { failures[client]?.removeFirst(n - Self.allowedFailures * 2) }
    }

    func succeeded(client: String) {
        failures[client] = nil
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
