import VigilEvents

/// Event counts by UTC day (or by ten-minute slot: the scan hits'), with every day before the
/// latest cutoff in one bucket.
///
/// Why by day: retention cutoffs fall on a UTC midnight, so "how many of these are older than the
/// cutoff" is a sum over whole days, known at the retention event without reading the log.
/// Bounded: days before the last cutoff collapse into `earlier`, so it holds about the retention
/// period in days.
public struct DayTally: Codable, Equatable, Sendable {
    /// Events on days before `floorDay`.
    public private(set) var earlier: UInt64 = 0
    /// No day before this one has an entry of its own (the last cutoff's day).
    public private(set) var floorDay: UInt32 = 0
    /// Days at or after `floorDay`, ascending, and the count of each.
    private(set) var days: [UInt32] = []
    private(set) var counts: [UInt64] = []

    public init() {}

    /// A tally as a `DeviceStay` carries it (`DeviceList.restore`); entries out of order or
    /// before the floor are dropped, so a hostile record cannot break the tally's invariants.
    init(earlier: UInt64, floorDay: UInt32, days: [UInt32], counts: [UInt64]) {
        self.earlier = earlier
        self.floorDay = floorDay
        for (day, count) in zip(days, counts) where day >= floorDay && (self.days.last.map { day > $0 } ?? true) {
            self.days.append(day)
            self.counts.append(count)
        }
    }

    public static let microsecondsPerDay: UInt64 = 86_400_000_000

    @inline(__always)
    public static func day(ofMicroseconds time: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: time / microsecondsPerDay)
    }

    public var total: UInt64 { counts.reduce(earlier, &+) }

    /// Counts one event on `day`. Events come almost always on the latest day: one comparison.
    @inline(__always)
    public mutating func add(day: UInt32) {
        if let last = days.last, last == day {
            counts[counts.count - 1] &+= 1
        } else {
            addSlow(day: day)
        }
    }

    private mutating func addSlow(day: UInt32) {
        if day < floorDay { earlier &+= 1; return }
        guard let last = days.last, day < last else {
            days.append(day); counts.append(1); return
        }
        // A clock that went back: a day in the middle.
        var low = 0, high = days.count
        while low < high {
            let mid = (low + high) / 2
            if days[mid] < day { low = mid + 1 } else { high = mid }
        }
        if low < days.count, days[low] == day { counts[low] &+= 1 } else { days.insert(day, at: low); counts.insert(1, at: low) }
    }

    /// Events on days before `day`, for `day` at or after `floorDay` (cutoffs only advance).
    public func count(before day: UInt32) -> UInt64 {
        var sum = earlier
        for (d, c) in zip(days, counts) where d < day { sum &+= c }
        return sum
    }

    /// Puts the days before `day` into `earlier`, which becomes `earlier` (when given) or their sum.
    public mutating func collapse(before day: UInt32, earlier replacement: UInt64? = nil) {
        guard day > floorDay else {
            if let replacement { earlier = replacement }
            return
        }
        let n = days.firstIndex { $0 >= day } ?? days.count
        let sum = counts[..<n].reduce(earlier, &+)
        days.removeFirst(n)
        counts.removeFirst(n)
        earlier = replacement ?? sum
        floorDay = day
    }

    enum CodingKeys: String, CodingKey { case earlier, floorDay, days, counts }
}

/// What one retention event deletes, as a pure rule both the log's purge and the projections
/// follow, so the projections after the event are the same whether the deletion has run or not
/// (and replay of the shortened log gives the same bytes; docs/exposure.md "Retention").
///
/// A record at sequence `s` below the retention event, with event time before `cutoff`, is deleted
/// when it is:
/// - an ExposureDetected (its window ended before the cutoff: the exposure book dropped it),
/// - a ScanSightings (the compacted sightings: contact data like the hits they came from),
/// - a ScanBatch, unless a hit of it is a resident's tag's (`tagSince[address] < s`): the stays
///   its hits belong to are in the event (`DeviceStays`), so none is kept for the device list, or
/// - a ScanHit, unless
///   - its address had become a resident's tag before it (`tagSince[address] < s`): the ladder's
///     data, or
///   - it is a sighting (count > 0) of a device still in range at the retention event, from the
///     first sighting of its current stay on (`keep[key] <= s`): the device list still shows it.
///     `keep` is the keep set of the latest retention or compaction: once a compaction went past
///     the cutoff, the projections forgot everything before it but those stays and the tags'
///     already, and this deletes whatever an earlier deletion cut short left.
public struct RetentionPlan: Sendable, Equatable {
    /// A UTC midnight.
    public var cutoffMicroseconds: UInt64
    /// The retention event's sequence minus one.
    public var throughSequence: UInt64
    /// Address (48 bits) → sequence of the event that made it a resident's tag.
    public var tagSince: [UInt64: UInt64]
    /// Device key (address | type << 48) → sequence of the first sighting of its current stay.
    public var keep: [UInt64: UInt64]

    public init(cutoffMicroseconds: UInt64, throughSequence: UInt64, tagSince: [UInt64: UInt64], keep: [UInt64: UInt64]) {
        self.cutoffMicroseconds = cutoffMicroseconds
        self.throughSequence = throughSequence
        self.tagSince = tagSince
        self.keep = keep
    }

