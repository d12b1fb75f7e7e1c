import Crypto

/// An AES key shared with the alarm receiving centre (§5.4.5): 128, 192 or 256 bits. Its
/// description never shows the key, so it is safe in logs and errors.
///
/// Two conventions exist for writing the key in configuration, and the centre decides which:
/// - `init(hex:)`: 32, 48 or 64 hex digits, two a byte — what DC-09 receivers and the standard
///   mean by a key (and the only one with full strength).
/// - `init(bytes:)` with the ASCII of a 16, 24 or 32 character text — what pysiaalarm 3.2.2 does
///   (`key.encode("utf-8")`): its "0123456789ABCDEF" is AES-128 with those 16 ASCII bytes as key.
public struct DC09Key: Sendable, CustomStringConvertible {
    let symmetricKey: SymmetricKey
    /// 128, 192 or 256.
    public let bitCount: Int

    /// A key of exactly 16, 24 or 32 bytes.
    public init(bytes: [UInt8]) throws(DC09KeyError) {
        guard [16, 24, 32].contains(bytes.count) else { throw .wrongLength(bytes.count) }
        symmetricKey = SymmetricKey(data: bytes)
        bitCount = bytes.count * 8
    }

    /// A key written as 32, 48 or 64 hex digits (either case).
    public init(hex: String) throws(DC09KeyError) {
        guard let bytes = Hex.decode(Array(hex.utf8)[...]) else { throw .notHex }
        try self.init(bytes: bytes)
    }

    public var description: String { "DC09Key(AES-\(bitCount))" }
}
