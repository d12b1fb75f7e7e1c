import VigilEvents

/// Scan hits by ten-minute slot of event time: how many retention or a compaction may delete,
/// and the first and last sequence of any hit in the slot (what a compaction must read and
/// walk). Known at a `ScanSightings` event without reading the log.
///
/// Bounded: a compaction drops the slots of its span, retention those before its cutoff; a hit
/// whose slot was dropped already (the clock went back an hour or more) is not counted here: it
/// stays raw, and retention deletes it with its day.
public struct SlotTally: Codable, Equatable, Sendable {
    public static let slotMicroseconds: UInt64 = 600_000_000

    @inline(__always)
    public static func slot(ofMicroseconds time: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: time / slotMicroseconds)
    }

    /// Slots before this one were compacted or are past retention.
    public private(set) var floorSlot: UInt32 = 0
    /// Slots at or after `floorSlot`, ascending; per slot the deletable hits, and the first and
    /// last sequence of every hit (deletable or not).
    private(set) var slots: [UInt32] = []
    private(set) var counts: [UInt64] = []
    private(set) var firstSequences: [UInt64] = []
    private(set) var lastSequences: [UInt64] = []

    public init() {}

    /// The first slot that holds deletable hits.
    public var firstSlotWithDeletable: UInt32? {
        zip(slots, counts).first { $0.1 > 0 }?.0
    }

    /// Counts one hit at `sequence` in `slot`, deletable or not. Hits come almost always in the
    /// latest slot: one comparison.
    @inline(__always)
    public mutating func add(slot: UInt32, sequence: UInt64, deletable: Bool) {
        if let last = slots.last, last == slot {
            let i = slots.count - 1
            if deletable { counts[i] &+= 1 }
            firstSequences[i] = min(firstSequences[i], sequence)
            lastSequences[i] = max(lastSequences[i], sequence)
        } else {
            addSlow(slot: slot, sequence: sequence, deletable: deletable)
        }
    }

    private mutating func addSlow(slot: UInt32, sequence: UInt64, deletable: Bool) {
        guard slot >= floorSlot else { return }
        var low = 0, high = slots.count
        while low < high {
            let mid = (low + high) / 2
            if slots[mid] < slot { low = mid + 1 } else { high = mid }
        }
        if low < slots.count, slots[low] == slot {
            if deletable { counts[low] &+= 1 }
            firstSequences[low] = min(firstSequences[low], sequence)
            lastSequences[low] = max(lastSequences[low], sequence)
        } else {
            slots.insert(slot, at: low)
            counts.insert(deletable ? 1 : 0, at: low)
            firstSequences.insert(sequence, at: low)
            lastSequences.insert(sequence, at: low)
        }
    }

    /// The first and last sequence of any hit in `[from, before)`; nil when there is none.
    public func sequences(from: UInt32, before: UInt32) -> ClosedRange<UInt64>? {
        var first = UInt64.max, last: UInt64 = 0
        for (i, s) in slots.enumerated() where s >= from && s < before {
            first = min(first, firstSequences[i])
            last = max(last, lastSequences[i])
        }
        return first <= last ? first...last : nil
    }

    /// Forgets the slots before `slot`, which becomes the floor (never lowered).
    public mutating func drop(before slot: UInt32) {
        guard slot > floorSlot else { return }
        let n = slots.firstIndex { $0 >= slot } ?? slots.count
        slots.removeFirst(n)
        counts.removeFirst(n)
        firstSequences.removeFirst(n)
        lastSequences.removeFirst(n)
        floorSlot = slot
    }
}

/// The last compaction's span and the records its deletion walks, as the retention ledger keeps
/// them (`Projections.compactionPlan` adds the rest of the rule from the state).
public struct CompactionSpan: Codable, Equatable, Sendable {
    public var startMicroseconds: UInt64
    public var endMicroseconds: UInt64
    public var firstSequence: UInt64
    public var lastSequence: UInt64
}

/// What one `ScanSightings` event deletes, as a pure rule the log's purge and the projections
/// both follow (like `RetentionPlan`), so the state after the event is the same whether or not
/// the deletion has run, and replay of the shortened log gives the same bytes.
///
/// A record at sequence `first...last` whose event time is before `spanEnd` is deleted when it is
/// a ScanBatch without a tag's sighting (the event carries the device list, `DeviceStays`), or a
/// ScanHit, unless
/// - its address had become a resident's tag before it (`tagSince[address] < s`), or
/// - it is a sighting (count > 0) of a device still in range at the event, from the first
///   sighting of its current stay on (`keep[key] <= s`): the device list still shows it.
/// That is everything before the span's end, as at retention (hits an earlier compaction kept
/// because their stay went on are deleted once it has ended), so each compaction's counts stand
/// whatever later ones delete. `first` (in the event) is where the node found the oldest hit
/// that can go: the span's first, or the first of a kept stay that has ended since; `last` is
/// the event's sequence minus one. The event's tracks hold what exposure windows need of every
/// hit of the span, deleted or kept (kept ones were read before, in their own span).
public struct CompactionPlan: Equatable, Sendable {
    public var spanStartMicroseconds: UInt64
    public var spanEndMicroseconds: UInt64
    public var firstSequence: UInt64
    public var lastSequence: UInt64
    /// Device key (address | type << 48) → sequence of the first sighting of its current stay.
    public var keep: [UInt64: UInt64]
    /// Address (48 bits) → sequence of the event that made it a resident's tag (from the
    /// escalation book; not stored twice).
    public var tagSince: [UInt64: UInt64] = [:]

    public init(spanStartMicroseconds: UInt64, spanEndMicroseconds: UInt64, firstSequence: UInt64, lastSequence: UInt64,
                keep: [UInt64: UInt64], tagSince: [UInt64: UInt64] = [:]) {
        self.spanStartMicroseconds = spanStartMicroseconds
        self.spanEndMicroseconds = spanEndMicroseconds
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
        self.keep = keep
        self.tagSince = tagSince
    }

    /// Whether a record the purge reached (sequence and time already checked) goes. An unreadable
    /// scan hit stays, as at retention.
    public func deletes(kind: UInt32, sequence: UInt64, payload: UnsafeRawBufferPointer) -> Bool {
        if kind == UInt32(EventKind.scanBatch.rawValue) { return RetentionPlan.deletesBatch(payload: payload, sequence: sequence, tagSince: tagSince) }
        guard kind == UInt32(EventKind.scanHit.rawValue) else { return false }
        guard let hit = EventCodec.scanHitFields(payload: payload) else { return false }
        return deletes(scanHit: hit, sequence: sequence)
    }

    public func deletes(scanHit hit: ScanHitFields, sequence: UInt64) -> Bool {
        !RetentionPlan.keeps(hit, sequence: sequence, tagSince: tagSince, keep: keep)
    }
}

extension ScanBatch {
    /// Whether a hit of the batch at `sequence` was a resident's tag's sighting when it was
    /// applied (its address had become a tag before it).
    func tagSighting(tagSince: [UInt64: UInt64], sequence: UInt64) throws(ScanBatchError) -> Bool {
        var found = false
        try forEachHit { hit, _ in
            if let since = tagSince[hit.address & 0xFFFF_FFFF_FFFF], since < sequence { found = true }
        }
        return found
    }
}
