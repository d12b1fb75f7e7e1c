/// A short fingerprint of a hub feed item (its kind, origin time and payload), computed alike by
/// the hub and by a box: the box keeps the one of the item at its cursor, and the hub says what
/// it holds there, so a feed given out again (a hub restored from a backup) is noticed. FNV-1a,
/// 64 bits: it tells items apart, it does not authenticate them (TLS and the box's credential do).
public enum FeedItemDigest {
    public static func of(kind: UInt32, timeMicroseconds: UInt64, payload: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        @inline(__always) func add(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        for shift in stride(from: 24, through: 0, by: -8) { add(UInt8(truncatingIfNeeded: kind >> UInt32(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { add(UInt8(truncatingIfNeeded: timeMicroseconds >> UInt64(shift))) }
        for byte in payload { add(byte) }
        return hash
    }
}
