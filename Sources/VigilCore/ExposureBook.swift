#if canImport(FoundationEssentials)
import FoundationEssentials // Data, of the events' bytes fields
#else
import Foundation
#endif
import VigilEvents
import VigilHex

/// Exposures found by matching published diagnosis keys: a projection of ExposureDetected events,
/// kept in the node's state (small: one entry per matched window) so outputs can show them.
public struct ExposureBook: Projection {
    public struct Entry: Codable, Equatable, Sendable {
        public var sequence: UInt64
        public var identifierHex: String
        public var firstSeenMicroseconds: UInt64
        public var lastSeenMicroseconds: UInt64
        public var weightedMinutes: Double
        public var highRisk: Bool
        public var source: String
        /// The diagnosis key (hex) that matched, so a revocation can withdraw it.
        public var diagnosisKeyHex: String?
    }

    /// By identifier and window start: a key file imported twice records nothing twice.
    public private(set) var entries: [String: Entry] = [:]
    public private(set) var lastRetentionCutoffMicroseconds: UInt64 = 0
    /// The sequence of the last retention event (its deletion covers the records before it).
    public private(set) var lastRetentionSequence: UInt64 = 0
    public private(set) var lastRetentionMicroseconds: UInt64 = 0
    public private(set) var keysPublished: UInt64 = 0

    /// A diagnosis-key file the hub offered (`ExposureKeysOffered` inside a `HubReceived`) that
    /// this box has not matched or refused yet: the box's key-file worker takes these, oldest first.
    public struct KeyFileOffer: Codable, Equatable, Sendable {
        public var fileID: UInt64
        public var sha256Hex: String
        public var bytes: UInt64
        public var keys: UInt32
        public var name: String
        /// The hub that offered it (its certificate's fingerprint).
        public var hub: String
        /// When the hub logged it (its clock), and the sequence of the box's event that took it.
        public var offeredMicroseconds: UInt64
        public var offeredSequence: UInt64
    }

    /// How the last offered file ended here.
    public struct KeyFileOutcome: Codable, Equatable, Sendable {
        public var fileID: UInt64
        public var name: String
        public var keys: UInt32
        public var exposures: UInt32
        public var highRisk: UInt32
        /// Empty: matched.
        public var refused: String
        public var atMicroseconds: UInt64
    }

    /// Offers waiting, by the SHA-256 of their export.bin (hex): what a file is, whatever id a
    /// hub gave it (a hub restored from a backup hands its ids out again). Bounded: when a hub
    /// offers more than a box holds (a new box reads the whole feed), the oldest waiting offer
    /// goes, counted in `keyFileOffersDropped`: the newest files matter most, and a file older
    /// than the contact retention can match nothing anyway.
    public private(set) var keyFileOffers: [String: KeyFileOffer] = [:]
    public static let maximumKeyFileOffers = 256
    public private(set) var keyFileOffersDropped: UInt64 = 0
    public private(set) var keyFilesMatched: UInt64 = 0
    public private(set) var keyFilesRefused: UInt64 = 0
    public private(set) var lastKeyFile: KeyFileOutcome?

    /// The next offer to take: the one that came first (the hub's id breaks a tie).
    public var nextKeyFileOffer: KeyFileOffer? {
        keyFileOffers.values.min { ($0.offeredSequence, $0.fileID) < ($1.offeredSequence, $1.fileID) }
    }

    public init() {}

    /// An offer carried by the hub's feed (the caller decoded it from a `HubReceived` not taken
    /// before, logged at `sequence`). A file matched or refused earlier under the same id is not
    /// offered again; one waiting that is offered again under another id (a hub restored from a
    /// backup) is fetched by the newer id.
    public mutating func offered(_ offer: ExposureKeysOffered, hub: String, sequence: UInt64, atMicroseconds time: UInt64) {
        let sha = Hex.encode(offer.sha256)
        guard offer.sha256.count == 32, !settled.contains(Self.settledKey(sha, offer.fileID)) else { return }
        if var waiting = keyFileOffers[sha] {
            waiting.fileID = offer.fileID
            waiting.hub = hub
            keyFileOffers[sha] = waiting
            return
        }
        if keyFileOffers.count >= Self.maximumKeyFileOffers, let oldest = nextKeyFileOffer {
            keyFileOffers[oldest.sha256Hex] = nil
            keyFileOffersDropped &+= 1
        }
        keyFileOffers[sha] = KeyFileOffer(fileID: offer.fileID, sha256Hex: sha, bytes: offer.bytes, keys: offer.keys,
                                          name: Self.printable(offer.name), hub: hub, offeredMicroseconds: time, offeredSequence: sequence)
    }

