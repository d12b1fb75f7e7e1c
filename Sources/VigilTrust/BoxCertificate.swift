import Crypto

// A key per box (issue 29, docs/signed-frames.md): each box signs its own frames with an Ed25519
// key; the network's key certifies which node id a box key speaks for, and revokes it. These are
// the two documents the network key signs, in the bytes they travel as (in frames, on the hub's
// feed and in files on the box).
//
//   certificate, 109 bytes                       revocation, 105 bytes
//   0       version (1)                           0       version (1)
//   1-4     node id, u32 big-endian               1-4     node id, u32 big-endian
//   5-36    the box's Ed25519 public key          5-36    the revoked box public key
//   37-40   issued, u32 Unix seconds              37-40   revoked at, u32 Unix seconds
//   41-44   expires, u32 Unix seconds             41-104  network signature over
//   45-108  network signature over                        "vigil-revoke-v1" | bytes 0-40
//           "vigil-cert-v1" | bytes 0-44

/// Why a certificate, revocation, key or signed frame was refused, or could not be made.
public enum SignedFrameError: Error, Equatable, Sendable {
    // Structure.
    case truncated(length: Int, needed: Int)
    case trailingBytes(length: Int, expected: Int)
    case unsupportedVersion(UInt8)
    case unknownType(UInt8)
    case reservedBitsSet
    case locationNotAllowed
    /// Not an Ed25519 public key the library accepts (32 bytes), or a private key that is not 32.
    case badKey
    // Signatures.
    /// The network's signature on a certificate does not verify: forged, or another network's.
    case forgedCertificate
    /// The network's signature on a revocation does not verify.
    case forgedRevocation
    /// The frame's signature does not verify under the key its certificate names.
    case badSignature
    // Rules.
    /// A raise or cancel signed by a box other than the alert's origin.
    case signerIsNotOrigin(signer: UInt32, origin: UInt32)
    /// The certificate's key (or node id) has been revoked by the network.
    case revoked(node: UInt32)
    /// The certificate expired (or is not yet valid) at the receiver's time.
    case certificateNotValid(node: UInt32)
    /// Signed more than the allowed age before the receiver's time.
    case tooOld
    /// Signed further ahead of the receiver's time than clocks can differ.
    case signedInTheFuture
    /// The alert expired at or before the receiver's time.
    case stale
    /// The expiry lies further ahead than the longest lifetime a receiver accepts.
    case tooFarInFuture
    // Encoding.
    case hopLimitReached
    case fieldOutOfRange(String)
    /// The certificate given to sign with is not for the signing key.
    case certificateDoesNotMatchKey
    case signingFailed
}

/// The network's public key: what every box needs to check any box's frames.
public struct NetworkPublicKey: Sendable, Equatable, Hashable {
    public let rawRepresentation: [UInt8]
    package let key: Curve25519.Signing.PublicKey

    public init(rawRepresentation bytes: some Collection<UInt8>) throws(SignedFrameError) {
        let raw = Array(bytes)
        guard raw.count == 32, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { throw .badKey }
        self.rawRepresentation = raw
        self.key = key
    }

    package init(_ key: Curve25519.Signing.PublicKey) {
        self.key = key
        rawRepresentation = Array(key.rawRepresentation)
    }

