import VigilHex

/// A Rolling Proximity Identifier: the 16 bytes a GAEN device advertises for one 10-minute
/// interval, AES-128(RPIK, "EN-RPI" ‖ 0×6 ‖ interval LE32). Unlinkable without the key.
///
/// Its memory layout is exactly the 16 bytes (see `Bytes16`), so arrays of identifiers are
/// contiguous 16-byte blocks.
public struct RollingProximityIdentifier: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var value: Bytes16

    public init(_ value: Bytes16) { self.value = value }

    /// Exactly 16 bytes, or nil.
    public init?(_ bytes: some Collection<UInt8>) {
        guard let value = Bytes16(bytes) else { return nil }
        self.value = value
    }

    public var bytes: [UInt8] { value.bytes }
    public var hex: String { value.hex }
    public var description: String { value.hex }
    public static func < (a: Self, b: Self) -> Bool { a.value < b.value }
}

/// The 4 plaintext metadata bytes a GAEN device advertises encrypted (AEM): byte 0 versioning
/// (bits 7:6 major, 5:4 minor), byte 1 the transmit power in dBm (signed), bytes 2-3 reserved.
///
/// Kept as the raw bytes so reserved bits from newer versions survive a decrypt/encrypt round
/// trip; the accessors interpret them.
public struct AssociatedMetadata: Hashable, Sendable, CustomStringConvertible {
    public static let count = 4
    public let bytes: [UInt8]

    /// Version 1.0 metadata with the given transmit power (what v1.x devices send).
    public init(txPower: Int8, majorVersion: UInt8 = 1, minorVersion: UInt8 = 0) {
        bytes = [(majorVersion & 0x03) << 6 | (minorVersion & 0x03) << 4, UInt8(bitPattern: txPower), 0, 0]
    }

    /// Exactly 4 bytes, or nil.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.count else { return nil }
        self.bytes = Array(bytes)
    }

    public var majorVersion: UInt8 { bytes[0] >> 6 }
    public var minorVersion: UInt8 { (bytes[0] >> 4) & 0x03 }
    /// The advertiser's measured radiated transmit power, dBm: attenuation = txPower − RSSI.
    public var txPower: Int8 { Int8(bitPattern: bytes[1]) }

    public var description: String { "v\(majorVersion).\(minorVersion) tx \(txPower) dBm" }
}

/// The 4 encrypted metadata bytes (AEM) advertised after the RPI; readable only with the AEMK,
/// i.e. once the device's key has been published and matched.
public struct AssociatedEncryptedMetadata: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Exactly 4 bytes, or nil.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == AssociatedMetadata.count else { return nil }
        self.bytes = Array(bytes)
    }

    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }
}
