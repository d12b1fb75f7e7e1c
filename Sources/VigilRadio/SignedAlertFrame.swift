import Crypto
import VigilEvents

// The signed alert frame, version 2 (docs/signed-frames.md), for extended advertising: signed by
// the box that made it, carrying that box's certificate, so a receiver that knows only the
// network's public key checks a frame from a box it never heard of.
//
//   byte 0        version (high nibble, 2) | type (low nibble: 1-8 alerts, 9 cancel, 10 acknowledge, 11 take)
//   byte 1        severity (bits 7-6) | hops (bits 5-3) | location (bit 2) | signer's clock vouched (bit 1) | 0
//   bytes 2-5     origin, u32 big-endian (the alert's; for cancel/ack/take the named alert's)
//   bytes 6-8     counter, u24 big-endian
//   bytes 9-12    expiry, u32 Unix seconds
//   bytes 13-16   signed at, u32 Unix seconds (the signer's time when it made these bytes)
//   [7 bytes]     location, as in version 1
//   109 bytes     the signer's certificate (BoxCertificate)
//   64 bytes      Ed25519 signature by the certified key over
//                 "vigil-frame-v2" | uuid16 LE | every byte before the signature, hops bits zeroed
//
// 190 bytes, 197 with a location: with the 4-byte Service Data AD header, 201 of the 251 one LE Set
// Extended Advertising Data command carries. Hops are outside the signature so that relays keep the
// origin's signature; what that allows is in the specification.
//
// A revocation travels as type 12: byte 0 0x2C, byte 1 hops (bits 5-3), then the 105-byte
// Revocation, which the network key signed.

/// One signed alert, cancel, acknowledgement or take as it travels in an extended advertisement.
public struct SignedAlertFrame: Sendable, Equatable {
    public static let version: UInt8 = 2
    public static let headerLength = 17
    public static let signatureLength = 64
    static let context = Array("vigil-frame-v2".utf8)
    public static let maximumLength = headerLength + AlertFrame.locationLength + BoxCertificate.length + signatureLength

    public enum FrameType: UInt8, Sendable, CaseIterable {
        case sos = 1, medical, fire, flood, evacuate, roadHazard, areaHazard, info
        case cancel, acknowledge
        /// A person took the call for help the frame names, at the signing box.
        case take

        /// Cancel, acknowledge and take name an alert and carry no location.
        public var refersToAnotherAlert: Bool { rawValue >= Self.cancel.rawValue }
        /// Only the alert's origin may raise or cancel it; any certified box may acknowledge or take.
        public var signerMustBeOrigin: Bool { self != .acknowledge && self != .take }

        public init(_ v1: AlertFrame.FrameType) { self = Self(rawValue: v1.rawValue) ?? .info }
        /// The version-1 type (take has none).
        public var v1: AlertFrame.FrameType? { AlertFrame.FrameType(rawValue: rawValue) }
    }
    static let revocationType: UInt8 = 12

    public var type: FrameType
    public var severity: AlertSeverityBits
    /// Relays so far, 0...7: not signed (a relay adds one and keeps the origin's signature).
    public var hops: UInt8
    public var origin: UInt32
    public var counter: UInt32
    public var expirySeconds: UInt32
    public var signedAtSeconds: UInt32
    /// The signer's clock was synchronised or vouched for when it signed (`VouchedClock`).
    public var signerClockVouched: Bool
    public var location: AlertFrame.Coordinates?
    public var certificate: BoxCertificate
    public var signature: [UInt8]

    /// The signer's node id (its certificate's).
    public var signer: UInt32 { certificate.node }
    public var id: AlertID { AlertID(origin: UInt64(origin), counter: counter) }

    /// Two bits of severity as on the air (the log's AlertSeverity 0...3).
    public typealias AlertSeverityBits = UInt8

