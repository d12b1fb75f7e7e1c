import Crypto
import Foundation
import SwiftProtobuf
import VigilEvents
import VigilHex

/// The documents of the sync API (`/api/v1`, docs/hub.md "Hub"; the OpenAPI document is
/// `Sources/VigilHub/openapi.yaml`). JSON with snake_case keys; 64-bit numbers as JSON numbers
/// (node ids, which use all 64 bits, as 16 hex digits).

/// A box's events, `from` through `through` of its log under `epoch`. Sequences in that range
/// that are not listed do not leave the box (`SharePolicy`). `urgent` batches carry calls for help
/// ahead of a backlog: the hub stores them but its contiguous mark moves only with ordinary ones.
public struct UploadBatch: Codable, Sendable, Equatable {
    public var node: String
    public var epoch: UInt32
    /// The first sequence of this epoch: the hub's mark for a new epoch starts just before it
    /// (earlier sequences were acknowledged under an earlier epoch).
    public var epochFirst: UInt64
    public var from: UInt64
    public var through: UInt64
    public var urgent: Bool
    public var events: [UploadedEvent]
    /// What the box says of itself with each batch, for the coordinators' page (optional: older
    /// boxes send none).
    public var box: BoxReport?

    enum CodingKeys: String, CodingKey { case node, epoch, epochFirst = "epoch_first", from, through, urgent, events, box }

    public init(node: String, epoch: UInt32, epochFirst: UInt64 = 1, from: UInt64, through: UInt64, urgent: Bool = false,
                events: [UploadedEvent], box: BoxReport? = nil) {
        self.node = node
        self.epoch = epoch
        self.epochFirst = epochFirst
        self.from = from
        self.through = through
        self.urgent = urgent
        self.events = events
        self.box = box
    }
}

/// The box's own account with a batch: where it stands (`site.name`, `site.location`) and how
/// much of its log is still to send after this batch.
public struct BoxReport: Codable, Sendable, Equatable {
    public var site: String?
    /// "latitude,longitude" in degrees, as `site.location` holds it.
    public var location: String?
    /// Log records after this batch that the hub does not hold yet.
    public var backlog: UInt64

    public init(site: String? = nil, location: String? = nil, backlog: UInt64) {
        self.site = site
        self.location = location
        self.backlog = backlog
    }

    /// The location as degrees, when it is two numbers in range.
    public var coordinates: GeoPoint? { location.flatMap(GeoPoint.init(text:)) }
}

/// One event as it leaves the box: its identity (node, epoch, `seq`), its content and the
/// content's hash. In JSON the payload (the kind's protobuf message) is base64 and the hash hex;
/// in the binary body both are bytes.
public struct UploadedEvent: Codable, Sendable, Equatable {
    public var seq: UInt64
    public var kind: UInt32
    public var timeUs: UInt64
    public var payload: [UInt8]
    public var hash: [UInt8]

    enum CodingKeys: String, CodingKey { case seq, kind, timeUs = "time_us", payload, hash }

    public init(seq: UInt64, kind: UInt32, timeUs: UInt64, payload: [UInt8], hash: [UInt8]) {
        self.seq = seq
        self.kind = kind
        self.timeUs = timeUs
        self.payload = payload
        self.hash = hash
    }

    /// The event as it is uploaded, or nil when it does not leave the box.
    public init?(_ event: Event, policy: SharePolicy) {
        guard let body = policy.uploaded(event.body) else { return nil }
        let (kind, payload) = EventCodec.encode(body)
        self.init(seq: event.sequence, kind: kind, timeUs: event.timeMicroseconds, payload: payload,
                  hash: ContentHash.bytes(kind: kind, timeMicroseconds: event.timeMicroseconds, payload: payload))
    }

    public init(from decoder: any Swift.Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        seq = try c.decode(UInt64.self, forKey: .seq)
        kind = try c.decode(UInt32.self, forKey: .kind)
        timeUs = try c.decode(UInt64.self, forKey: .timeUs)
        guard let payload = Data(base64Encoded: try c.decode(String.self, forKey: .payload)) else {
            throw DecodingError.dataCorruptedError(forKey: .payload, in: c, debugDescription: "event \(seq): the payload is not base64")
        }
        guard let hash = Hex.decode(try c.decode(String.self, forKey: .hash)), hash.count == 32 else {
            throw DecodingError.dataCorruptedError(forKey: .hash, in: c, debugDescription: "event \(seq): the hash is not 64 hex digits")
        }
        self.payload = Array(payload)
        self.hash = hash
    }

