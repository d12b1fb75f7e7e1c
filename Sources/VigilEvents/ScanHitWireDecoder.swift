import Foundation

/// A decoder for the ScanHit wire format, for the replay hot path only.
///
/// Why it exists: ScanHits are about 90 % of a log, and swift-protobuf's generic decoder spends
/// most of its time in unspecialised protocol calls; this decoder fills the same generated struct
/// about three times faster (scripts/bench: replay_decode_eps).
///
/// Contract: it returns either exactly what swift-protobuf would decode, or nil — for anything
/// outside the common shape (unknown or repeated-message fields, a wire type it does not expect,
/// invalid UTF-8, truncation) — and the caller then decodes with swift-protobuf, which stays the
/// reference. `ScanHitWireDecoderTests` checks the two agree on random and mutated inputs.
enum ScanHitWireDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer) -> ScanHit? {
        var reader = WireReader(bytes: bytes)
        var hit = ScanHit()
        var sawAdvertisement = false
        while !reader.atEnd {
            guard let tag = reader.varint() else { return nil }
            switch (tag >> 3, tag & 7) {
            case (1, 0): guard let v = reader.varint() else { return nil }; hit.address = v
            case (2, 0): guard let v = reader.varint() else { return nil }; hit.addressType = AddressType(rawValue: Int(Int32(truncatingIfNeeded: v))) ?? .addressPublic
            case (3, 0): guard let v = reader.varint() else { return nil }; hit.rssiMin = zigzag32(v)
            case (4, 0): guard let v = reader.varint() else { return nil }; hit.rssiMax = zigzag32(v)
            case (5, 0): guard let v = reader.varint() else { return nil }; hit.rssiSum = zigzag64(v)
            case (6, 0): guard let v = reader.varint() else { return nil }; hit.count = UInt32(truncatingIfNeeded: v)
            case (7, 0): guard let v = reader.varint() else { return nil }; hit.firstOffsetUs = v
            case (8, 0): guard let v = reader.varint() else { return nil }; hit.lastOffsetUs = v
            case (9, 0): guard let v = reader.varint() else { return nil }; hit.txPower = zigzag32(v)
            case (11, 0): guard let v = reader.varint() else { return nil }; hit.rssiUnavailable = UInt32(truncatingIfNeeded: v)
            case (10, 2):
                // A repeated submessage field merges; leave that rare case to swift-protobuf.
                guard !sawAdvertisement, let body = reader.lengthDelimited(),
                      let summary = decodeSummary(body) else { return nil }
                hit.advertisement = summary
                sawAdvertisement = true
            default:
                return nil
            }
        }
        return hit
    }

    /// The replay hot path: the same wire format into `ScanHitFields`, nothing allocated but a
    /// name longer than a small string. Accepts exactly the inputs `decode` accepts (a field it
    /// does not keep is still checked as swift-protobuf would check it) and gives the fields of
    /// what `decode` gives, so `ScanHitFields(decode(b)) == decodeFields(b)` for every `b`.
    static func decodeFields(_ bytes: UnsafeRawBufferPointer) -> ScanHitFields? {
        var reader = WireReader(bytes: bytes)
        var hit = ScanHitFields()
        var sawAdvertisement = false
        // Tags as one number (field << 3 | wire type): a switch the compiler can turn into a table.
        while !reader.atEnd {
            guard let tag = reader.varint() else { return nil }
            switch tag {
            case 1 << 3: guard let v = reader.varint() else { return nil }; hit.address = v
            case 2 << 3: guard let v = reader.varint() else { return nil }; hit.addressType = Int(Int32(truncatingIfNeeded: v))
            case 3 << 3: guard let v = reader.varint() else { return nil }; hit.rssiMin = zigzag32(v)
            case 4 << 3: guard let v = reader.varint() else { return nil }; hit.rssiMax = zigzag32(v)
            case 5 << 3: guard let v = reader.varint() else { return nil }; hit.rssiSum = zigzag64(v)
            case 6 << 3: guard let v = reader.varint() else { return nil }; hit.count = UInt32(truncatingIfNeeded: v)
            case 7 << 3: guard let v = reader.varint() else { return nil }; hit.firstOffsetUs = v
            case 8 << 3: guard let v = reader.varint() else { return nil }; hit.lastOffsetUs = v
            case 9 << 3: guard let v = reader.varint() else { return nil }; hit.txPower = zigzag32(v)
            case 11 << 3: guard let v = reader.varint() else { return nil }; hit.rssiUnavailable = UInt32(truncatingIfNeeded: v)
            case 10 << 3 | 2:
                guard !sawAdvertisement, let body = reader.lengthDelimited(),
                      let name = summaryName(body) else { return nil }
                hit.name = name
                sawAdvertisement = true
            default:
                return nil
            }
        }
        return hit
    }

    /// Checks a summary as `decodeSummary` does and returns only its name ("" when absent).
    private static func summaryName(_ bytes: UnsafeRawBufferPointer) -> String? {
        var reader = WireReader(bytes: bytes)
        var name = ""
        while !reader.atEnd {
            guard let tag = reader.varint() else { return nil }
            switch tag {
            case 1 << 3, 3 << 3, 4 << 3, 5 << 3, 6 << 3, 7 << 3:
                guard reader.varint() != nil else { return nil }
            case 2 << 3 | 2:
                guard let body = reader.lengthDelimited(), let text = String(validating: body, as: UTF8.self) else { return nil }
                name = text
            case 3 << 3 | 2, 7 << 3 | 2:
                guard let body = reader.lengthDelimited(), isPackedVarints(body) else { return nil }
            case 8 << 3 | 2, 9 << 3 | 2, 10 << 3 | 2:
                guard reader.lengthDelimited() != nil else { return nil }
            default:
                return nil
            }
        }
        return name
    }

    private static func isPackedVarints(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var reader = WireReader(bytes: bytes)
        while !reader.atEnd {
            guard reader.varint() != nil else { return false }
        }
        return true
    }

    private static func decodeSummary(_ bytes: UnsafeRawBufferPointer) -> AdvertisementSummary? {
        var reader = WireReader(bytes: bytes)
        var summary = AdvertisementSummary()
        while !reader.atEnd {
            guard let tag = reader.varint() else { return nil }
            switch (tag >> 3, tag & 7) {
            case (1, 0): guard let v = reader.varint() else { return nil }; summary.flags = UInt32(truncatingIfNeeded: v)
            case (2, 2):
                guard let body = reader.lengthDelimited(), let name = String(validating: body, as: UTF8.self) else { return nil }
                summary.name = name
            case (3, 0): guard let v = reader.varint() else { return nil }; summary.serviceUuids16.append(UInt32(truncatingIfNeeded: v))
            case (3, 2): guard let body = reader.lengthDelimited(), appendPacked(body, to: &summary.serviceUuids16) else { return nil }
            case (4, 0): guard let v = reader.varint() else { return nil }; summary.companyID = UInt32(truncatingIfNeeded: v)
            case (5, 0): guard let v = reader.varint() else { return nil }; summary.appearance = UInt32(truncatingIfNeeded: v)
            case (6, 0): guard let v = reader.varint() else { return nil }; summary.connectable = v != 0
            case (7, 0): guard let v = reader.varint() else { return nil }; summary.serviceDataUuids16.append(UInt32(truncatingIfNeeded: v))
            case (7, 2): guard let body = reader.lengthDelimited(), appendPacked(body, to: &summary.serviceDataUuids16) else { return nil }
            case (8, 2): guard let body = reader.lengthDelimited() else { return nil }; summary.gaenRpi = Data(body)
            case (9, 2): guard let body = reader.lengthDelimited() else { return nil }; summary.gaenAem = Data(body)
            case (10, 2): guard let body = reader.lengthDelimited() else { return nil }; summary.vigilPresence = Data(body)
            default:
                return nil
            }
        }
        return summary
    }

    private static func appendPacked(_ bytes: UnsafeRawBufferPointer, to values: inout [UInt32]) -> Bool {
        var reader = WireReader(bytes: bytes)
        while !reader.atEnd {
            guard let v = reader.varint() else { return false }
            values.append(UInt32(truncatingIfNeeded: v))
        }
        return true
    }

    @inline(__always)
    private static func zigzag32(_ v: UInt64) -> Int32 {
        let u = UInt32(truncatingIfNeeded: v)
        return Int32(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    @inline(__always)
    private static func zigzag64(_ v: UInt64) -> Int64 {
        Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1)))
    }
}

/// Reads protobuf wire primitives from a buffer; every read is bounds-checked and returns nil
/// rather than trapping.
struct WireReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    var atEnd: Bool { offset >= bytes.count }

    @inline(__always)
    mutating func varint() -> UInt64? {
        // Most varints in a ScanHit (every tag, most values) are one byte.
        guard offset < bytes.count else { return nil }
        let first = bytes[offset]
        if first < 0x80 {
            offset += 1
            return UInt64(first)
        }
        return longVarint()
    }

    private mutating func longVarint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count && shift < 64 {
            let byte = bytes[offset]
            offset += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        return nil
    }

    @inline(__always)
    mutating func lengthDelimited() -> UnsafeRawBufferPointer? {
        guard let length = varint(), length <= UInt64(bytes.count - offset) else { return nil }
        let start = offset
        offset += Int(length)
        return UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
    }
}
