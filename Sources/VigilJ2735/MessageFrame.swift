/// SAE J2735's MessageFrame: a message id and the message itself as an open type (its UPER
/// encoding, whole octets). What DriveAZ's feed carries on its `j2735` topics, and inside
/// `GeoRoutedMsg` on its `j2735_gr` topics.
public struct MessageFrame: Equatable, Sendable {
    /// DSRCmsgID (0...32767): 31 a TIM, 32 a PSM, 20 a BSM.
    public var messageID: Int
    public var value: [UInt8]

    public static let travelerInformation = 31
    public static let personalSafetyMessage = 32

    public init(messageID: Int, value: [UInt8]) {
        self.messageID = messageID
        self.value = value
    }

    public static func decode(_ bytes: [UInt8]) throws(J2735Error) -> MessageFrame {
        var reader = UPERReader(bytes)
        let extended = try reader.bit()
        let id = Int(try reader.integer(in: 0...32_767))
        let value = try reader.openType()
        // Additions a newer MessageFrame might carry come after the value: nothing the box reads.
        if extended { try reader.skipExtensionAdditions() }
        return MessageFrame(messageID: id, value: value)
    }

    /// The frame's UPER encoding (the box's own PSMs in VRU mode, and tests).
    public func encode() -> [UInt8] {
        var writer = UPERWriter()
        writer.bit(false)
        writer.integer(Int64(messageID), in: 0...32_767)
        writer.openType(value)
        return writer.bytes
    }
}

/// Writes unaligned PER, the inverse of `UPERReader` for what the box sends.
public struct UPERWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var used = 0 // bits used in the last byte (0: a new byte starts)

    public init() {}

    public mutating func bit(_ on: Bool) {
        if used == 0 { bytes.append(0) }
        if on { bytes[bytes.count - 1] |= 0x80 >> UInt8(used) }
        used = (used + 1) & 7
    }

    public mutating func bits(_ value: UInt64, _ count: Int) {
        guard count > 0 else { return }
        for i in stride(from: count - 1, through: 0, by: -1) { bit(value >> UInt64(i) & 1 == 1) }
    }

    /// A whole number constrained to `range` (clamped into it).
    public mutating func integer(_ value: Int64, in range: ClosedRange<Int64>) {
        let span = UInt64(bitPattern: range.upperBound &- range.lowerBound)
        let width = span == 0 ? 0 : 64 - span.leadingZeroBitCount
        let clamped = min(max(value, range.lowerBound), range.upperBound)
        bits(UInt64(bitPattern: clamped &- range.lowerBound), width)
    }

    public mutating func octets(_ data: [UInt8]) { for b in data { bits(UInt64(b), 8) } }

    /// An open type: a length determinant (up to 16,383 octets) and the octets.
    public mutating func openType(_ data: [UInt8]) {
        let n = min(data.count, 16_383)
        if n < 128 { bits(UInt64(n), 8) } else { bits(0x8000 | UInt64(n), 16) }
        octets(Array(data.prefix(n)))
    }
}
