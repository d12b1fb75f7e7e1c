import Crypto
import Foundation
import Synchronization
import VigilHubProtocol

/// Credentials the database accepted in the last `lifetime`, for long polls only.
///
/// A box holds the feed with a long poll at all times and asks again after every answer: with
/// 10,000 boxes, each feed item meant 10,000 credential checks in PostgreSQL, a quarter of the
/// hub's CPU and most of the database's, all in the second that every box needed its answer.
///
/// The contract: only a long poll (`feed` with `wait` > 0) may be let in from here. Uploads,
/// sync state, key files and plain reads always ask the database, so a revoked box is refused
/// those at once. A revoked box's new long polls are refused within `lifetime`; a long poll open
/// when it was revoked ran to its end (up to 30 s) before this cache existed, so revocation was
/// never quicker than that for the feed. A wrong secret for a cached node misses (the hash is
/// compared), and refusals are never kept: a flood of bad credentials costs what it did.
final class CredentialCache: Sendable {
    /// Longer than 10,000 boxes take to hear an item here (about 5 s on 2 cores), so their
    /// re-polls after it do not all ask the database; half of a long poll's 30 s.
    static let lifetime: Duration = .seconds(15)
    /// Boxes remembered at most; past it, expired entries go, then all of them.
    static let capacity = 100_000

    private struct Entry {
        var hash: [UInt8]
        var checkedAt: ContinuousClock.Instant
    }

    private let entries = Mutex<[UInt64: Entry]>([:])

    static func hash(_ secret: String) -> [UInt8] { Array(SHA256.hash(data: Array(secret.utf8))) }

    /// Whether the database accepted this credential less than `lifetime` ago.
    func accepts(_ credential: BoxCredential, now: ContinuousClock.Instant = .now) -> Bool {
        let hash = Self.hash(credential.secret)
        return entries.withLock { entries in
            guard let entry = entries[credential.node], now - entry.checkedAt < Self.lifetime else { return false }
            return Self.equal(entry.hash, hash)
        }
    }

    /// The database accepted this credential in a check that began at `now` (taken before the
    /// query: a check that began before a revocation committed counts from then).
    func remember(_ credential: BoxCredential, now: ContinuousClock.Instant) {
        let entry = Entry(hash: Self.hash(credential.secret), checkedAt: now)
        entries.withLock { entries in
            if entries.count >= Self.capacity && entries[credential.node] == nil {
                entries = entries.filter { now - $0.value.checkedAt < Self.lifetime }
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[credential.node] = entry
        }
    }

    /// A refusal of this very credential forgets it (revoked or replaced). A refusal of another
    /// secret for the node does not: node ids are public (every feed item names its origin), and
    /// junk credentials must not evict a box and bring back a database check per poll.
    func forget(_ credential: BoxCredential) {
        let hash = Self.hash(credential.secret)
        entries.withLock { entries in
            if let entry = entries[credential.node], Self.equal(entry.hash, hash) { entries[credential.node] = nil }
        }
    }

    var count: Int { entries.withLock { $0.count } }

    /// Compares every byte, so the time taken says nothing about where they differ.
    private static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}
