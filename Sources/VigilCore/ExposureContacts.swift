#if canImport(FoundationEssentials)
import FoundationEssentials // Data, of the events' bytes fields
#else
import Foundation
#endif
import VigilEvents

/// Contact observations, from the ScanHit events that carried a contact identifier: a phone's
/// GAEN Rolling Proximity Identifier, another Vigil box's presence identifier, or a configured
/// tag's address. Per identifier, its scan instances; from them, exposure windows, minutes per
/// attenuation bucket and a risk score, modelled on GAEN's ExposureWindow and the Corona-Warn-App
/// v2 risk parameters.
///
/// Pure: a function of the events applied. It is built on demand (by `vigil exposure`) from the
/// log's last `retention` of contact data, not kept in the node's checkpoint: a shelter's two
/// weeks of identifiers would make every checkpoint large.
public struct ExposureContacts: Sendable {
    public enum IdentifierKind: Int, Codable, Sendable {
        case gaen = 1
        case vigilPeer = 2
        case tag = 3
    }

    public struct Settings: Codable, Equatable, Sendable {
        /// An exposure window lasts at most this long (GAEN: 30 min).
        public var maxWindowMicroseconds: UInt64 = 1_800_000_000
        /// A gap longer than this ends an encounter (and its window).
        public var gapMicroseconds: UInt64 = 600_000_000
        /// Attenuation bucket thresholds in dB (ascending): below the first is the closest bucket.
        /// Defaults: the Corona-Warn-App v2 ranges 0–63, 63–73, 73–79, and ≥ 79.
        public var bucketThresholdsDB: [Int32] = [63, 73, 79]
        /// Weight of a minute in each bucket (one more than the thresholds). CWA v2: 0.8, 1.0, 0.1;
        /// beyond 79 dB a minute does not count.
        public var bucketWeights: [Double] = [0.8, 1.0, 0.1, 0.0]
        /// TX power assumed when neither the decrypted metadata nor the advert says it.
        public var defaultTxPowerDBm: Int32 = -20
        /// The longest stretch one scan instance is credited with (between two sightings).
        public var instanceCreditMaxMicroseconds: UInt64 = 300_000_000
        /// Windows shorter than this (at any attenuation below the last threshold) are dropped.
        public var minimumMinutes: Double = 5
        /// A window whose weighted minutes reach this is high risk (CWA v2: 15 normalised minutes).
        public var highRiskWeightedMinutes: Double = 15
        /// Weight of each transmission risk level 0–8 of a diagnosis key (all 1 by default).
        public var transmissionRiskWeights: [Double] = Array(repeating: 1.0, count: 9)
        /// Contact data older than this is deleted (docs/exposure.md "Retention").
        public var retentionMicroseconds: UInt64 = 14 * 86_400_000_000
        /// Addresses of tags whose sightings count as contacts (residents' tags, say).
        public var tags: Set<UInt64> = []

        public init() {}
    }

    /// The scan hits of one identifier whose first report fell in one UTC minute: the canonical
    /// unit of contact data. Folding is order-free (sums, minimum, maxima), so the same hits give
    /// the same instance whether they are read raw or from a compaction's `ScanSightings`.
    public struct Instance: Codable, Equatable, Sendable {
        public var firstMicroseconds: UInt64
        public var lastMicroseconds: UInt64
        /// Scan hits (scan windows) folded, and the advertising reports in them.
        public var hits: UInt32
        public var reports: UInt32
        /// Over the reports with an RSSI; `rssiMax` nil when none had one.
        public var rssiSum: Int64
        public var rssiUnavailable: UInt32
        public var rssiMax: Int32?
        /// The highest TX power an advert stated, if any did.
        public var advertisedTxPower: Int32?

        public init(firstMicroseconds: UInt64, lastMicroseconds: UInt64, hits: UInt32 = 1, reports: UInt32, rssiSum: Int64,
                    rssiUnavailable: UInt32 = 0, rssiMax: Int32?, advertisedTxPower: Int32?) {
            self.firstMicroseconds = firstMicroseconds
            self.lastMicroseconds = lastMicroseconds
            self.hits = hits
            self.reports = reports
            self.rssiSum = rssiSum
            self.rssiUnavailable = rssiUnavailable
            self.rssiMax = rssiMax
            self.advertisedTxPower = advertisedTxPower
        }

