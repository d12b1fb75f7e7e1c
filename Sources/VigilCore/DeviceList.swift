import VigilEvents

/// Every advertiser heard recently, folded from ScanHit events.
///
/// A device's stay ends when it is not heard for `pruneAfterMicroseconds`: a sighting after such a
/// gap starts a new stay (counts from zero), judged from the device's own sightings only, so a
/// stay is the same whatever other events the log holds (retention deletes some of them).
/// Removing ended stays is driven by event time only: whenever an event's time passes
/// `nextPruneAt`, devices whose last sighting is older than `pruneAfterMicroseconds` are removed.
/// Same log, same list.
public struct DeviceList: Projection {
    public struct Device: Codable, Equatable, Sendable {
        public var address: UInt64
        public var addressType: Int
        public var firstSeenMicroseconds: UInt64
        public var lastSeenMicroseconds: UInt64
        /// ScanHit events (scan windows) in which it appeared.
        public var hits: UInt64
        /// Advertising reports folded into those hits.
        public var reports: UInt64
        public var rssiMin: Int32
        public var rssiMax: Int32
        public var rssiSum: Int64
        /// Mean RSSI of the most recent window, in dBm x 100 (integers keep replay exact).
        public var lastMeanRSSICentiDBm: Int32
        public var txPower: Int32?
        public var name: String

        /// Reports without an RSSI (not in min/max/sum); nil in checkpoints from before schema 3.
        public var rssiUnavailable: UInt64?
        /// The sequence of the first ScanHit of this stay: retention keeps this stay's sightings.
        public var firstHitSequence: UInt64
        /// This stay's sightings that retention or a compaction may delete (not a tag's), by
        /// ten-minute slot of event time (`SlotTally.slot`): both delete whole slots.
        public var deletableHits: DayTally
        /// The earliest event time of the stay's records: a retention or compaction deleting
        /// records before a time after it carries this entry (`stays(at:reaching:)`). nil in
        /// checkpoints from before schema 12 (taken as 0: carried).
        public var earliestHitMicroseconds: UInt64?

        public var meanRSSI: Double {
            let measured = reports &- (rssiUnavailable ?? 0)
            return measured == 0 || measured > reports ? 0 : Double(rssiSum) / Double(measured)
        }
    }

    public var pruneAfterMicroseconds: UInt64
    public var pruneIntervalMicroseconds: UInt64
    public private(set) var devices: [UInt64: Device] = [:]
    public private(set) var nextPruneAt: UInt64 = 0
    public private(set) var pruned: UInt64 = 0

    public init(pruneAfterMicroseconds: UInt64 = 300_000_000) {
        self.pruneAfterMicroseconds = pruneAfterMicroseconds
        self.pruneIntervalMicroseconds = max(1_000_000, pruneAfterMicroseconds / 10)
    }

    /// Changes the pruning horizon (and the interval derived from it, as `init` does).
    public mutating func setPruneAfter(_ microseconds: UInt64) {
        pruneAfterMicroseconds = microseconds
        pruneIntervalMicroseconds = max(1_000_000, microseconds / 10)
    }

    /// Devices keyed by address with the address type in bits 48...
    @inline(__always)
    public static func key(_ hit: ScanHitFields) -> UInt64 { (hit.address & 0xFFFF_FFFF_FFFF) | (UInt64(hit.addressType & 0xFF) << 48) }

    public mutating func apply(_ input: ProjectionInput) {
        guard case .event(let event) = input else { return }
        observe(time: event.timeMicroseconds)
        if case .scanHit(let hit) = event.body {
            fold(ScanHitFields(hit), time: event.timeMicroseconds, sequence: event.sequence, deletable: true)
        }
    }

    /// A scan hit read by replay's fast path: the same as `apply` with the event it came from.
    public mutating func apply(scanHit hit: ScanHitFields, sequence: UInt64, timeMicroseconds time: UInt64) {
        observe(time: time)
        fold(hit, time: time, sequence: sequence, deletable: true)
    }

