import Foundation

/// The packed hits of a `ScanBatch` (schema 12): every hit of one scan window in one record.
///
/// Why: a ScanHit record costs about 33 bytes before its own fields (LMDB's node and key, the
/// checksum, the envelope); at a crowded shelter's thousand hits a second that overhead alone is
/// 2.8 GB a day. One record per window pays it once for hundreds of hits, and the hits drop
/// protobuf's tags for a fixed order of small fields.
///
/// Layout of `hits` (format of schema 12), per hit, in order:
///
/// | field | bytes | |
/// | --- | --- | --- |
/// | flags | 1 | bit 0: TX power; 1: advertisement; 2: reports without RSSI; 3: random address; 4–7 zero |
/// | address | 6 | big-endian |
/// | count | varint | reports, at least 1 |
/// | rssi unavailable | varint | only with bit 2; at most count |
/// | rssi max | 1 | int8; only when some report had an RSSI |
/// | spread | varint | max − min; likewise |
/// | deficit | varint | max × measured − sum; likewise |
/// | last offset | varint | µs before the record's time |
/// | duration | varint | first offset − last offset |
/// | tx power | 1 | int8; only with bit 0 |
/// | advertisement | varint | index into `advertisements`; only with bit 1 |
///
/// Each hit's event time is the record's. Decoding gives back exactly the ScanHit that was
/// encoded; `ScanBatch.packing` leaves out any hit the layout cannot hold exactly, for the caller
/// to log as its own ScanHit. A malformed batch is rejected whole when the event is decoded
/// (`validate`), so code that holds a decoded batch never meets a bad hit.
public struct ScanBatchError: Error, Sendable, Equatable, CustomStringConvertible {
    public let hit: Int
    public let reason: String
    public var description: String { "scan batch hit \(hit): \(reason)" }
}

extension ScanBatch {
    /// Packs `hits` (all with the event time the record will have) into one batch; the hits it
    /// cannot hold exactly come back in `rest`, in order.
    public static func packing(_ hits: [ScanHit]) -> (batch: ScanBatch, rest: [ScanHit]) {
        var batch = ScanBatch()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hits.count * 20)
        var index: [AdvertisementSummary: Int] = [:]
        var advertisements: [AdvertisementSummary] = []
        var rest: [ScanHit] = []
        var count: UInt32 = 0
        for hit in hits {
            guard fits(hit) else { rest.append(hit); continue }
            var flags: UInt8 = 0
            if hit.hasTxPower { flags |= 1 }
            if hit.hasAdvertisement { flags |= 2 }
            if hit.rssiUnavailable > 0 { flags |= 4 }
            if hit.addressType == .addressRandom { flags |= 8 }
            bytes.append(flags)
            for i in 0..<6 { bytes.append(UInt8(truncatingIfNeeded: hit.address >> UInt64(8 * (5 - i)))) }
            appendVarint(UInt64(hit.count), to: &bytes)
            if hit.rssiUnavailable > 0 { appendVarint(UInt64(hit.rssiUnavailable), to: &bytes) }
            let measured = Int64(hit.count - hit.rssiUnavailable)
            if measured > 0 {
                bytes.append(UInt8(bitPattern: Int8(hit.rssiMax)))
                appendVarint(UInt64(hit.rssiMax - hit.rssiMin), to: &bytes)
                appendVarint(UInt64(Int64(hit.rssiMax) * measured - hit.rssiSum), to: &bytes)
            }
            appendVarint(hit.lastOffsetUs, to: &bytes)
            appendVarint(hit.firstOffsetUs - hit.lastOffsetUs, to: &bytes)
            if hit.hasTxPower { bytes.append(UInt8(bitPattern: Int8(hit.txPower))) }
            if hit.hasAdvertisement {
                let i: Int
                if let known = index[hit.advertisement] {
                    i = known
                } else {
                    i = advertisements.count
                    index[hit.advertisement] = i
                    advertisements.append(hit.advertisement)
                }
                appendVarint(UInt64(i), to: &bytes)
            }
            count += 1
        }
        batch.count = count
        batch.hits = Data(bytes)
        batch.advertisements = advertisements
        return (batch, rest)
    }

    /// Whether the layout holds `hit` exactly.
    static func fits(_ hit: ScanHit) -> Bool {
        guard hit.unknownFields.data.isEmpty, hit.advertisement.unknownFields.data.isEmpty,
              hit.address <= 0xFFFF_FFFF_FFFF,
              hit.addressType == .addressPublic || hit.addressType == .addressRandom,
              hit.count >= 1, hit.rssiUnavailable <= hit.count,
              hit.firstOffsetUs >= hit.lastOffsetUs else { return false }
        if hit.hasTxPower, Int8(exactly: hit.txPower) == nil { return false }
        let measured = Int64(hit.count - hit.rssiUnavailable)
        guard measured > 0 else { return hit.rssiMin == 0 && hit.rssiMax == 0 && hit.rssiSum == 0 }
        guard Int8(exactly: hit.rssiMax) != nil, Int8(exactly: hit.rssiMin) != nil, hit.rssiMin <= hit.rssiMax else { return false }
        // measured < 2^32 and |max| < 2^7: the product cannot overflow; the difference can (a
        // sum no reports make), and such a hit is simply not packed.
        let (deficit, overflow) = (Int64(hit.rssiMax) * measured).subtractingReportingOverflow(hit.rssiSum)
        return !overflow && deficit >= 0 && deficit < 1 << 40
    }

    /// Checks every packed hit (what `EventCodec.decode` does before it returns a batch).
    public func validate() throws(ScanBatchError) {
        try forEachHit { _, _ in }
    }

    /// Calls `body` with each hit's fields (the name taken from its advertisement) and its
    /// advertisement's index, in order. Throws at the first malformed hit, before calling `body`
    /// for it; a batch `EventCodec` decoded never throws.
    public func forEachHit(_ body: (ScanHitFields, Int?) throws(ScanBatchError) -> Void) throws(ScanBatchError) {
        let advertisementCount = advertisements.count
        let expected = Int(count)
        var seen = 0
        // Data.withUnsafeBytes rethrows untyped errors: the typed one comes out as a value.
        let failure: ScanBatchError? = hits.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> ScanBatchError? in
            var reader = PackedReader(bytes: raw)
            do throws(ScanBatchError) {
                while !reader.atEnd {
                    guard seen < expected else { throw ScanBatchError(hit: seen, reason: "more hits than its count (\(expected))") }
                    let (fields, advertisement) = try reader.hit(number: seen, advertisements: advertisementCount)
                    var named = fields
                    if let advertisement { named.name = advertisements[advertisement].name }
                    try body(named, advertisement)
                    seen += 1
                }
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
        guard seen == expected else { throw ScanBatchError(hit: seen, reason: "\(seen) hits where its count says \(expected)") }
    }

    /// The hits as the ScanHits that were packed.
    public func scanHits() throws(ScanBatchError) -> [ScanHit] {
        var result: [ScanHit] = []
        result.reserveCapacity(Int(min(count, 4_096)))
        try forEachHit { fields, advertisement in result.append(scanHit(fields, advertisement: advertisement)) }
        return result
    }

    /// One hit as its ScanHit (for the ladder, which takes a tag's sighting as an event).
    public func scanHit(_ fields: ScanHitFields, advertisement: Int?) -> ScanHit {
        var hit = ScanHit()
        hit.address = fields.address
        hit.addressType = AddressType(rawValue: fields.addressType) ?? .addressPublic
        hit.count = fields.count
        hit.rssiUnavailable = fields.rssiUnavailable
        hit.rssiMin = fields.rssiMin
        hit.rssiMax = fields.rssiMax
        hit.rssiSum = fields.rssiSum
        hit.firstOffsetUs = fields.firstOffsetUs
        hit.lastOffsetUs = fields.lastOffsetUs
        if let tx = fields.txPower { hit.txPower = tx }
        if let advertisement, advertisement < advertisements.count { hit.advertisement = advertisements[advertisement] }
        return hit
    }
}

