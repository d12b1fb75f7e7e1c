/// Why a frame could not be built. Every case is a configuration or caller mistake (the inputs
/// are the box's own, not a peer's), named so the fix is obvious; none is a reason to drop a call
/// for help silently — `AlarmReport` only produces events that encode.
public enum DC09EncodeError: Error, Equatable, Sendable {
    /// The account number is not 3 to 16 hex digits (§5.5.1.6). Shown as configured, cut to 16.
    case badAccount(String)
    /// The receiver number is not 1 to 6 hex digits (§5.5.1.7; leave it out with nil).
    case badReceiver(String)
    /// The line (account prefix) is not 1 to 6 hex digits (§5.5.1.8).
    case badLine(String)
    /// A Contact ID event code must be 3 digits: 0...999.
    case eventCodeOutOfRange(Int)
    /// A Contact ID partition (group) must be 2 digits: 0...99.
    case partitionOutOfRange(Int)
    /// A Contact ID zone or user must be 3 digits: 0...999.
    case zoneOutOfRange(Int)
    /// The time is before 1970 or past 9999 (the timestamp's four-digit year).
    case timeOutOfRange(utcSeconds: Int64)
    /// An encrypted frame needs up to 16 random pad bytes; fewer were given.
    case padTooShort(needed: Int, given: Int)
    /// The AES implementation refused the key or the blocks (not expected with a `DC09Key`).
    case encryptionFailed
}

/// Why a key was refused.
public enum DC09KeyError: Error, Equatable, Sendable {
    /// AES takes 16, 24 or 32 bytes (128, 192, 256 bits; §5.4.5); this many were given.
    case wrongLength(Int)
    /// The configured key has a byte that is not a hex digit.
    case notHex
}