    /// Makes and signs a frame. `certificate` must be the network's certificate for `key`.
    public static func sign(type: FrameType, severity: UInt8 = 0, hops: UInt8 = 0, origin: UInt32, counter: UInt32,
                            expirySeconds: UInt32, signedAtSeconds: UInt32, clockVouched: Bool,
                            location: AlertFrame.Coordinates? = nil, key: BoxSigningKey, certificate: BoxCertificate,
                            uuid: UInt16 = AlertFrame.defaultServiceUUID) throws(SignedFrameError) -> [UInt8] {
        guard certificate.boxKey == key.publicKey else { throw .certificateDoesNotMatchKey }
        guard hops <= AlertFrame.maximumHops else { throw .fieldOutOfRange("hops") }
        guard severity <= 3 else { throw .fieldOutOfRange("severity") }
        guard counter <= AlertFrame.maximumCounter else { throw .fieldOutOfRange("counter") }
        if let location {
            guard !type.refersToAnotherAlert else { throw .locationNotAllowed }
            guard location.isValid else { throw .fieldOutOfRange("location") }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(maximumLength)
        bytes.append(version << 4 | type.rawValue)
        bytes.append(severity << 6 | (location == nil ? 0 : 0x04) | (clockVouched ? 0x02 : 0))
        bytes += bigEndianBytes(origin)
        bytes += bigEndianBytes(counter).suffix(3)
        bytes += bigEndianBytes(expirySeconds)
        bytes += bigEndianBytes(signedAtSeconds)
        if let location { bytes += location.packed }
        bytes += certificate.bytes
        bytes += try key.sign(signedMessage(bytes[...], uuid: uuid))
        bytes[1] |= hops << 3
        return bytes
    }

    /// What the signature covers: the context, the UUID and the bytes with the hops bits zeroed.
    static func signedMessage(_ body: ArraySlice<UInt8>, uuid: UInt16) -> [UInt8] { signedMessage(context: context, body, uuid: uuid) }

    /// What a version-2 frame's signature covers: its kind's context (so a signature made for one
    /// kind never verifies as another), the UUID (2 bytes, little-endian) and every byte before
    /// the signature with byte 1's hops bits zeroed (relays change them).
    static func signedMessage(context: [UInt8], _ body: ArraySlice<UInt8>, uuid: UInt16) -> [UInt8] {
        var message = context
        message.reserveCapacity(context.count + 2 + body.count)
        message += [UInt8(truncatingIfNeeded: uuid), UInt8(truncatingIfNeeded: uuid >> 8)]
        message += body
        message[context.count + 2 + 1] &= ~0x38
        return message
    }

    /// Parses the structure (no signature checked): `FrameVerifier` does the rest.
    public static func parse(_ input: some Collection<UInt8>) throws(SignedFrameError) -> SignedAlertFrame {
        let b = Array(input)
        guard b.count >= 2 else { throw .truncated(length: b.count, needed: headerLength) }
        guard b[0] >> 4 == version else { throw .unsupportedVersion(b[0] >> 4) }
        guard let type = FrameType(rawValue: b[0] & 0x0F) else { throw .unknownType(b[0] & 0x0F) }
        let flags = b[1]
        guard flags & 0x01 == 0 else { throw .reservedBitsSet }
        let hasLocation = flags & 0x04 != 0
        guard !(hasLocation && type.refersToAnotherAlert) else { throw .locationNotAllowed }
        let certificateStart = headerLength + (hasLocation ? AlertFrame.locationLength : 0)
        let expected = certificateStart + BoxCertificate.length + signatureLength
        guard b.count >= expected else { throw .truncated(length: b.count, needed: expected) }
        guard b.count == expected else { throw .trailingBytes(length: b.count, expected: expected) }
        var location: AlertFrame.Coordinates?
        if hasLocation {
            guard let l = AlertFrame.Coordinates(packed: b[headerLength..<certificateStart]) else { throw .reservedBitsSet }
            location = l
        }
        let certificate = try BoxCertificate(bytes: b[certificateStart..<certificateStart + BoxCertificate.length])
        return SignedAlertFrame(type: type, severity: flags >> 6, hops: (flags >> 3) & 0x07, origin: bigEndian32(b, 2),
                                counter: bigEndian32(b, 5) & 0xFF_FFFF, expirySeconds: bigEndian32(b, 9),
                                signedAtSeconds: bigEndian32(b, 13), signerClockVouched: flags & 0x02 != 0,
                                location: location, certificate: certificate, signature: Array(b[(expected - signatureLength)...]))
    }

    /// The same bytes with the hops field set to `hops` (what a relay advertises: the signature kept).
    public static func withHops(_ frame: [UInt8], _ hops: UInt8) throws(SignedFrameError) -> [UInt8] {
        guard frame.count >= 2, frame[0] >> 4 == version else { throw .unsupportedVersion(frame.first.map { $0 >> 4 } ?? 0) }
        guard hops <= AlertFrame.maximumHops else { throw .hopLimitReached }
        var next = frame
        next[1] = (frame[1] & ~0x38) | hops << 3
        return next
    }

    /// The bytes a relay advertises: the same, one more hop, the signature kept.
    public static func relayed(_ frame: [UInt8]) throws(SignedFrameError) -> [UInt8] {
        guard frame.count >= 2, frame[0] >> 4 == version else { throw .unsupportedVersion(frame.first.map { $0 >> 4 } ?? 0) }
        let hops = (frame[1] >> 3) & 0x07
        guard hops < AlertFrame.maximumHops else { throw .hopLimitReached }
        var next = frame
        next[1] = (frame[1] & ~0x38) | (hops + 1) << 3
        return next
    }

    /// The version-1 view (what the log and the alert book are fed), or nil for a take.
    public var asVersion1: AlertFrame? {
        guard let v1 = type.v1 else { return nil }
        return AlertFrame(type: v1, severity: AlertSeverity(rawValue: Int(severity)) ?? .unspecified, hops: hops,
                          origin: origin, counter: counter, expirySeconds: expirySeconds, location: location)
    }
}

/// A revocation as it travels on the air (type 12), relayed like an alert.
public enum RevocationFrame {
    public static let length = 2 + Revocation.length

    public static func encode(_ revocation: Revocation, hops: UInt8 = 0) -> [UInt8] {
        [SignedAlertFrame.version << 4 | SignedAlertFrame.revocationType, (hops & 0x07) << 3] + revocation.bytes
    }

    /// Nil when the bytes are not a revocation frame at all; throws when they are one, malformed.
    public static func parse(_ input: some Collection<UInt8>) throws(SignedFrameError) -> (revocation: Revocation, hops: UInt8)? {
        let b = Array(input)
        guard b.first == SignedAlertFrame.version << 4 | SignedAlertFrame.revocationType else { return nil }
        guard b.count >= length else { throw .truncated(length: b.count, needed: length) }
        guard b.count == length else { throw .trailingBytes(length: b.count, expected: length) }
        guard b[1] & ~0x38 == 0 else { throw .reservedBitsSet }
        return (try Revocation(bytes: b[2...]), (b[1] >> 3) & 0x07)
    }

    public static func relayed(_ frame: [UInt8]) throws(SignedFrameError) -> [UInt8] {
        guard frame.count == length else { throw .truncated(length: frame.count, needed: length) }
        let hops = (frame[1] >> 3) & 0x07
        guard hops < AlertFrame.maximumHops else { throw .hopLimitReached }
        var next = frame
        next[1] = (hops + 1) << 3
        return next
    }
}