    public static func == (a: Self, b: Self) -> Bool { a.rawRepresentation == b.rawRepresentation }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawRepresentation) }

    /// The first 8 bytes of SHA-256 of the key, in hex: how staff compare keys by eye.
    public var fingerprint: String {
        SHA256.hash(data: rawRepresentation).prefix(8).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

/// The network's signing key (the hub's, or the shelter coordinator's file). Never printed.
public struct NetworkSigningKey: Sendable, CustomStringConvertible {
    package let key: Curve25519.Signing.PrivateKey

    /// A new random key.
    public init() { key = Curve25519.Signing.PrivateKey() }

    /// From its 32-byte seed (RFC 8032's private key).
    public init(seed: some Collection<UInt8>) throws(SignedFrameError) {
        guard seed.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: Array(seed)) else { throw .badKey }
        self.key = key
    }

    public var seed: [UInt8] { Array(key.rawRepresentation) }
    public var publicKey: NetworkPublicKey { NetworkPublicKey(key.publicKey) }
    public var description: String { "NetworkSigningKey(\(publicKey.fingerprint), redacted)" }

    /// Certifies `boxKey` as node `node`'s, valid from `issued` to `expires` (Unix seconds).
    public func certify(node: UInt32, boxKey: BoxPublicKey, issued: UInt32,
                        expires: UInt32) throws(SignedFrameError) -> BoxCertificate {
        guard expires > issued else { throw .fieldOutOfRange("expires must be after issued") }
        var body = BoxCertificate.body(node: node, key: boxKey.rawRepresentation, first: issued, second: expires)
        guard let signature = try? key.signature(for: BoxCertificate.context + body) else { throw .signingFailed }
        body += signature
        return try BoxCertificate(bytes: body)
    }

    /// Revokes `boxKey` (node `node`'s) as of `at`.
    public func revoke(node: UInt32, boxKey: BoxPublicKey, at: UInt32) throws(SignedFrameError) -> Revocation {
        var body = Revocation.body(node: node, key: boxKey.rawRepresentation, at: at)
        guard let signature = try? key.signature(for: Revocation.context + body) else { throw .signingFailed }
        body += signature
        return try Revocation(bytes: body)
    }
}

/// A box's public key (in its certificate): its 32 bytes. The library's key is made only to
/// verify (`signingKey()`): making one costs about as much as a verification, and a frame heard
/// again, or refused before its signature, should not pay for it.
public struct BoxPublicKey: Sendable, Equatable, Hashable {
    public let rawRepresentation: [UInt8]

    public init(rawRepresentation bytes: some Collection<UInt8>) throws(SignedFrameError) {
        let raw = Array(bytes)
        guard raw.count == 32 else { throw .badKey }
        self.rawRepresentation = raw
    }

    package init(_ key: Curve25519.Signing.PublicKey) {
        rawRepresentation = Array(key.rawRepresentation)
    }

    package func signingKey() throws(SignedFrameError) -> Curve25519.Signing.PublicKey {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: rawRepresentation) else { throw .badKey }
        return key
    }
}

/// A box's own signing key: made at first start, kept in the data directory (mode 0600).
public struct BoxSigningKey: Sendable, CustomStringConvertible {
    package let key: Curve25519.Signing.PrivateKey

    public init() { key = Curve25519.Signing.PrivateKey() }

    public init(seed: some Collection<UInt8>) throws(SignedFrameError) {
        guard seed.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: Array(seed)) else { throw .badKey }
        self.key = key
    }

    public var seed: [UInt8] { Array(key.rawRepresentation) }
    public var publicKey: BoxPublicKey { BoxPublicKey(key.publicKey) }
    public var description: String { "BoxSigningKey(redacted)" }

    package func sign(_ message: [UInt8]) throws(SignedFrameError) -> [UInt8] {
        guard let signature = try? key.signature(for: message) else { throw .signingFailed }
        return Array(signature)
    }
}

/// The network's statement "node N's frames are signed by this key", for a period.
public struct BoxCertificate: Sendable, Equatable, Hashable {
    public static let version: UInt8 = 1
    public static let length = 109
    package static let bodyLength = 45
    package static let context = Array("vigil-cert-v1".utf8)

    /// The 109 bytes as they travel.
    public let bytes: [UInt8]
    public let node: UInt32
    public let boxKey: BoxPublicKey
    public let issuedSeconds: UInt32
    public let expiresSeconds: UInt32

    /// Parses the structure only: `verify(network:)` checks the signature.
    public init(bytes input: some Collection<UInt8>) throws(SignedFrameError) {
        (bytes, node, boxKey) = try NetworkStatement.parse(input, length: Self.length, version: Self.version)
        issuedSeconds = bigEndian32(bytes, 37)
        expiresSeconds = bigEndian32(bytes, 41)
    }

    /// Whether the network key signed exactly these bytes.
    public func verify(network: NetworkPublicKey) throws(SignedFrameError) {
        guard NetworkStatement.isSigned(bytes, bodyLength: Self.bodyLength, context: Self.context, by: network) else { throw .forgedCertificate }
    }