    public func encode(to encoder: any Swift.Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(seq, forKey: .seq)
        try c.encode(kind, forKey: .kind)
        try c.encode(timeUs, forKey: .timeUs)
        try c.encode(Data(payload).base64EncodedString(), forKey: .payload)
        try c.encode(Hex.encode(hash), forKey: .hash)
    }
}

/// The binary body of an upload (`Content-Type: application/x-protobuf`; `Protos/vigil/sync`):
/// what a box sends, the JSON document's fields with payloads and hashes as bytes.
extension UploadBatch {
    public static let protobufContentType = "application/x-protobuf"

    public func protobuf() throws -> [UInt8] {
        var m = Vigil_Sync_V1_UploadBatch()
        m.node = node
        m.epoch = epoch
        m.epochFirst = epochFirst
        m.from = from
        m.through = through
        m.urgent = urgent
        m.events = events.map { e in
            var u = Vigil_Sync_V1_UploadedEvent()
            u.seq = e.seq
            u.kind = e.kind
            u.timeUs = e.timeUs
            u.payload = Data(e.payload)
            u.hash = Data(e.hash)
            return u
        }
        if let box {
            var r = Vigil_Sync_V1_BoxReport()
            if let site = box.site { r.site = site }
            if let location = box.location { r.location = location }
            r.backlog = box.backlog
            m.box = r
        }
        return try m.serializedBytes()
    }

    /// A binary body read back; throws when the bytes are not one.
    public init(protobuf bytes: [UInt8]) throws {
        let m = try Vigil_Sync_V1_UploadBatch(serializedBytes: bytes)
        self.init(node: m.node, epoch: m.epoch, epochFirst: m.epochFirst, from: m.from, through: m.through, urgent: m.urgent,
                  events: m.events.map { UploadedEvent(seq: $0.seq, kind: $0.kind, timeUs: $0.timeUs, payload: Array($0.payload), hash: Array($0.hash)) },
                  box: m.hasBox ? BoxReport(site: m.box.hasSite ? m.box.site : nil, location: m.box.hasLocation ? m.box.location : nil,
                                            backlog: m.box.backlog) : nil)
    }
}

/// The content hash of an uploaded event: SHA-256 over kind, time and payload (each length- or
/// width-fixed, so no two events share an input), hex.
public enum ContentHash {
    public static func of(kind: UInt32, timeMicroseconds: UInt64, payload: [UInt8]) -> String {
        Hex.encode(bytes(kind: kind, timeMicroseconds: timeMicroseconds, payload: payload))
    }

    /// The same hash as bytes (the hub compares these: no text per event).
    public static func bytes(kind: UInt32, timeMicroseconds: UInt64, payload: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        withUnsafeBytes(of: kind.bigEndian) { hasher.update(bufferPointer: $0) }
        withUnsafeBytes(of: timeMicroseconds.bigEndian) { hasher.update(bufferPointer: $0) }
        hasher.update(data: payload)
        return Array(hasher.finalize())
    }
}

/// The hub's answer to an upload (200).
public struct UploadAnswer: Codable, Sendable, Equatable {
    public var epoch: UInt32
    /// Every event of this box's `epoch` at or below this is held (or never left the box).
    public var heldThrough: UInt64
    public var accepted: Int
    public var duplicates: Int

    enum CodingKeys: String, CodingKey { case epoch, heldThrough = "held_through", accepted, duplicates }

    public init(epoch: UInt32, heldThrough: UInt64, accepted: Int, duplicates: Int) {
        self.epoch = epoch
        self.heldThrough = heldThrough
        self.accepted = accepted
        self.duplicates = duplicates
    }
}

/// What the hub holds of a box (GET `/api/v1/boxes/{node}/sync`): per epoch, the contiguous
/// mark and the highest sequence stored.
public struct SyncState: Codable, Sendable, Equatable {
    public struct Epoch: Codable, Sendable, Equatable {
        public var epoch: UInt32
        public var heldThrough: UInt64
        public var highest: UInt64
        enum CodingKeys: String, CodingKey { case epoch, heldThrough = "held_through", highest }
        public init(epoch: UInt32, heldThrough: UInt64, highest: UInt64) {
            self.epoch = epoch
            self.heldThrough = heldThrough
            self.highest = highest
        }
    }
    public var node: String
    public var epochs: [Epoch]
    public var conflicts: Int

    public init(node: String, epochs: [Epoch], conflicts: Int) {
        self.node = node
        self.epochs = epochs
        self.conflicts = conflicts
    }
}

/// Every refusal: a stable code a program can act on and a sentence for people.
public struct Refusal: Codable, Sendable, Equatable, Error {
    public var error: String
    public var message: String
    /// For `conflict`: the sequence whose content differs. For `out_of_order`: the hub's mark.
    public var seq: UInt64?
    public var heldThrough: UInt64?