    /// Every event's time drives pruning (time is data, never a clock).
    @inline(__always)
    mutating func observe(time: UInt64) {
        if time >= nextPruneAt { prune(now: time) }
    }

    /// A retention or compaction event at `time` deletes deletable sightings before `cutoffSlot`
    /// except those of the stays still going on (`RetentionPlan`, `CompactionPlan`). Ended stays
    /// are removed now and the prune schedule and count start again from here, so the list from
    /// this event on is the same whether or not the deletion has run (the deletion changes which
    /// events drove pruning before it). Returns the keep set and how many deletable sightings
    /// before the cutoff it keeps.
    mutating func retain(at time: UInt64, cutoffSlot: UInt32) -> (keep: [UInt64: UInt64], keptBeforeCutoff: UInt64) {
        prune(now: time)
        pruned = 0
        var keep: [UInt64: UInt64] = [:]
        keep.reserveCapacity(devices.count)
        var kept: UInt64 = 0
        for index in devices.indices {
            let key = devices.keys[index]
            kept &+= devices.values[index].deletableHits.count(before: cutoffSlot)
            devices.values[index].deletableHits.collapse(before: cutoffSlot)
            keep[key] = devices.values[index].firstHitSequence
        }
        return (keep, kept)
    }

    /// What a ScanSightings or ContactRetention event logged at `time`, whose deletion reaches
    /// records with an event time before `bound` (the span's end, the cutoff), carries: the entry
    /// of every stay with a record before `bound` that the event's own pruning keeps. Replay
    /// rebuilds every other entry from the records left, exactly as it was (their records are all
    /// there), so only these are carried: a phone whose address rotates every 15 minutes is
    /// never in a compaction's list.
    public func stays(at time: UInt64, reaching bound: UInt64) -> DeviceStays {
        let cutoff = time > pruneAfterMicroseconds ? time - pruneAfterMicroseconds : 0
        var stays = DeviceStays()
        stays.devices = sorted.filter { $0.lastSeenMicroseconds >= cutoff && ($0.earliestHitMicroseconds ?? 0) < bound }.map { d in
            var s = DeviceStay()
            s.address = d.address
            s.addressType = UInt32(truncatingIfNeeded: d.addressType)
            s.firstSeenOffsetUs = time &- d.firstSeenMicroseconds
            s.lastSeenOffsetUs = time &- d.lastSeenMicroseconds
            s.earliestHitOffsetUs = time &- (d.earliestHitMicroseconds ?? 0)
            s.hits = d.hits
            s.reports = d.reports
            s.rssiMin = d.rssiMin
            s.rssiMax = d.rssiMax
            s.rssiSum = d.rssiSum
            s.lastMeanRssiCentiDbm = d.lastMeanRSSICentiDBm
            if let tx = d.txPower { s.txPower = tx }
            s.name = d.name
            if let unavailable = d.rssiUnavailable { s.rssiUnavailable = unavailable }
            s.firstHitSequence = d.firstHitSequence
            s.deletableEarlier = d.deletableHits.earlier
            s.deletableFloor = d.deletableHits.floorDay
            s.deletableSlots = d.deletableHits.days
            s.deletableCounts = d.deletableHits.counts
            return s
        }
        return stays
    }

    /// Takes the entries a ScanSightings or ContactRetention event at `time` carries
    /// (`stays(at:reaching:)`): live they are the entries already; on replay they bring back what
    /// the deleted records had built. Every value is the record's, so everything that later adds
    /// to one saturates or wraps (a corrupt record must not trap replay).
    mutating func restore(_ stays: DeviceStays, at time: UInt64) {
        for s in stays.devices {
            let device = Device(address: s.address, addressType: Int(s.addressType),
                                firstSeenMicroseconds: time &- s.firstSeenOffsetUs, lastSeenMicroseconds: time &- s.lastSeenOffsetUs,
                                hits: s.hits, reports: s.reports, rssiMin: s.rssiMin, rssiMax: s.rssiMax, rssiSum: s.rssiSum,
                                lastMeanRSSICentiDBm: s.lastMeanRssiCentiDbm, txPower: s.hasTxPower ? s.txPower : nil, name: s.name,
                                rssiUnavailable: s.hasRssiUnavailable ? s.rssiUnavailable : nil, firstHitSequence: s.firstHitSequence,
                                deletableHits: DayTally(earlier: s.deletableEarlier, floorDay: s.deletableFloor,
                                                        days: s.deletableSlots, counts: s.deletableCounts),
                                earliestHitMicroseconds: time &- s.earliestHitOffsetUs)
            devices[(device.address & 0xFFFF_FFFF_FFFF) | (UInt64(device.addressType & 0xFF) << 48)] = device
        }
    }