    public func isValid(atSeconds now: UInt64) -> Bool {
        UInt64(issuedSeconds) <= now + Self.issuedSlackSeconds && now < UInt64(expiresSeconds)
    }
    /// A certificate issued by a hub whose clock is a little ahead is still good at once.
    package static let issuedSlackSeconds: UInt64 = 600

    package static func body(node: UInt32, key: [UInt8], first: UInt32, second: UInt32) -> [UInt8] {
        [version] + bigEndianBytes(node) + key + bigEndianBytes(first) + bigEndianBytes(second)
    }
}

/// The network's statement "node N's key K is no longer to be believed", from a time on.
public struct Revocation: Sendable, Equatable, Hashable {
    public static let version: UInt8 = 1
    public static let length = 105
    package static let bodyLength = 41
    package static let context = Array("vigil-revoke-v1".utf8)

    public let bytes: [UInt8]
    public let node: UInt32
    public let boxKey: BoxPublicKey
    public let revokedAtSeconds: UInt32

    public init(bytes input: some Collection<UInt8>) throws(SignedFrameError) {
        (bytes, node, boxKey) = try NetworkStatement.parse(input, length: Self.length, version: Self.version)
        revokedAtSeconds = bigEndian32(bytes, 37)
    }

    public func verify(network: NetworkPublicKey) throws(SignedFrameError) {
        guard NetworkStatement.isSigned(bytes, bodyLength: Self.bodyLength, context: Self.context, by: network) else { throw .forgedRevocation }
    }

    package static func body(node: UInt32, key: [UInt8], at: UInt32) -> [UInt8] {
        [version] + bigEndianBytes(node) + key + bigEndianBytes(at)
    }
}

/// What certificates and revocations share: a version byte, a node id, a box key, their own
/// fields, and the network key's signature over a context string and everything before it.
package enum NetworkStatement {
    package static func parse(_ input: some Collection<UInt8>, length: Int,
                      version: UInt8) throws(SignedFrameError) -> (bytes: [UInt8], node: UInt32, boxKey: BoxPublicKey) {
        let b = Array(input)
        guard b.count >= length else { throw .truncated(length: b.count, needed: length) }
        guard b.count == length else { throw .trailingBytes(length: b.count, expected: length) }
        guard b[0] == version else { throw .unsupportedVersion(b[0]) }
        return (b, bigEndian32(b, 1), try BoxPublicKey(rawRepresentation: b[5..<37]))
    }

    package static func isSigned(_ bytes: [UInt8], bodyLength: Int, context: [UInt8], by network: NetworkPublicKey) -> Bool {
        network.key.isValidSignature(bytes[bodyLength...], for: context + bytes[..<bodyLength])
    }
}

package func bigEndian32(_ b: [UInt8], _ at: Int) -> UInt32 {
    b[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
}

package func bigEndianBytes(_ value: UInt32) -> [UInt8] {
    [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
}

extension String {
    package func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// A box's proof that it holds the key it asks the hub to certify (docs/signed-frames.md "With a
/// hub"): its signature over a context string, its node id, the key and the hub's certificate
/// fingerprint. Without it any enrolled box could have another box's public key (every frame
/// carries it) certified as its own, then revoked, and every box would refuse the other's frames.
/// The fingerprint keeps a proof made for one hub from being used at another.
public enum KeyPossession {
    static let context = Array("vigil-certify-v1".utf8)

    public static func message(node: UInt64, boxKey: BoxPublicKey, hubFingerprint: String) -> [UInt8] {
        context + (0..<8).map { UInt8(truncatingIfNeeded: node >> (56 - 8 * UInt64($0))) } + boxKey.rawRepresentation
            + Array(hubFingerprint.lowercased().utf8)
    }

    public static func prove(node: UInt64, key: BoxSigningKey, hubFingerprint: String) throws(SignedFrameError) -> [UInt8] {
        try key.sign(message(node: node, boxKey: key.publicKey, hubFingerprint: hubFingerprint))
    }

    public static func isProven(_ signature: [UInt8], node: UInt64, boxKey: BoxPublicKey, hubFingerprint: String) -> Bool {
        guard signature.count == 64, let key = try? boxKey.signingKey() else { return false }
        return key.isValidSignature(signature, for: message(node: node, boxKey: boxKey, hubFingerprint: hubFingerprint))
    }
}