    /// A name from the hub as people see it: no control characters, at most 120 characters.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) }).prefix(120))
    }

    /// Files matched or refused, as SHA-256 (hex) "@" the hub's id, newest last, so an offer seen
    /// again is not matched twice. A file the hub offers again under a new id (restored from a
    /// backup, where the old id may name another file or none) is taken again: its exposures
    /// already logged are not logged twice. Bounded like the offers.
    private var settled: [String] = []

    static func settledKey(_ sha: String, _ fileID: UInt64) -> String { sha + "@" + String(fileID) }

    public static func key(identifier: Data, firstSeen: UInt64) -> String {
        Hex.encode(identifier) + "@" + String(firstSeen)
    }

    public mutating func apply(_ input: ProjectionInput) {
        guard case .event(let event) = input else { return }
        switch event.body {
        case .exposureDetected(let x):
            if x.withdrawn {
                let key = Hex.encode(x.diagnosisKey)
                entries = entries.filter { $0.value.diagnosisKeyHex != key }
                return
            }
            // A window from before the last retention is contact data that is gone.
            guard x.lastSeenUs >= lastRetentionCutoffMicroseconds else { return }
            let key = Self.key(identifier: x.identifier, firstSeen: x.firstSeenUs)
            entries[key] = Entry(sequence: event.sequence, identifierHex: Hex.encode(x.identifier),
                                 firstSeenMicroseconds: x.firstSeenUs, lastSeenMicroseconds: x.lastSeenUs,
                                 weightedMinutes: Double(x.weightedMinutesMilli) / 1_000, highRisk: x.highRisk, source: x.source,
                                 diagnosisKeyHex: Hex.encode(x.diagnosisKey))
        case .contactRetention(let r):
            lastRetentionCutoffMicroseconds = max(lastRetentionCutoffMicroseconds, r.cutoffUs)
            lastRetentionSequence = event.sequence
            lastRetentionMicroseconds = event.timeMicroseconds
            // Exposures are contact data too: they go with the sightings they came from.
            entries = entries.filter { $0.value.lastSeenMicroseconds >= r.cutoffUs }
        case .exposureKeysPublished(let p):
            keysPublished &+= UInt64(p.keys)
        case .exposureKeysMatched(let m):
            // The outcome of a file already settled (appended twice) counts once. An offer of the
            // same file under a newer id, waiting, stays.
            let sha = Hex.encode(m.sha256)
            if keyFileOffers[sha]?.fileID == m.fileID { keyFileOffers[sha] = nil }
            let key = Self.settledKey(sha, m.fileID)
            guard !settled.contains(key) else { return }
            settled.append(key)
            if settled.count > Self.maximumKeyFileOffers { settled.removeFirst(settled.count - Self.maximumKeyFileOffers) }
            if m.refused.isEmpty { keyFilesMatched &+= 1 } else { keyFilesRefused &+= 1 }
            lastKeyFile = KeyFileOutcome(fileID: m.fileID, name: m.name, keys: m.keys, exposures: m.exposures, highRisk: m.highRisk,
                                         refused: m.refused, atMicroseconds: event.timeMicroseconds)
        default:
            break
        }
    }

    /// High-risk exposures still within retention, oldest first.
    public var highRisk: [Entry] {
        entries.values.filter(\.highRisk).sorted { ($0.firstSeenMicroseconds, $0.sequence) < ($1.firstSeenMicroseconds, $1.sequence) }
    }
}
