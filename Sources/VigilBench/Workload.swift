import VigilEvents
import VigilSystem

enum Workload {
    /// 2026-01-01T00:00:00Z, the event time of the first benchmark event.
    static let startMicroseconds: UInt64 = 1_767_225_600_000_000
    /// ~2,000 ScanHits per second of node time: every device heard about once per 1 s window.
    static let microsecondsPerEvent: UInt64 = 500
    static let deviceCount = 2_000

    /// A random static address (top two bits set) for device `index`, stable across runs.
    static func address(ofDevice index: Int) -> UInt64 {
        var rng = SplitMix64(seed: 0xD1CE_0000 &+ UInt64(index))
        return (rng.next() & 0x3FFF_FFFF_FFFF) | 0xC000_0000_0000
    }

    /// A ScanHit as the scanner writes one per device per window: four reports folded together,
    /// RSSI statistics, offsets within the window, and a summary with flags and one 16-bit UUID.
    static func scanHit(device: Int, using rng: inout SplitMix64) -> ScanHit {
        var hit = ScanHit()
        hit.address = address(ofDevice: device)
        hit.addressType = .addressRandom
        let base = -95 + Int32(rng.next() % 50)
        let spread = Int32(rng.next() % 12)
        hit.rssiMin = base
        hit.rssiMax = base + spread
        hit.count = 4
        hit.rssiSum = Int64(base) * 4 + Int64(spread) * 2
        hit.firstOffsetUs = 600_000 + rng.next() % 400_000
        hit.lastOffsetUs = rng.next() % 200_000
        var ad = AdvertisementSummary()
        ad.flags = 0x06
        ad.serviceUuids16 = [[0xFE9F, 0xFD6F, 0x180F, 0xFEAA][device % 4]]
        hit.advertisement = ad
        return hit
    }
}

/// The records of an append run: event `i` has kind ScanHit, time start + i * 500 µs and one of
/// a pool of encoded ScanHits. Both Vigil and the raw LMDB baseline store exactly these bytes.
struct AppendWorkload: Sendable {
    let kind = UInt32(EventKind.scanHit.rawValue)
    let payloads: [[UInt8]]

    init(poolSize: Int = 4_096) {
        var rng = SplitMix64(seed: 42)
        payloads = (0..<poolSize).map { i in
            EventCodec.encode(.scanHit(Workload.scanHit(device: i % Workload.deviceCount, using: &rng))).payload
        }
    }

    @inline(__always) func time(_ i: Int) -> UInt64 { Workload.startMicroseconds + UInt64(i) * Workload.microsecondsPerEvent }
    /// A fresh copy of event `i`'s payload: a node encodes every event into its own array, which the
    /// writer thread frees. (Sharing one array between appends would instead make both threads
    /// retain and release the same few reference counts, which no node does.)
    @inline(__always) func payload(_ i: Int) -> [UInt8] {
        payloads[i % payloads.count].withUnsafeBufferPointer { Array($0) }
    }

    /// Longest value `encodeValue` writes.
    var maxValueSize: Int { 24 + (payloads.map(\.count).max() ?? 0) }

    /// Writes event `i`'s LMDB value as the log stores it (a 4-byte checksum field | varint kind |
    /// varint time | payload) into `buffer`; returns its length. The field is left zero: the
    /// baseline stores the same bytes without computing the CRC-32C, so the checksum's cost is
    /// counted against Vigil, as it should be.
    @inline(__always)
    func encodeValue(_ i: Int, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        buffer.storeBytes(of: 0, toByteOffset: 0, as: UInt32.self)
        var offset = writeVarint(UInt64(kind), into: buffer, at: 4)
        offset = writeVarint(time(i), into: buffer, at: offset)
        let payload = payloads[i % payloads.count]
        payload.withUnsafeBytes { src in
            UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + src.count)]).copyMemory(from: src)
        }
        return offset + payload.count
    }
}

/// LEB128, written here rather than borrowed from VigilLog so the baseline has no Vigil code in it.
@inline(__always)
func writeVarint(_ value: UInt64, into buffer: UnsafeMutableRawBufferPointer, at start: Int) -> Int {
    var v = value
    var i = start
    while v >= 0x80 {
        buffer[i] = UInt8(truncatingIfNeeded: v) | 0x80
        v >>= 7
        i += 1
    }
    buffer[i] = UInt8(v)
    return i + 1
}