private func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
    var v = value
    while v >= 0x80 {
        bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
        v >>= 7
    }
    bytes.append(UInt8(v))
}

/// Reads packed hits; every read is bounds-checked and every value range-checked.
private struct PackedReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var atEnd: Bool { offset >= bytes.count }

    mutating func byte(_ hit: Int, _ what: String) throws(ScanBatchError) -> UInt8 {
        guard offset < bytes.count else { throw ScanBatchError(hit: hit, reason: "ends inside its \(what)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint(_ hit: Int, _ what: String) throws(ScanBatchError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte(hit, what)
            guard shift < 63 || (shift == 63 && b <= 1) else { throw ScanBatchError(hit: hit, reason: "its \(what) is longer than 64 bits") }
            value |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
        }
    }

    mutating func hit(number n: Int, advertisements: Int) throws(ScanBatchError) -> (ScanHitFields, Int?) {
        var f = ScanHitFields()
        let flags = try byte(n, "flags")
        guard flags & 0xF0 == 0 else { throw ScanBatchError(hit: n, reason: "unknown flags \(flags)") }
        var address: UInt64 = 0
        for _ in 0..<6 { address = address << 8 | UInt64(try byte(n, "address")) }
        f.address = address
        f.addressType = flags & 8 != 0 ? AddressType.addressRandom.rawValue : AddressType.addressPublic.rawValue
        let count = try varint(n, "count")
        guard count >= 1, count <= UInt64(UInt32.max) else { throw ScanBatchError(hit: n, reason: "a count of \(count)") }
        f.count = UInt32(count)
        if flags & 4 != 0 {
            let unavailable = try varint(n, "rssi unavailable")
            guard unavailable >= 1, unavailable <= count else { throw ScanBatchError(hit: n, reason: "\(unavailable) reports without RSSI of \(count)") }
            f.rssiUnavailable = UInt32(unavailable)
        }
        let measured = Int64(f.count - f.rssiUnavailable)
        if measured > 0 {
            let max = Int32(Int8(bitPattern: try byte(n, "rssi")))
            let spread = try varint(n, "rssi spread")
            let deficit = try varint(n, "rssi deficit")
            guard spread <= 255, Int8(exactly: Int64(max) - Int64(spread)) != nil else { throw ScanBatchError(hit: n, reason: "an RSSI spread of \(spread)") }
            // |max| × measured < 2^39: a deficit beyond 2^40 cannot come from a real sum.
            guard deficit < 1 << 40 else { throw ScanBatchError(hit: n, reason: "an RSSI deficit of \(deficit)") }
            f.rssiMax = max
            f.rssiMin = max - Int32(spread)
            f.rssiSum = Int64(max) * measured - Int64(deficit)
        }
        let last = try varint(n, "last offset")
        let duration = try varint(n, "duration")
        let (first, overflow) = last.addingReportingOverflow(duration)
        guard !overflow else { throw ScanBatchError(hit: n, reason: "a duration past 64 bits") }
        f.lastOffsetUs = last
        f.firstOffsetUs = first
        if flags & 1 != 0 { f.txPower = Int32(Int8(bitPattern: try byte(n, "tx power"))) }
        var advertisement: Int?
        if flags & 2 != 0 {
            let i = try varint(n, "advertisement")
            guard i < UInt64(advertisements) else { throw ScanBatchError(hit: n, reason: "advertisement \(i) of \(advertisements)") }
            advertisement = Int(i)
        }
        return (f, advertisement)
    }
}
