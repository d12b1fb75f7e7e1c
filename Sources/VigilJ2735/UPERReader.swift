/// Why a J2735 message could not be decoded. Every malformed input ends here (counted by the
/// caller as undecodable); nothing traps.
public enum J2735Error: Error, Equatable, Sendable {
    /// The bytes end before the message does.
    case truncated
    /// A value out of its range, or a length the encoding cannot have.
    case invalid(String)
    /// Well-formed, but not what this decoder reads (fragmented lengths, another message).
    case unsupported(String)
}

/// Reads ASN.1 unaligned PER (X.691, UPER) bit by bit: the few constructs the J2735 messages
/// the box reads need: bits, constrained whole numbers, length determinants, octets, and the
/// skipping of open types and extension additions. Bounds-checked everywhere.
public struct UPERReader: Sendable {
    public let bytes: [UInt8]
    /// The next bit to read, counted from the first byte's most significant bit.
    public private(set) var position = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var bitsLeft: Int { bytes.count * 8 - position }

    public mutating func bit() throws(J2735Error) -> Bool {
        guard position < bytes.count * 8 else { throw .truncated }
        defer { position += 1 }
        return bytes[position >> 3] & (0x80 >> UInt8(position & 7)) != 0
    }

    /// `count` bits (0...64), most significant first.
    public mutating func bits(_ count: Int) throws(J2735Error) -> UInt64 {
        guard (0...64).contains(count) else { throw .invalid("a field of \(count) bits") }
        guard count <= bitsLeft else { throw .truncated }
        var value: UInt64 = 0
        for _ in 0 ..< count { value = value << 1 | (try bit() ? 1 : 0) }
        return value
    }

    /// A whole number constrained to `range`: the offset from its lower bound in the fewest
    /// bits that hold the range (X.691 §11.5.6; none for a single value).
    public mutating func integer(in range: ClosedRange<Int64>) throws(J2735Error) -> Int64 {
        let span = UInt64(bitPattern: range.upperBound &- range.lowerBound)
        let width = span == 0 ? 0 : 64 - span.leadingZeroBitCount
        let offset = try bits(width)
        guard offset <= span else { throw .invalid("\(offset) over the range \(range)") }
        return range.lowerBound &+ Int64(bitPattern: offset)
    }

    /// An unconstrained length determinant (X.691 §11.9, unaligned): one octet below 128, two
    /// below 16,384; fragmented lengths are refused (no J2735 message the box reads is that long).
    public mutating func length() throws(J2735Error) -> Int {
        if try !bit() { return Int(try bits(7)) }
        if try !bit() { return Int(try bits(14)) }
        throw .unsupported("a fragmented length")
    }

    /// A "normally small" whole number (X.691 §11.6): extension indexes and bitmap lengths.
    public mutating func normallySmall() throws(J2735Error) -> Int {
        if try !bit() { return Int(try bits(6)) }
        let n = try length()
        // Extension indexes and bitmap lengths: a few, never millions.
        guard n <= 2 else { throw .invalid("a normally small number of \(n) octets") }
        return Int(try bits(8 * n))
    }

    public mutating func octets(_ count: Int) throws(J2735Error) -> [UInt8] {
        guard count >= 0, count * 8 <= bitsLeft else { throw .truncated }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for _ in 0 ..< count { out.append(UInt8(try bits(8))) }
        return out
    }

    /// An open type (X.691 §11.2): its length in octets and its encoding, returned whole.
    public mutating func openType() throws(J2735Error) -> [UInt8] {
        try octets(try length())
    }

    /// The extension additions of a SEQUENCE whose extension bit was set: a bitmap of which are
    /// present, then each as an open type, skipped (X.691 §19.7-19.9).
    public mutating func skipExtensionAdditions() throws(J2735Error) {
        let count = try normallySmall() + 1
        var present = 0
        for _ in 0 ..< count { if try bit() { present += 1 } }
        for _ in 0 ..< present { _ = try openType() }
    }

    /// `SEQUENCE (SIZE(1..4)) OF RegionalExtension`: a region id and an open type each, skipped.
    public mutating func skipRegionalExtensions() throws(J2735Error) {
        let count = Int(try integer(in: 1...4))
        for _ in 0 ..< count {
            _ = try integer(in: 0...255)
            _ = try openType()
        }
    }

    /// The length of a `SIZE(range)` list or string: the offset from the smallest size, in the
    /// fewest bits (X.691 §11.9.3.3; ranges here are all under 64K).
    public mutating func constrainedLength(_ range: ClosedRange<Int>) throws(J2735Error) -> Int {
        Int(try integer(in: Int64(range.lowerBound)...Int64(range.upperBound)))
    }

    /// An IA5String of `SIZE(range)`: seven bits a character (X.691 §30.5.3, unaligned).
    public mutating func ia5String(_ range: ClosedRange<Int>) throws(J2735Error) -> String {
        let n = try constrainedLength(range)
        guard n * 7 <= bitsLeft else { throw .truncated }
        var scalars = String.UnicodeScalarView()
        for _ in 0 ..< n { scalars.append(Unicode.Scalar(UInt8(try bits(7)))) }
        return String(scalars)
    }

    /// An enumeration with `count` root values, maybe extensible: the root index, or nil for a
    /// value a newer schema added (its index read and dropped).
    public mutating func enumerated(_ count: Int, extensible: Bool) throws(J2735Error) -> Int? {
        if extensible, try bit() {
            _ = try normallySmall()
            return nil
        }
        return Int(try integer(in: 0...Int64(count - 1)))
    }

    /// A CHOICE's alternative among `count` root ones, maybe extensible: nil for an extension
    /// alternative, whose open-type value has then been skipped.
    public mutating func choice(_ count: Int, extensible: Bool) throws(J2735Error) -> Int? {
        if extensible, try bit() {
            _ = try normallySmall()
            _ = try openType()
            return nil
        }
        return count == 1 ? 0 : Int(try integer(in: 0...Int64(count - 1)))
    }
}