    /// Folds one ScanHit whose event time is `time`; `deletable` when retention may delete it
    /// (not a resident's tag).
    mutating func fold(_ hit: ScanHitFields, time: UInt64, sequence: UInt64, deletable: Bool) {
        guard hit.count > 0 else { return }
        let first = hit.firstSeenMicroseconds(eventTime: time)
        let last = hit.lastSeenMicroseconds(eventTime: time)
        // Saturating arithmetic: a hostile or corrupt but decodable record must never trap, or
        // every replay of the log would crash on it.
        let measured = hit.count > hit.rssiUnavailable ? hit.count - hit.rssiUnavailable : 0
        let scaled = hit.rssiSum.multipliedReportingOverflow(by: 100)
        let mean = measured == 0 ? 0 : scaled.overflow ? (hit.rssiSum < 0 ? Int32.min : Int32.max) : Int32(clamping: scaled.partialValue / Int64(measured))
        let key = Self.key(hit)
        let slot = SlotTally.slot(ofMicroseconds: time)
        if let index = devices.index(forKey: key) {
            let horizon = devices.values[index].lastSeenMicroseconds.addingReportingOverflow(pruneAfterMicroseconds)
            if !horizon.overflow, time > horizon.partialValue {
                // Gone longer than the horizon and not removed yet: a new stay. The same test on
                // the same time as `prune`, so a stay does not depend on when pruning ran, as long
                // as event times do not go back. (After a clock stepped back, a sighting can come
                // between a pruning run live and the later one on replay of a log that lost the
                // events which drove it: live starts a new stay where replay goes on with the
                // old. docs/log.md "The raw tier" says how long that lasts.)
                pruned += 1
                devices.values[index] = Self.newDevice(hit, time: time, first: first, last: last, mean: mean, sequence: sequence)
            } else {
                // Mutate in place: no copy of the device out of the table and no second hash.
                Self.update(&devices.values[index], with: hit, first: first, last: last, mean: mean)
                devices.values[index].earliestHitMicroseconds = min(devices.values[index].earliestHitMicroseconds ?? 0, time)
            }
            if deletable { devices.values[index].deletableHits.add(day: slot) }
        } else {
            var device = Self.newDevice(hit, time: time, first: first, last: last, mean: mean, sequence: sequence)
            if deletable { device.deletableHits.add(day: slot) }
            devices[key] = device
        }
    }

    private static func newDevice(_ hit: ScanHitFields, time: UInt64, first: UInt64, last: UInt64, mean: Int32, sequence: UInt64) -> Device {
        Device(address: hit.address, addressType: hit.addressType,
               firstSeenMicroseconds: first, lastSeenMicroseconds: last, hits: 1,
               reports: UInt64(hit.count), rssiMin: hit.rssiMin, rssiMax: hit.rssiMax,
               rssiSum: hit.rssiSum, lastMeanRSSICentiDBm: mean,
               txPower: hit.txPower, name: hit.name,
               rssiUnavailable: hit.rssiUnavailable == 0 ? nil : UInt64(hit.rssiUnavailable),
               firstHitSequence: sequence, deletableHits: DayTally(), earliestHitMicroseconds: time)
    }