        /// The UTC minute of the first report: instances of one identifier are keyed by it.
        public var minute: UInt64 { firstMicroseconds / 60_000_000 }
        public var measured: UInt32 { reports > rssiUnavailable ? reports - rssiUnavailable : 0 }
        /// Mean RSSI over the measured reports (nil: the controller gave none).
        public var rssiMean: Double? {
            measured == 0 || rssiMax == nil ? nil : Double(rssiSum) / Double(measured)
        }

        /// Both folded: span, counts, integer sums, strongest RSSI and highest TX power. Saturating,
        /// so a hostile but decodable record cannot trap.
        func folded(with b: Instance) -> Instance {
            var out = self
            out.firstMicroseconds = min(firstMicroseconds, b.firstMicroseconds)
            out.lastMicroseconds = max(lastMicroseconds, b.lastMicroseconds)
            out.hits = hits.addingReportingOverflow(b.hits).overflow ? .max : hits &+ b.hits
            out.reports = reports.addingReportingOverflow(b.reports).overflow ? .max : reports &+ b.reports
            out.rssiUnavailable = rssiUnavailable.addingReportingOverflow(b.rssiUnavailable).overflow ? .max : rssiUnavailable &+ b.rssiUnavailable
            let sum = rssiSum.addingReportingOverflow(b.rssiSum)
            out.rssiSum = sum.overflow ? (b.rssiSum < 0 ? .min : .max) : sum.partialValue
            out.rssiMax = [rssiMax, b.rssiMax].compactMap { $0 }.max()
            out.advertisedTxPower = [advertisedTxPower, b.advertisedTxPower].compactMap { $0 }.max()
            return out
        }
    }

    public struct Track: Equatable, Sendable {
        public var kind: IdentifierKind
        public var identifier: [UInt8]
        /// The GAEN Associated Encrypted Metadata (TX power inside, once a key decrypts it).
        public var metadata: [UInt8]
        public var instances: [Instance]
    }

    /// One exposure window: sightings with no gap over `gapMicroseconds`, at most `maxWindow` long.
    public struct Window: Equatable, Sendable {
        public var firstMicroseconds: UInt64
        public var lastMicroseconds: UInt64
        public var instances: Int
        /// Seconds credited to each attenuation bucket.
        /// Time credited to each attenuation bucket, in µs (rounded to seconds only in events: a
        /// 2 s sighting truncated to whole seconds would lose a quarter of the minutes).
        public var microsecondsByBucket: [UInt64]
        public var minAttenuationDB: Int32
        public var txPowerDBm: Int32

        public var secondsByBucket: [UInt32] {
            microsecondsByBucket.map { UInt32(clamping: $0 / 1_000_000 + ($0 % 1_000_000 >= 500_000 ? 1 : 0)) }
        }
        public var totalMinutes: Double { Double(microsecondsByBucket.reduce(0, &+)) / 60_000_000 }
    }

    public let settings: Settings
    /// Per identifier (16 bytes for GAEN and peers; the 6 address bytes for tags).
    public private(set) var tracks: [[UInt8]: Track] = [:]
    public private(set) var scanHitsSeen: UInt64 = 0
    /// Sightings older than the latest retention cutoff are ignored (deleted or about to be).
    public private(set) var retentionCutoffMicroseconds: UInt64 = 0
    /// Instances in all tracks, and those not kept because of `maxInstances`.
    public private(set) var instanceCount = 0
    public private(set) var shedInstances: UInt64 = 0
    /// A bound on memory: instances kept per identifier (a GAEN identifier lives ~15 min, a peer's
    /// presence id 15 min; a tag forever, so its oldest instances go first).
    public static let instancesPerTrack = 4_096
    /// Spans already compacted (`ScanSightings`), by start: their raw hits up to the compaction's
    /// sequence are in its sightings, so they are not read twice (`noteCompaction`).
    private var compactedSpans: [(start: UInt64, end: UInt64, through: UInt64)] = []
    /// At most this many instances in all (≈ 64 bytes each: 256 MB); beyond, new sightings are
    /// counted and not kept.
    public var maxInstances = 4_000_000

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Marks the span of a compaction as read from its sightings: its raw hits at or below the
    /// compaction's sequence (a purge cut short leaves some) are skipped. Call it for every
    /// `ScanSightings` in the log before applying the log's events (`ExposureKeyMatching.contacts`
    /// reads the log twice).
    public mutating func noteCompaction(_ s: ScanSightings) {
        guard s.spanEndUs > s.spanStartUs else { return }
        let entry = (start: s.spanStartUs, end: s.spanEndUs, through: s.throughSequence)
        let at = compactedSpans.firstIndex { $0.start > entry.start } ?? compactedSpans.count
        compactedSpans.insert(entry, at: at)
    }

