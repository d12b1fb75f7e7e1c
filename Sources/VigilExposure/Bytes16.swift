import VigilHex

/// Sixteen bytes held inline — no heap allocation, cheap to hash and compare — for Temporary
/// Exposure Keys and Rolling Proximity Identifiers, of which matching handles millions.
///
/// `lo` holds bytes 0..<8 and `hi` bytes 8..<16, each loaded little-endian, so the memory layout
/// of a `Bytes16` (and of an array of them) is exactly the byte string: the batch deriver writes
/// cipher output straight into `[RollingProximityIdentifier]` storage.
public struct Bytes16: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let count = 16
    public var lo: UInt64
    public var hi: UInt64

    public init(lo: UInt64, hi: UInt64) {
        self.lo = lo
        self.hi = hi
    }

    /// Exactly 16 bytes, or nil (never traps on other lengths).
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == Self.count else { return nil }
        var lo: UInt64 = 0
        var hi: UInt64 = 0
        for (i, byte) in bytes.enumerated() {
            if i < 8 { lo |= UInt64(byte) << (8 * UInt64(i)) } else { hi |= UInt64(byte) << (8 * UInt64(i - 8)) }
        }
        self.init(lo: lo, hi: hi)
    }

    /// Exactly 16 bytes of hex (upper or lower case), or nil.
    public init?(hex: String) {
        guard let bytes = Hex.decode(hex) else { return nil }
        self.init(bytes)
    }

    public var bytes: [UInt8] {
        (0..<Self.count).map { i in i < 8 ? UInt8(truncatingIfNeeded: lo >> (8 * UInt64(i))) : UInt8(truncatingIfNeeded: hi >> (8 * UInt64(i - 8))) }
    }

    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }

    /// Lexicographic order of the byte strings (for sorted indexes and stable output).
    public static func < (a: Bytes16, b: Bytes16) -> Bool {
        a.lo != b.lo ? a.lo.byteSwapped < b.lo.byteSwapped : a.hi.byteSwapped < b.hi.byteSwapped
    }

    /// The 16 bytes in memory order, for handing to a cipher without copying into an array.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var copy = (lo.littleEndian, hi.littleEndian)
        return try Swift.withUnsafeBytes(of: &copy) { (raw) throws(E) -> R in try body(raw) }
    }
}