    @inline(__always)
    private static func update(_ d: inout Device, with hit: ScanHitFields, first: UInt64, last: UInt64, mean: Int32) {
        d.firstSeenMicroseconds = min(d.firstSeenMicroseconds, first)
        d.lastSeenMicroseconds = max(d.lastSeenMicroseconds, last)
        d.hits &+= 1
        d.reports &+= UInt64(hit.count)
        if hit.rssiUnavailable > 0 { d.rssiUnavailable = (d.rssiUnavailable ?? 0) &+ UInt64(hit.rssiUnavailable) }
        if hit.count > hit.rssiUnavailable {
            // A device first seen without RSSI has min/max 0 from no measurement: replace them.
            let hadMeasurement = d.reports &- UInt64(hit.count) > (d.rssiUnavailable ?? 0) &- UInt64(hit.rssiUnavailable)
            d.rssiMin = hadMeasurement ? min(d.rssiMin, hit.rssiMin) : hit.rssiMin
            d.rssiMax = hadMeasurement ? max(d.rssiMax, hit.rssiMax) : hit.rssiMax
            let (sum, overflow) = d.rssiSum.addingReportingOverflow(hit.rssiSum)
            d.rssiSum = overflow ? (hit.rssiSum < 0 ? .min : .max) : sum
            d.lastMeanRSSICentiDBm = mean
        }
        if let txPower = hit.txPower { d.txPower = txPower }
        if !hit.name.isEmpty && d.name != hit.name { d.name = hit.name }
    }

    private mutating func prune(now: UInt64) {
        let next = now.addingReportingOverflow(pruneIntervalMicroseconds)
        nextPruneAt = next.overflow ? .max : next.partialValue
        guard now > pruneAfterMicroseconds else { return }
        let cutoff = now - pruneAfterMicroseconds
        let before = devices.count
        devices = devices.filter { $0.value.lastSeenMicroseconds >= cutoff }
        pruned += UInt64(before - devices.count)
    }

    /// How many distinct addresses were heard in `[start, end)` (a stay that began before `end`
    /// and was last heard at or after `start`), and how many of them `isTag` says are tags. Exact
    /// for any minute whose end is less than the prune horizon ago (a device is forgotten only
    /// after that long unheard).
    public func heard(from start: UInt64, until end: UInt64, isTag: (UInt64) -> Bool) -> (advertisers: Int, tags: Int) {
        var advertisers = 0
        var tags = 0
        for device in devices.values where device.firstSeenMicroseconds < end && device.lastSeenMicroseconds >= start {
            advertisers += 1
            if isTag(device.address) { tags += 1 }
        }
        return (advertisers, tags)
    }

    /// Devices sorted by (address type, address), for display and stable encoding.
    public var sorted: [Device] { devices.keys.sorted().compactMap { devices[$0] } }

    // Encoded as a sorted array: dictionary order is not stable across runs.
    enum CodingKeys: String, CodingKey { case pruneAfterMicroseconds, pruneIntervalMicroseconds, devices, nextPruneAt, pruned }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pruneAfterMicroseconds = try c.decode(UInt64.self, forKey: .pruneAfterMicroseconds)
        pruneIntervalMicroseconds = try c.decode(UInt64.self, forKey: .pruneIntervalMicroseconds)
        nextPruneAt = try c.decode(UInt64.self, forKey: .nextPruneAt)
        pruned = try c.decode(UInt64.self, forKey: .pruned)
        let list = try c.decode([Device].self, forKey: .devices)
        devices = Dictionary(list.map { ((($0.address & 0xFFFF_FFFF_FFFF) | (UInt64($0.addressType & 0xFF) << 48)), $0) },
                             uniquingKeysWith: { a, _ in a })
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(pruneAfterMicroseconds, forKey: .pruneAfterMicroseconds)
        try c.encode(pruneIntervalMicroseconds, forKey: .pruneIntervalMicroseconds)
        try c.encode(nextPruneAt, forKey: .nextPruneAt)
        try c.encode(pruned, forKey: .pruned)
        try c.encode(sorted, forKey: .devices)
    }
}
