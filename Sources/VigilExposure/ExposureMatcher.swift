#if canImport(FoundationEssentials)
import FoundationEssentials // Data, of the protobuf messages: a value type, no I/O
#else
import Foundation
#endif
import VigilCore
import VigilEvents

/// The stored identifiers, indexed for lookup: open addressing over the identifier's first 8
/// bytes (already uniformly random: they are AES output), so a lookup is a multiply, a mask and
/// usually one probe, with no hashing of 16-byte keys and no allocation.
public struct IdentifierIndex: Sendable {
    private var slots: [Int32]
    private let mask: Int
    public let identifiers: [Bytes16]

    public init(_ identifiers: [Bytes16]) {
        self.identifiers = identifiers
        var size = 16
        while size < identifiers.count * 2 { size <<= 1 } // load ≤ 50%
        mask = size - 1
        slots = Array(repeating: -1, count: size)
        for (i, id) in identifiers.enumerated() {
            var slot = Self.home(id, mask: mask)
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(i)
        }
    }

    @inline(__always)
    private static func home(_ id: Bytes16, mask: Int) -> Int { Int(truncatingIfNeeded: (id.lo &* 0x9E37_79B9_7F4A_7C15) >> 20) & mask }

    /// The position in `identifiers` of `id`, if stored. (Distinct identifiers only: a stored
    /// identifier is found once.)
    @inline(__always)
    public func position(of id: Bytes16) -> Int? {
        var slot = Self.home(id, mask: mask)
        while true {
            let i = slots[slot]
            if i < 0 { return nil }
            if identifiers[Int(i)] == id { return Int(i) }
            slot = (slot + 1) & mask
        }
    }

    public var count: Int { identifiers.count }
}

/// Matches published diagnosis keys against the identifiers this box heard (GAEN's on-device
/// matching, done by the box as a venue would). One key schedule per key, all its RPIs derived
/// at once, each looked up in the index; a match counts only if the identifier was heard within
/// ±2 h of the interval the key says it was broadcast in.
public final class ExposureMatcher {
    public struct Match: Sendable {
        public let key: DiagnosisKey
        public let identifier: RollingProximityIdentifier
        public let interval: UInt32
    }

    public let index: IdentifierIndex
    /// When each indexed identifier was first and last heard (µs), for the time tolerance.
    private let heard: [(first: UInt64, last: UInt64)]
    public let toleranceMicroseconds: UInt64
    private let deriver: RollingProximityIdentifierDeriver
    private var scratch: [RollingProximityIdentifier] = []
    public private(set) var keysProcessed: UInt64 = 0
    public private(set) var revokedSkipped: UInt64 = 0
    public private(set) var outsideTolerance: UInt64 = 0

    /// `contacts`: the GAEN tracks of an `ExposureContacts` built from the log.
    public init(contacts: ExposureContacts, toleranceMicroseconds: UInt64 = 7_200_000_000,
                engine: RollingProximityIdentifierDeriver.Engine = .fastest) throws(ExposureCryptoError) {
        var ids: [Bytes16] = []
        var heard: [(first: UInt64, last: UInt64)] = []
        for track in contacts.tracks.values where track.kind == .gaen {
            guard let id = Bytes16(track.identifier) else { continue }
            ids.append(id)
            let first = track.instances.map(\.firstMicroseconds).min() ?? 0
            let last = track.instances.map(\.lastMicroseconds).max() ?? 0
            heard.append((first, last))
        }
        index = IdentifierIndex(ids)
        self.heard = heard
        self.toleranceMicroseconds = toleranceMicroseconds
        deriver = try RollingProximityIdentifierDeriver(engine: engine)
    }

    /// Derives every RPI of every key and returns the matches. Revoked keys are skipped.
    public func match(_ keys: some Sequence<DiagnosisKey>) throws(ExposureCryptoError) -> [Match] {
        var matches: [Match] = []
        for key in keys {
            keysProcessed += 1
            guard !key.isRevoked else { revokedSkipped += 1; continue }
            try deriver.derive(key.key, into: &scratch)
            for (offset, rpi) in scratch.enumerated() {
                guard let position = index.position(of: rpi.value) else { continue }
                let interval = key.key.rollingStartIntervalNumber &+ UInt32(offset)
                let start = UInt64(interval) * Exposure.intervalSeconds * 1_000_000
                let end = start + Exposure.intervalSeconds * 1_000_000
                let seen = heard[position]
                guard seen.last &+ toleranceMicroseconds >= start, seen.first <= end &+ toleranceMicroseconds else {
                    outsideTolerance += 1
                    continue
                }
                matches.append(Match(key: key, identifier: rpi, interval: interval))
            }
        }
        return matches
    }

    /// The ExposureDetected events for matches: per diagnosis key, the sightings of all its
    /// matched identifiers (a phone's identifier rotates every ~15 min) form the exposure windows;
    /// the TX power is decrypted from the metadata the phone sent. Windows under the minimum
    /// duration are left out.
    public static func detections(_ matches: [Match], contacts: ExposureContacts, source: String) -> [ExposureDetected] {
        var byKey: [TemporaryExposureKey: [Match]] = [:]
        for m in matches { byKey[m.key.key, default: []].append(m) }
        var events: [ExposureDetected] = []
        for (tek, keyMatches) in byKey.sorted(by: { $0.key.keyData < $1.key.keyData }) {
            let schedule = ExposureKeySchedule(tek)
            var instances: [ExposureContacts.Instance] = []
            var txPower: Int32?
            for m in keyMatches {
                guard let track = contacts.tracks[m.identifier.bytes] else { continue }
                instances += track.instances
                if txPower == nil, let aem = AssociatedEncryptedMetadata(track.metadata),
                   let metadata = try? schedule.decrypt(aem, for: m.identifier) {
                    txPower = Int32(metadata.txPower)
                }
            }
            let diagnosis = keyMatches[0].key
            let level = UInt32(max(0, diagnosis.transmissionRiskLevel ?? 0))
            for window in ExposureContacts.windows(instances, txPower: txPower, settings: contacts.settings) {
                let (weighted, high) = ExposureContacts.score(window, transmissionRiskLevel: level, settings: contacts.settings)
                guard weighted > 0 else { continue }
                var x = ExposureDetected()
                let first = keyMatches.min { $0.interval < $1.interval }?.identifier ?? keyMatches[0].identifier
                x.identifier = Data(first.bytes)
                x.diagnosisKey = Data(tek.keyData.bytes)
                x.rollingStart = tek.rollingStartIntervalNumber
                x.rollingPeriod = tek.rollingPeriod
                x.transmissionRiskLevel = level
                x.reportType = UInt32(max(0, diagnosis.reportType.rawValue))
                x.firstSeenUs = window.firstMicroseconds
                x.lastSeenUs = window.lastMicroseconds
                x.secondsByBucket = window.secondsByBucket
                x.txPower = window.txPowerDBm
                x.minAttenuation = window.minAttenuationDB == .max ? 0 : window.minAttenuationDB
                x.weightedMinutesMilli = UInt32(min(weighted * 1_000, Double(UInt32.max)).rounded())
                x.highRisk = high
                x.source = source
                x.scanInstances = UInt32(window.instances)
                events.append(x)
            }
        }
        return events
    }
}
