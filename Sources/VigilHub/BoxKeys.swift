import Foundation
import Logging
import NIOCore
import PostgresNIO
import VigilEvents
import VigilTrust

/// The network's key at the hub (docs/signed-frames.md, "The hub"): it certifies each box's
/// signing key when the box asks with its own credential (`vigil hub join` does), and revokes a
/// box's keys when the box is revoked, putting each revocation on the feed.
///
/// The key lives in the database, made by the first hub process that needs it: every hub of one
/// database is the one network and signs with the one key (`LocalCluster`'s backups keep it with
/// everything else). Whoever holds the database holds the key; a hub's database is already what a
/// network trusts most (every box's credential hash, every alert).
extension HubDatabase {
    /// How long a certificate the hub issues is valid: as long as `vigil keys certify`'s default.
    /// A stolen box is stopped by its revocation, not by its certificate running out.
    public static let certificateDays: UInt32 = 5 * 365

    public enum Certified: Sendable, Equatable {
        case certified(BoxCertificate, network: NetworkPublicKey, revokedKeys: Int)
        /// Another box, enrolled now or before, or the network's own alert origin, has the same
        /// 32-bit node id a frame carries: certifying this key would let it speak for that one.
        case nodeIDClash(holder: String)
        /// The key is certified for another box already.
        case keyTaken
        /// This key of the box was revoked: every box refuses it for good; a new one is needed.
        case keyRevoked
        /// The box has had `maximumKeysPerBox` keys since it joined: its owner revokes it and it
        /// joins anew.
        case tooManyKeys
        /// The box got `newKeysPerInterval` new keys in the last `newKeyIntervalSeconds`.
        case tooSoon
        /// The box was revoked (since its credential was checked).
        case revoked
    }

    /// Keys one box may have certified between two joins: a new card now and then, not a flood
    /// of revocations for every box to keep and relay.
    public static let maximumKeysPerBox = 8
    /// A box gets at most `newKeysPerInterval` new keys in this long (a renewal of the same key,
    /// at any time): room for a card replaced just after joining, not for a flood.
    public static let newKeyIntervalSeconds = 3_600
    public static let newKeysPerInterval = 2

    /// The network's signing key, made once (the first hub process to ask wins; the others read it).
    public func networkSigningKey() async throws -> NetworkSigningKey {
        let candidate = NetworkSigningKey()
        let seed = try await bounded.withTransaction(logger: logger) { connection -> ByteBuffer? in
            try await connection.query("""
                INSERT INTO network_signing_key (seed) VALUES (\(ByteBuffer(bytes: candidate.seed))) ON CONFLICT DO NOTHING
                """, logger: logger)
            var seed: ByteBuffer?
            for try await (s) in try await connection.query("SELECT seed FROM network_signing_key", logger: logger).decode(ByteBuffer.self) {
                seed = s
            }
            return seed
        }
        guard let seed else { throw HubError.database("the network's signing key is missing after it was made") }
        do {
            return try NetworkSigningKey(seed: seed.readableBytesView)
        } catch {
            throw HubError.database("the network's signing key in the database is unreadable: \(error)")
        }
    }