    /// Whether a record the purge reached (sequence and time already checked) goes.
    /// An unreadable scan hit stays: the health projection counts it as unreadable, deleted or not.
    public func deletes(kind: UInt32, sequence: UInt64, payload: UnsafeRawBufferPointer) -> Bool {
        if kind == UInt32(EventKind.exposureDetected.rawValue) || kind == UInt32(EventKind.scanSightings.rawValue) { return true }
        if kind == UInt32(EventKind.scanBatch.rawValue) { return Self.deletesBatch(payload: payload, sequence: sequence, tagSince: tagSince) }
        guard kind == UInt32(EventKind.scanHit.rawValue) else { return false }
        guard let hit = EventCodec.scanHitFields(payload: payload) else { return false }
        return deletes(scanHit: hit, sequence: sequence)
    }

    public func deletes(scanHit hit: ScanHitFields, sequence: UInt64) -> Bool {
        !RetentionPlan.keeps(hit, sequence: sequence, tagSince: tagSince, keep: keep)
    }

    /// The rule retention and compaction share for a scan hit they reach: it stays when its address
    /// had become a resident's tag before it, or when it is a sighting of a stay still going on at
    /// the event (`keep`: device key → the stay's first sequence).
    static func keeps(_ hit: ScanHitFields, sequence: UInt64, tagSince: [UInt64: UInt64], keep: [UInt64: UInt64]) -> Bool {
        if let since = tagSince[hit.address & 0xFFFF_FFFF_FFFF], since < sequence { return true }
        if hit.count > 0, let first = keep[DeviceList.key(hit)], first <= sequence { return true }
        return false
    }

    /// Whether a ScanBatch record goes: unless one of its hits was a tag's sighting when it was
    /// applied (the ladder took it), or it cannot be read (the health projection counts it).
    static func deletesBatch(payload: UnsafeRawBufferPointer, sequence: UInt64, tagSince: [UInt64: UInt64]) -> Bool {
        guard case .scanBatch(let batch)? = try? EventCodec.decode(kind: UInt32(EventKind.scanBatch.rawValue), payload: payload, sequence: sequence) else {
            return false
        }
        guard !tagSince.isEmpty else { return true }
        return (try? batch.tagSighting(tagSince: tagSince, sequence: sequence)) == false
    }

    /// The cutoff a retention event's `cutoffUs` means: the UTC midnight at or before it (events
    /// from before cutoffs were aligned mean the same day).
    public static func alignedCutoff(_ cutoff: UInt64) -> UInt64 {
        cutoff - cutoff % DayTally.microsecondsPerDay
    }
}

/// The projections' account of what retention can delete: counts of deletable events by day, and
/// the devices whose sightings the last retention kept.
public struct RetentionLedger: Codable, Equatable, Sendable {
    /// ScanHits that were not a tag's sighting when applied, by ten-minute slot of event time
    /// (`SlotTally.slot`: retention cutoffs and compaction spans both fall on slot boundaries).
    public var scanHits = DayTally()

    /// ScanBatch records without a tag's sighting, by ten-minute slot (never kept for a stay: the
    /// event that deletes them carries the entries of the stays it reaches).
    public var scanBatches = DayTally()
    /// ExposureDetected events, by day.
    public var exposures = DayTally()
    /// The keep set of the last retention or compaction event (`RetentionPlan.keep`,
    /// `CompactionPlan.keep`): the stays then going on, whose hits stay raw.
    public var keep: [UInt64: UInt64] = [:]
    /// Scan hits by ten-minute slot since the last compaction: what the next one deletes.
    public var recentScanHits = SlotTally()
    /// ScanSightings events, by day (retention deletes them with the rest of the contact data).
    public var sightings = DayTally()
    /// What the last ScanSightings event deletes (nil before the first): the log's purge follows
    /// it (`Projections.compactionPlan`), asked again at every start until the next compaction.
    public var compaction: CompactionSpan?

    public init() {}

    enum CodingKeys: String, CodingKey { case scanHits, scanBatches, exposures, keep, recentScanHits, sightings, compaction }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        scanHits = try c.decode(DayTally.self, forKey: .scanHits)
        scanBatches = try c.decodeIfPresent(DayTally.self, forKey: .scanBatches) ?? DayTally()
        exposures = try c.decode(DayTally.self, forKey: .exposures)
        let pairs = try c.decode([[UInt64]].self, forKey: .keep)
        keep = Dictionary(pairs.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }, uniquingKeysWith: { a, _ in a })
        recentScanHits = try c.decode(SlotTally.self, forKey: .recentScanHits)
        sightings = try c.decode(DayTally.self, forKey: .sightings)
        compaction = try c.decodeIfPresent(CompactionSpan.self, forKey: .compaction)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(scanHits, forKey: .scanHits)
        try c.encode(scanBatches, forKey: .scanBatches)
        try c.encode(exposures, forKey: .exposures)
        try c.encode(keep.sorted { $0.key < $1.key }.map { [$0.key, $0.value] }, forKey: .keep)
        try c.encode(recentScanHits, forKey: .recentScanHits)
        try c.encode(sightings, forKey: .sightings)
        try c.encodeIfPresent(compaction, forKey: .compaction)
    }
}
