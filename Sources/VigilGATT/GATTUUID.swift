/// An attribute type as ATT carries it: a 16-bit UUID (an alias in the Bluetooth base UUID
/// 0000xxxx-0000-1000-8000-00805F9B34FB) or a full 128-bit UUID. ATT sends 128-bit UUIDs
/// little-endian; `bytes128` holds them in the usual written order (big-endian), so
/// `GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")` prints as it was written.
///
/// Two spellings of one UUID are one value: a 128-bit UUID inside the base range is stored as
/// its 16-bit alias, so comparing a peer's 128-bit 0x2902 with `.clientConfiguration` works.
public struct GATTUUID: Hashable, Sendable, CustomStringConvertible {
    /// The 16-bit alias, when the UUID has one.
    public let short: UInt16?
    /// The 128-bit form, big-endian (as written).
    public let bytes128: [UInt8]

    static let base: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]

    public init(_ short: UInt16) {
        self.short = short
        var bytes = Self.base
        bytes[2] = UInt8(short >> 8)
        bytes[3] = UInt8(short & 0xFF)
        bytes128 = bytes
    }

    /// From 16 bytes in written (big-endian) order; nil for any other count.
    public init?(bigEndian bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        if bytes[0] == 0, bytes[1] == 0, Array(bytes[4...]) == Array(Self.base[4...]) {
            self.init(UInt16(bytes[2]) << 8 | UInt16(bytes[3]))
        } else {
            self.init(short: nil, bytes128: bytes)
        }
    }

    private init(short: UInt16?, bytes128: [UInt8]) {
        self.short = short
        self.bytes128 = bytes128
    }

    /// From ATT's little-endian form: 2 or 16 bytes; nil for any other count.
    public init?(attBytes bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        switch array.count {
        case 2: self.init(UInt16(array[0]) | UInt16(array[1]) << 8)
        case 16: self.init(bigEndian: array.reversed())
        default: return nil
        }
    }

    /// From text: "180D", "0x180D", or "7E57C000-2C8F-4F3C-9F91-8577E1891234" (any case).
    public init?(_ text: String) {
        var hex = text.lowercased()
        if hex.hasPrefix("0x") { hex.removeFirst(2) }
        if hex.count == 4, let value = UInt16(hex, radix: 16) {
            self.init(value)
            return
        }
        let groups = hex.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
        let digits = Array(groups.joined())
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var index = 0
        while index < digits.count {
            guard let byte = UInt8(String(digits[index ..< index + 2]), radix: 16) else { return nil }
            bytes.append(byte)
            index += 2
        }
        self.init(bigEndian: bytes)
    }

    /// ATT's form: 2 bytes for an alias, else 16, little-endian.
    public var attBytes: [UInt8] {
        if let short { return [UInt8(short & 0xFF), UInt8(short >> 8)] }
        return bytes128.reversed()
    }

    public var description: String {
        if let short { return String(short, radix: 16, uppercase: true).leftPadded(to: 4) }
        let hex = bytes128.map { String($0, radix: 16, uppercase: true).leftPadded(to: 2) }.joined()
        let characters = Array(hex)
        return [0 ..< 8, 8 ..< 12, 12 ..< 16, 16 ..< 20, 20 ..< 32].map { String(characters[$0]) }.joined(separator: "-")
    }

    // The attribute types GATT itself defines (Core Vol 3 Part G 3.4, Assigned Numbers 3.7/3.8).
    public static let primaryService = GATTUUID(0x2800)
    public static let secondaryService = GATTUUID(0x2801)
    public static let include = GATTUUID(0x2802)
    public static let characteristic = GATTUUID(0x2803)
    public static let extendedProperties = GATTUUID(0x2900)
    public static let userDescription = GATTUUID(0x2901)
    public static let clientConfiguration = GATTUUID(0x2902)
    public static let genericAccess = GATTUUID(0x1800)
    public static let genericAttribute = GATTUUID(0x1801)
    public static let deviceName = GATTUUID(0x2A00)
    public static let appearance = GATTUUID(0x2A01)
    public static let serviceChanged = GATTUUID(0x2A05)
    public static let heartRateService = GATTUUID(0x180D)
    public static let heartRateMeasurement = GATTUUID(0x2A37)
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