    enum CodingKeys: String, CodingKey { case error, message, seq, heldThrough = "held_through" }

    public init(error: String, message: String, seq: UInt64? = nil, heldThrough: UInt64? = nil) {
        self.error = error
        self.message = message
        self.seq = seq
        self.heldThrough = heldThrough
    }
}

/// A box joining with a single-use token (POST `/api/v1/boxes/enrol`).
public struct EnrolRequest: Codable, Sendable, Equatable {
    public var token: String
    public var node: String
    public init(token: String, node: String) {
        self.token = token
        self.node = node
    }
}

/// `GET /api/v1/hub`: who the hub is (its certificate) and which network it serves (every hub
/// process on one database answers the same network id). Anonymous: a box checks it before it
/// sends its credential to a hub it is told to add.
public struct HubInfo: Codable, Sendable, Equatable {
    public var fingerprint: String
    public var network: String

    public init(fingerprint: String, network: String) {
        self.fingerprint = fingerprint
        self.network = network
    }
}

/// The box's own credential: shown once, stored by the hub only as a hash.
public struct EnrolAnswer: Codable, Sendable, Equatable {
    public var node: String
    public var name: String
    public var credential: String
    public init(node: String, name: String, credential: String) {
        self.node = node
        self.name = name
        self.credential = credential
    }
}

/// A box asking the hub to certify its signing key (POST `/api/v1/boxes/{node}/certificate`,
/// with its credential; docs/signed-frames.md): the Ed25519 public key, 64 hex digits, and the
/// proof that the box holds it (`KeyPossession`: a signature, 128 hex digits).
public struct CertificateRequest: Codable, Sendable, Equatable {
    public var boxKey: String
    public var proof: String
    enum CodingKeys: String, CodingKey { case boxKey = "box_key", proof }
    public init(boxKey: String, proof: String) {
        self.boxKey = boxKey
        self.proof = proof
    }
}

/// The hub's certificate of a box's key (218 hex digits) and the network's public key it is
/// signed with (64 hex digits). The box checks both before it keeps them.
public struct CertificateAnswer: Codable, Sendable, Equatable {
    public var certificate: String
    public var networkKey: String
    enum CodingKeys: String, CodingKey { case certificate, networkKey = "network_key" }
    public init(certificate: String, networkKey: String) {
        self.certificate = certificate
        self.networkKey = networkKey
    }
}

/// Node ids on the wire: 16 lower-case hex digits.
public enum NodeIDText {
    public static func format(_ id: UInt64) -> String {
        let digits = String(id, radix: 16)
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }

    public static func parse(_ text: some StringProtocol) -> UInt64? {
        guard text.count == 16, text.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return nil }
        return UInt64(text, radix: 16)
    }
}

/// What a box fetches (GET `/api/v1/boxes/{node}/feed?after=P&wait=S`): items after its
/// cursor, oldest first; none when the wait ended first. `cursor` is the last position returned.
public struct FeedAnswer: Codable, Sendable, Equatable {
    public var items: [FeedEntry]
    public var cursor: UInt64
    /// The newest position the feed holds (any origin).
    public var head: UInt64?
    /// `FeedItemDigest` of the item the hub holds at `after`, 16 hex digits; absent when `after`
    /// is 0 or the hub holds no item there. A box whose own differs (or that gets `head` without
    /// it) sees a feed given out again: a hub restored from a backup.
    public var atCursor: String?

    enum CodingKeys: String, CodingKey { case items, cursor, head, atCursor = "at_cursor" }

    public init(items: [FeedEntry], cursor: UInt64, head: UInt64? = nil, atCursor: String? = nil) {
        self.items = items
        self.cursor = cursor
        self.head = head
        self.atCursor = atCursor
    }

    /// The digest as text, as `atCursor` carries it.
    public static func digestText(_ digest: UInt64) -> String { NodeIDText.format(digest) }
}

/// One feed item: the event of `kind` as its origin logged it (protobuf, base64). `origin` is the
/// box's node id, or empty for a coordinator at the hub.
public struct FeedEntry: Codable, Sendable, Equatable {
    public var position: UInt64
    public var origin: String
    public var kind: UInt32
    public var timeUs: UInt64
    public var payload: String

    enum CodingKeys: String, CodingKey { case position, origin, kind, timeUs = "time_us", payload }

    public init(position: UInt64, origin: String, kind: UInt32, timeUs: UInt64, payload: String) {
        self.position = position
        self.origin = origin
        self.kind = kind
        self.timeUs = timeUs
        self.payload = payload
    }
}
