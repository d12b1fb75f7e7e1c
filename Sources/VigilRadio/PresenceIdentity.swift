import Crypto

/// Why a presence identity could not be made.
public enum PresenceIdentityError: Error, Equatable, Sendable {
    /// The node secret is not 32 bytes.
    case badSecretLength(Int)
    /// The rotation period is 0 seconds.
    case badRotationPeriod
}

/// A box's rotating presence identity: a 16-byte identifier for its presence frames and a
/// non-resolvable private device address, both changing every rotation period (default 15 min).
///
///   presenceKey = HMAC-SHA256(nodeSecret, "vigil presence key v1")
///   digest      = HMAC-SHA256(presenceKey, "vigil-presence-v1" | interval as u32 big-endian)
///   identifier  = digest[0..<16]
///   address     = digest[16..<22], big-endian, top two bits cleared (a non-resolvable private
///                 address); if the remaining 46 bits are all 0 or all 1, digest[22..<28], then
///                 digest[26..<32], then a fixed fallback.
///
/// Deterministic: the same secret and interval give the same identifier and address. Change
/// the identifier and the address together, at the interval boundary, or the old one links
/// the new one.
public struct PresenceIdentity: Sendable, CustomStringConvertible {
    public static let secretLength = 32
    public static let identifierLength = 16
    public static let defaultRotationSeconds: UInt32 = 900
    static let derivationLabel = Array("vigil presence key v1".utf8)
    static let rotationContext = Array("vigil-presence-v1".utf8)
    /// 46 one bits: the random part of a non-resolvable private address.
    static let randomPartMask: UInt64 = 0x3FFF_FFFF_FFFF
    /// Used only if all three digest windows are invalid (probability about 2^-135).
    static let fallbackAddress: UInt64 = 0x1555_5555_5555

    let presenceKey: SymmetricKey
    public let rotationSeconds: UInt32

    public init(nodeSecret: [UInt8], rotationSeconds: UInt32 = defaultRotationSeconds) throws(PresenceIdentityError) {
        guard nodeSecret.count == Self.secretLength else { throw .badSecretLength(nodeSecret.count) }
        guard rotationSeconds > 0 else { throw .badRotationPeriod }
        let derived = HMAC<SHA256>.authenticationCode(for: Self.derivationLabel, using: SymmetricKey(data: nodeSecret))
        presenceKey = SymmetricKey(data: Array(derived))
        self.rotationSeconds = rotationSeconds
    }

    public var description: String { "PresenceIdentity(every \(rotationSeconds) s, secret redacted)" }

    /// One rotation period's identity.
    public struct Rotation: Sendable, Equatable {
        /// unix seconds / rotation seconds.
        public var interval: UInt32
        /// The 16 bytes a presence frame carries.
        public var identifier: [UInt8]
        /// The 48-bit address in printed order (most significant byte first, as `formatAddress`).
        public var address: UInt64
        public var startUnixSeconds: UInt64
        public var endUnixSeconds: UInt64

        /// The address's 6 bytes least significant first, as HCI LE Set Random Address takes them.
        public var addressLittleEndian: [UInt8] {
            (0..<6).map { UInt8(truncatingIfNeeded: address >> UInt64(8 * $0)) }
        }

        /// The presence frame: version 1, type 0, then the identifier (17 bytes).
        public var presenceFrame: [UInt8] { [AlertFrame.version << 4] + identifier }
    }

    /// The interval number at a time: unix seconds / rotation seconds (wraps after 2^32 intervals).
    public func interval(atUnixSeconds seconds: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: seconds / UInt64(rotationSeconds))
    }

    public func rotation(atUnixSeconds seconds: UInt64) -> Rotation {
        rotation(interval: interval(atUnixSeconds: seconds))
    }

    public func rotation(interval: UInt32) -> Rotation {
        var mac = HMAC<SHA256>(key: presenceKey)
        mac.update(data: Self.rotationContext)
        mac.update(data: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: interval >> $0) })
        let digest = Array(mac.finalize())
        let start = UInt64(interval) * UInt64(rotationSeconds)
        return Rotation(interval: interval,
                        identifier: Array(digest.prefix(Self.identifierLength)),
                        address: Self.nonResolvablePrivateAddress(digest: digest),
                        startUnixSeconds: start,
                        endUnixSeconds: start + UInt64(rotationSeconds))
    }

    /// The first valid non-resolvable private address in the digest: top two bits 0b00, and the
    /// other 46 bits neither all 0 nor all 1 (Core Vol 6 Part B §1.3.2.2).
    static func nonResolvablePrivateAddress(digest: [UInt8]) -> UInt64 {
        for start in [16, 22, 26] where start + 6 <= digest.count {
            let candidate = digest[start..<(start + 6)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } & randomPartMask
            if candidate != 0 && candidate != randomPartMask { return candidate }
        }
        return fallbackAddress
    }

    /// True for a 48-bit value that is a valid non-resolvable private address.
    public static func isNonResolvablePrivateAddress(_ address: UInt64) -> Bool {
        address >> 46 == 0 && address != 0 && address != randomPartMask
    }
}