    /// Whether a raw hit at `sequence` with event time `time` is in a compacted span's sightings.
    private func isCompacted(time: UInt64, sequence: UInt64) -> Bool {
        guard !compactedSpans.isEmpty else { return false }
        // The last span starting at or before `time` (spans do not overlap).
        var low = 0, high = compactedSpans.count
        while low < high {
            let mid = (low + high) / 2
            if compactedSpans[mid].start <= time { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return false }
        let span = compactedSpans[low - 1]
        return time < span.end && sequence <= span.through
    }

    /// The contact identifier a scan hit carries, if any: a GAEN RPI, another box's presence id,
    /// or a configured tag's address.
    public static func identify(_ hit: ScanHit, tags: Set<UInt64>) -> (kind: IdentifierKind, identifier: [UInt8], metadata: [UInt8])? {
        identify(address: hit.address, advertisement: hit.hasAdvertisement ? hit.advertisement : nil, tags: tags)
    }

    static func identify(address: UInt64, advertisement summary: AdvertisementSummary?, tags: Set<UInt64>) -> (kind: IdentifierKind, identifier: [UInt8], metadata: [UInt8])? {
        if let summary {
            if summary.gaenRpi.count == 16 { return (.gaen, Array(summary.gaenRpi), Array(summary.gaenAem)) }
            if summary.vigilPresence.count == 16 { return (.vigilPeer, Array(summary.vigilPresence), []) }
        }
        if tags.contains(address) {
            return (.tag, (0..<6).map { UInt8(truncatingIfNeeded: address >> UInt64(8 * (5 - $0))) }, [])
        }
        return nil
    }

    /// A hit's observation, with the event time it was logged at.
    static func instance(_ hit: ScanHitFields, eventTime: UInt64) -> Instance {
        let measured = hit.count > hit.rssiUnavailable ? hit.count - hit.rssiUnavailable : 0
        return Instance(firstMicroseconds: hit.firstSeenMicroseconds(eventTime: eventTime),
                        lastMicroseconds: hit.lastSeenMicroseconds(eventTime: eventTime),
                        hits: 1, reports: hit.count, rssiSum: measured == 0 ? 0 : hit.rssiSum,
                        rssiUnavailable: min(hit.rssiUnavailable, hit.count),
                        rssiMax: measured == 0 ? nil : hit.rssiMax,
                        advertisedTxPower: hit.txPower)
    }

    /// Folds one event: ScanHits carrying a contact identifier, compacted sightings, and retention.
    public mutating func apply(_ event: Event) {
        switch event.body {
        case .contactRetention(let r):
            retentionCutoffMicroseconds = max(retentionCutoffMicroseconds, r.cutoffUs)
            forget(before: retentionCutoffMicroseconds)
            compactedSpans.removeAll { $0.end <= retentionCutoffMicroseconds }
        case .scanSightings(let s):
            apply(sightings: s)
        case .scanHit(let hit):
            guard !isCompacted(time: event.timeMicroseconds, sequence: event.sequence) else { return }
            scanHitsSeen += 1
            guard event.timeMicroseconds >= retentionCutoffMicroseconds,
                  let (kind, identifier, metadata) = Self.identify(hit, tags: settings.tags) else { return }
            add(Self.instance(ScanHitFields(hit), eventTime: event.timeMicroseconds), kind: kind, identifier: identifier, metadata: metadata)
        case .scanBatch(let batch):
            guard !isCompacted(time: event.timeMicroseconds, sequence: event.sequence) else { return }
            scanHitsSeen &+= UInt64(batch.count)
            guard event.timeMicroseconds >= retentionCutoffMicroseconds else { return }
            let tags = settings.tags
            // Validated when it was decoded: no hit can be malformed here.
            try? batch.forEachHit { hit, advertisement in
                guard let (kind, identifier, metadata) = Self.identify(address: hit.address, advertisement: advertisement.map { batch.advertisements[$0] },
                                                                       tags: tags) else { return }
                add(Self.instance(hit, eventTime: event.timeMicroseconds), kind: kind, identifier: identifier, metadata: metadata)
            }
        default:
            break
        }
    }

    private mutating func apply(sightings s: ScanSightings) {
        scanHitsSeen &+= s.hits
        for track in s.tracks {
            guard let kind = IdentifierKind(rawValue: Int(track.kind)),
                  track.identifier.count == (kind == .tag ? 6 : 16) else { continue }
            let identifier = Array(track.identifier)
            var minute: UInt64 = 0
            for m in track.minutes {
                minute &+= UInt64(m.minuteDelta)
                let first = minute &* 60_000_000 &+ min(m.firstOffsetUs, 59_999_999)
                // A minute's hits span a scan window past it at most; an hour bounds a hostile length.
                let instance = Instance(firstMicroseconds: first, lastMicroseconds: first &+ min(m.lengthUs, 3_600_000_000), hits: m.hits, reports: m.reports,
                                        rssiSum: m.rssiSum, rssiUnavailable: m.rssiUnavailable,
                                        rssiMax: m.reports > m.rssiUnavailable ? m.rssiMax : nil,
                                        advertisedTxPower: m.hasTxPower ? m.txPower : nil)
                guard instance.lastMicroseconds >= retentionCutoffMicroseconds else { continue }
                add(instance, kind: kind, identifier: identifier, metadata: Array(track.metadata))
            }
        }
    }

    /// Folds `instance` into its identifier's instance of the same minute, or adds it in order.
    private mutating func add(_ instance: Instance, kind: IdentifierKind, identifier: [UInt8], metadata: [UInt8]) {
        guard var track = tracks[identifier] else {
            guard instanceCount < maxInstances else { shedInstances += 1; return }
            tracks[identifier] = Track(kind: kind, identifier: identifier, metadata: metadata, instances: [instance])
            instanceCount += 1
            return
        }
        tracks[identifier] = nil // no copy of the instances while it changes
        let minute = instance.minute
        if let last = track.instances.last, last.minute == minute {
            track.instances[track.instances.count - 1] = last.folded(with: instance)
        } else {
            // Almost always after the last; else its place by minute (the sightings of a
            // compacted span come after raw hits of later minutes).
            var low = 0, high = track.instances.count
            if let last = track.instances.last, last.minute < minute {
                low = high
            } else {
                while low < high {
                    let mid = (low + high) / 2
                    if track.instances[mid].minute < minute { low = mid + 1 } else { high = mid }
                }
            }
            if low < track.instances.count, track.instances[low].minute == minute {
                track.instances[low] = track.instances[low].folded(with: instance)
            } else if instanceCount < maxInstances {
                if track.instances.count >= Self.instancesPerTrack {
                    let dropped = track.instances.count / 2
                    track.instances.removeFirst(dropped)
                    instanceCount -= dropped
                    low = max(0, low - dropped)
                }
                track.instances.insert(instance, at: low)
                instanceCount += 1
            } else {
                shedInstances += 1
            }
        }
        if track.metadata.isEmpty { track.metadata = metadata }
        tracks[identifier] = track
    }

    /// The tracks as a compaction logs them: by identifier, minutes ascending, delta-coded.
    public func sightingTracks() -> [SightingTrack] {
        tracks.keys.sorted { $0.lexicographicallyPrecedes($1) }.compactMap { key -> SightingTrack? in
            guard let track = tracks[key] else { return nil }
            var out = SightingTrack()
            out.kind = UInt32(track.kind.rawValue)
            out.identifier = Data(track.identifier)
            out.metadata = Data(track.metadata)
            var previous: UInt64 = 0
            out.minutes = track.instances.map { i in
                var m = MinuteSighting()
                m.minuteDelta = UInt32(truncatingIfNeeded: i.minute &- previous)
                previous = i.minute
                m.firstOffsetUs = i.firstMicroseconds % 60_000_000
                m.lengthUs = i.lastMicroseconds &- i.firstMicroseconds
                m.hits = i.hits
                m.reports = i.reports
                m.rssiSum = i.rssiSum
                m.rssiUnavailable = i.rssiUnavailable
                if let max = i.rssiMax { m.rssiMax = max }
                if let tx = i.advertisedTxPower { m.txPower = tx }
                return m
            }
            return out
        }
    }

    /// Drops sightings before `cutoff` (and identifiers left with none).
    private mutating func forget(before cutoff: UInt64) {
        for (id, var track) in tracks {
            let before = track.instances.count
            track.instances.removeAll { $0.lastMicroseconds < cutoff }
            instanceCount -= before - track.instances.count
            tracks[id] = track.instances.isEmpty ? nil : track
        }
    }

    /// The identifiers of one kind (for matching).
    public func identifiers(of kind: IdentifierKind) -> [[UInt8]] {
        tracks.values.filter { $0.kind == kind }.map(\.identifier)
    }

    // MARK: Windows, buckets, score

    /// The exposure windows of a track's instances, with attenuation = TX power − RSSI. `txPower`:
    /// from the decrypted metadata once matched; else the advert's, else the configured default.
    public static func windows(_ instances: [Instance], txPower: Int32?, settings: Settings) -> [Window] {
        let sorted = instances.sorted { ($0.firstMicroseconds, $0.lastMicroseconds) < ($1.firstMicroseconds, $1.lastMicroseconds) }
        var windows: [Window] = []
        var current: Window?
        var previousLast: UInt64 = 0
        for instance in sorted {
            let tx = txPower ?? instance.advertisedTxPower ?? settings.defaultTxPowerDBm
            let gap = instance.firstMicroseconds > previousLast ? instance.firstMicroseconds - previousLast : 0
            if var open = current, gap <= settings.gapMicroseconds,
               instance.lastMicroseconds &- open.firstMicroseconds <= settings.maxWindowMicroseconds {
                // Same encounter: the time since the previous sighting counts (capped), plus this one.
                // Saturating: a hostile but decodable record must not trap a command reading the log.
                let (span, overflow) = min(gap, settings.instanceCreditMaxMicroseconds)
                    .addingReportingOverflow(instance.lastMicroseconds &- instance.firstMicroseconds)
                credit(&open, instance, tx: tx, microseconds: overflow ? .max : span, settings: settings)
                current = open
            } else {
                if let done = current { windows.append(done) }
                var open = Window(firstMicroseconds: instance.firstMicroseconds, lastMicroseconds: instance.lastMicroseconds,
                                  instances: 0, microsecondsByBucket: Array(repeating: 0, count: settings.bucketThresholdsDB.count + 1),
                                  minAttenuationDB: .max, txPowerDBm: tx)
                // A single sighting counts for its own span, and at least a second.
                credit(&open, instance, tx: tx, microseconds: max(instance.lastMicroseconds &- instance.firstMicroseconds, 1_000_000),
                       settings: settings)
                current = open
            }
            previousLast = max(previousLast, instance.lastMicroseconds)
        }
        if let done = current { windows.append(done) }
        return windows
    }

    private static func credit(_ window: inout Window, _ instance: Instance, tx: Int32, microseconds: UInt64, settings: Settings) {
        window.instances += 1
        window.lastMicroseconds = max(window.lastMicroseconds, instance.lastMicroseconds)
        guard let mean = instance.rssiMean, let strongest = instance.rssiMax else { return } // no RSSI: no distance
        // Clamped: a decodable but absurd record must not trap a command reading the log.
        let typical = Int32(clamping: Int64((Double(tx) - max(min(mean, 1e6), -1e6)).rounded()))
        window.minAttenuationDB = min(window.minAttenuationDB, Int32(clamping: Int64(tx) - Int64(strongest)))
        let bucket = settings.bucketThresholdsDB.firstIndex { typical < $0 } ?? settings.bucketThresholdsDB.count
        let (sum, overflow) = window.microsecondsByBucket[bucket].addingReportingOverflow(microseconds)
        window.microsecondsByBucket[bucket] = overflow ? .max : sum
    }

    /// Weighted minutes of a window (the CWA v2 "normalised time"), times the key's transmission
    /// risk weight; and whether it is high risk. Windows under the minimum duration score 0.
    public static func score(_ window: Window, transmissionRiskLevel: UInt32, settings: Settings) -> (weightedMinutes: Double, highRisk: Bool) {
        let counted = window.microsecondsByBucket.dropLast().reduce(0, &+)
        guard Double(counted) / 60_000_000 >= settings.minimumMinutes else { return (0, false) }
        var minutes = 0.0
        for (bucket, us) in window.microsecondsByBucket.enumerated() where bucket < settings.bucketWeights.count {
            minutes += Double(us) / 60_000_000 * settings.bucketWeights[bucket]
        }
        let level = Int(transmissionRiskLevel)
        let weight = level < settings.transmissionRiskWeights.count ? settings.transmissionRiskWeights[level] : 1
        let weighted = minutes * weight
        return (weighted, weighted >= settings.highRiskWeightedMinutes)
    }
}