    /// Certifies `boxKey` as the key of `node` (an enrolled, unrevoked box: the caller checked
    /// its credential) from `nowSeconds` for `certificateDays`. A box that comes with a new key
    /// (its card was replaced, or someone else holds its old one) has its other keys revoked in
    /// the same transaction, each revocation on the feed.
    public func certify(node: UInt64, boxKey: BoxPublicKey, nowSeconds: UInt32) async throws -> Certified {
        let network = try await networkSigningKey()
        let nodeID = Int64(bitPattern: node)
        let short = UInt32(truncatingIfNeeded: node)
        let key = ByteBuffer(bytes: boxKey.rawRepresentation)
        do {
            return try await bounded.withTransaction(logger: logger) { connection -> Certified in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.boxKeysLock))", logger: logger)
                // A box revoked since its credential was checked gets nothing.
                var enrolled = false
                for try await _ in try await connection.query("""
                    SELECT 1 FROM boxes WHERE node_id = \(nodeID) AND revoked_at IS NULL
                    """, logger: logger).decode(Int32.self) { enrolled = true }
                guard enrolled else { return .revoked }
                // Frames name their origin by the node id's low 32 bits: no two boxes the network
                // ever enrolled may share them (a revoked box's alerts may still be live).
                for try await (origin) in try await connection.query("SELECT alert_origin FROM network", logger: logger).decode(Int64.self)
                where UInt32(truncatingIfNeeded: UInt64(bitPattern: origin)) == short {
                    return .nodeIDClash(holder: "the network's own alerts")
                }
                for try await (name) in try await connection.query("""
                    SELECT name FROM boxes WHERE node_id <> \(nodeID) AND (node_id & 4294967295) = \(Int64(short)) LIMIT 1
                    """, logger: logger).decode(String.self) {
                    return .nodeIDClash(holder: name)
                }
                // What the network knows of this key, and of the box's keys.
                var held: (node: Int64, revoked: Bool)?
                for try await (owner, revoked) in try await connection.query("""
                    SELECT node_id, revoked_at IS NOT NULL FROM box_keys WHERE box_key = \(key)
                    """, logger: logger).decode((Int64, Bool).self) { held = (owner, revoked) }
                if let held {
                    guard held.node == nodeID else { return .keyTaken }
                    guard !held.revoked else { return .keyRevoked }
                } else {
                    var keys = 0
                    var recent = 0
                    // Keys since the box last joined: one revoked and joined anew starts again.
                    for try await (count, young) in try await connection.query("""
                        SELECT count(*) FILTER (WHERE k.certified_at >= b.enrolled_at),
                               count(*) FILTER (WHERE k.certified_at > now() - make_interval(secs => \(Double(Self.newKeyIntervalSeconds))))
                        FROM box_keys k JOIN boxes b ON b.node_id = k.node_id WHERE k.node_id = \(nodeID)
                        """, logger: logger).decode((Int64, Int64).self) { (keys, recent) = (Int(count), Int(young)) }
                    guard keys < Self.maximumKeysPerBox else { return .tooManyKeys }
                    guard recent < Self.newKeysPerInterval else { return .tooSoon }
                }
                let certificate = try network.certify(node: short, boxKey: boxKey, issued: nowSeconds,
                                                      expires: nowSeconds &+ min(Self.certificateDays * 86_400, UInt32.max - nowSeconds))
                let revoked = try await revokeKeys(of: nodeID, except: boxKey, network: network, nowSeconds: nowSeconds, connection)
                try await connection.query("""
                    INSERT INTO box_keys (node_id, box_key, certificate) VALUES (\(nodeID), \(key), \(ByteBuffer(bytes: certificate.bytes)))
                    ON CONFLICT (node_id, box_key) DO UPDATE SET certificate = excluded.certificate
                    """, logger: logger)
                return .certified(certificate, network: network.publicKey, revokedKeys: revoked)
            }
        } catch let error as PostgresTransactionError {
            if let closure = error.closureError as? SignedFrameError { throw HubError.database("cannot certify: \(closure)") }
            throw error
        }
    }

    /// Revokes the keys of `nodeID` (all, or all but `except`) that are not revoked yet, and puts
    /// each revocation on the feed, inside the caller's transaction. Returns how many.
    func revokeKeys(of nodeID: Int64, except kept: BoxPublicKey? = nil, network: NetworkSigningKey, nowSeconds: UInt32,
                    _ connection: PostgresConnection) async throws -> Int {
        var keys: [(key: BoxPublicKey, name: String)] = []
        for try await (raw, name) in try await connection.query("""
            UPDATE box_keys k SET revoked_at = now() FROM boxes b
            WHERE k.node_id = \(nodeID) AND b.node_id = k.node_id AND k.revoked_at IS NULL
              AND k.box_key <> \(ByteBuffer(bytes: kept?.rawRepresentation ?? []))
            RETURNING k.box_key, b.name
            """, logger: logger).decode((ByteBuffer, String).self) {
            keys.append((try BoxPublicKey(rawRepresentation: raw.readableBytesView), name))
        }
        guard !keys.isEmpty else { return 0 }
        let short = UInt32(truncatingIfNeeded: UInt64(bitPattern: nodeID))
        var items: [NewFeedItem] = []
        for (key, name) in keys {
            var revoked = BoxKeyRevoked()
            revoked.revocation = Data(try network.revoke(node: short, boxKey: key, at: nowSeconds).bytes)
            revoked.name = name
            let (kind, payload) = EventCodec.encode(.boxKeyRevoked(revoked))
            items.append(NewFeedItem(seq: 0, kind: kind, timeUs: UInt64(nowSeconds) * 1_000_000, payload: payload))
        }
        try await appendToFeed(items, origin: 0, epoch: 0, connection)
        logger.warning("hub: box keys revoked; every box refuses their frames from its next feed read",
                       metadata: ["node": "\(String(UInt64(bitPattern: nodeID), radix: 16))", "keys": "\(keys.count)"])
        return keys.count
    }

    /// The lock certifications take, so two boxes cannot be given one 32-bit node id at once.
    static let boxKeysLock: Int64 = 7_431_004
}
