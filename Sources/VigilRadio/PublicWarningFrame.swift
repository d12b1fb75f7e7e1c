import Crypto
import VigilEvents

// The public warning frame (signed frames, type 13; docs/signed-frames.md "Public warning frame"):
// a box tells the boxes in range that a public authority's warning (CAP, docs/warnings.md) is in
// force at its site, so a box without an uplink warns its shelter too. It carries no CAP document,
// only what a neighbour needs to announce it, and is signed by the box that heard the authority
// (the authority's own signature does not fit in an advert): receivers believe the box, which the
// network certified, not the authority.
//
//   byte 0        0x2D: version 2 (high nibble) | type 13 (low nibble)
//   byte 1        level (bits 7-6: 2 shown, 3 sounds) | hops (bits 5-3, 0) | 0 (bit 2) |
//                 signer's clock vouched (bit 1) | 0 (bit 0)
//   bytes 2-5     the signer's node id (the certificate's)
//   bytes 6-10    the warning's name on the air: 40 bits of FNV-1a over its CAP sender, a zero
//                 byte and its identifier (`WarningBook.airDigest`); a repeat keeps it
//   bytes 11-14   expiry, u32 Unix seconds: the frame's (at most `lifetimeSeconds` after signing)
//   bytes 15-18   signed at, u32 Unix seconds
//   byte 19       headline length n, 0...48
//   n bytes       the authority's headline (or event), UTF-8, no control characters
//   109 bytes     the signer's certificate
//   64 bytes      Ed25519 signature by the certified key over
//                 "vigil-warning-v1" | uuid16 LE | every byte before the signature, hops bits zeroed
//
// 193 + n bytes, at most 241: with the 4-byte Service Data AD header, 245 of the 251 one LE Set
// Extended Advertising Data command carries.

/// A public authority's warning in force at the signing box's site, as it travels on the air.
public struct PublicWarningFrame: Sendable, Equatable {
    public static let type: UInt8 = 13
    public static let firstByte: UInt8 = SignedAlertFrame.version << 4 | type
    public static let headerLength = 20
    public static let headlineLimit = 48
    static let context = Array("vigil-warning-v1".utf8)
    public static let maximumLength = headerLength + headlineLimit + BoxCertificate.length + SignedAlertFrame.signatureLength
    /// A frame expires this long after it was signed, or with its warning if sooner: the signer
    /// signs anew every ten minutes while the warning is in force, so a warning ended at the
    /// signer (cancelled, updated, expired) leaves its neighbours within this time.
    public static let lifetimeSeconds: UInt32 = 1_800

    /// How loud the signer's warning is at its site (CAP's table, docs/warnings.md): only these
    /// two go on the air.
    public enum Level: UInt8, Sendable, Equatable {
        case shown = 2
        case sounds = 3
    }

    public var level: Level
    /// 0: warnings are not relayed from box to box (receivers refuse other counts).
    public var hops: UInt8
    public var signer: UInt32 { certificate.node }
    /// 40 bits (`WarningBook.airDigest`).
    public var digest: UInt64
    public var expirySeconds: UInt32
    public var signedAtSeconds: UInt32
    public var signerClockVouched: Bool
    public var headline: String
    public var certificate: BoxCertificate
    public var signature: [UInt8]

    /// The headline as it goes on the air, in its one canonical form: control characters and
    /// line breaks become spaces, invisible and direction-changing characters are dropped, runs
    /// of spaces are one, none at either end, cut at a character to at most `headlineLimit`
    /// bytes. `parse` refuses any other form, so one headline is one string everywhere (a
    /// receiver compares it to know whether a frame says something new).
    public static func airHeadline(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var bytes = 0
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            if isInvisible(scalar) { continue }
            if isSpace(scalar) {
                pendingSpace = !out.isEmpty
                continue
            }
            let length = UTF8.width(scalar) + (pendingSpace ? 1 : 0)
            guard bytes + length <= headlineLimit else { break }
            if pendingSpace { out.append(" ") }
            out.append(scalar)
            bytes += length
            pendingSpace = false
        }
        return String(out)
    }

    /// Spaces, line breaks and other control characters: one space between words.
    static func isSpace(_ s: Unicode.Scalar) -> Bool {
        s.value <= 0x20 || (0x7F...0xA0).contains(s.value) || s.value == 0x2028 || s.value == 0x2029
            || s.properties.isWhitespace
    }

    /// Characters a reader cannot see that change what is shown: direction marks, embeddings,
    /// overrides and isolates, zero-width characters, the byte-order mark, tags.
    static func isInvisible(_ s: Unicode.Scalar) -> Bool {
        (0x200B...0x200F).contains(s.value) || (0x202A...0x202E).contains(s.value) || (0x2060...0x2069).contains(s.value)
            || s.value == 0x061C || s.value == 0xFEFF || s.value == 0x00AD || (0xE0000...0xE007F).contains(s.value)
    }

    /// Makes and signs a frame. `certificate` must be the network's certificate for `key`.
    public static func sign(level: Level, digest: UInt64, expirySeconds: UInt32, signedAtSeconds: UInt32, clockVouched: Bool,
                            headline: String, key: BoxSigningKey, certificate: BoxCertificate,
                            uuid: UInt16 = AlertFrame.defaultServiceUUID) throws(SignedFrameError) -> [UInt8] {
        guard certificate.boxKey == key.publicKey else { throw .certificateDoesNotMatchKey }
        guard digest >> 40 == 0 else { throw .fieldOutOfRange("digest") }
        guard expirySeconds > signedAtSeconds, expirySeconds - signedAtSeconds <= lifetimeSeconds else { throw .fieldOutOfRange("expiry") }
        let text = Array(airHeadline(headline).utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(maximumLength)
        bytes.append(firstByte)
        bytes.append(level.rawValue << 6 | (clockVouched ? 0x02 : 0))
        bytes += bigEndianBytes(certificate.node)
        bytes += (0..<5).map { UInt8(truncatingIfNeeded: digest >> UInt64(8 * (4 - $0))) }
        bytes += bigEndianBytes(expirySeconds)
        bytes += bigEndianBytes(signedAtSeconds)
        bytes.append(UInt8(text.count))
        bytes += text
        bytes += certificate.bytes
        bytes += try key.sign(signedMessage(bytes[...], uuid: uuid))
        return bytes
    }

    static func signedMessage(_ body: ArraySlice<UInt8>, uuid: UInt16) -> [UInt8] {
        SignedAlertFrame.signedMessage(context: context, body, uuid: uuid)
    }

    /// Nil when the bytes are not a public warning frame at all; throws when they are one,
    /// malformed. No signature is checked here (`FrameVerifier` does).
    public static func parse(_ input: some Collection<UInt8>) throws(SignedFrameError) -> PublicWarningFrame? {
        let b = Array(input)
        guard b.first == firstByte else { return nil }
        guard b.count >= headerLength else { throw .truncated(length: b.count, needed: headerLength) }
        let flags = b[1]
        guard flags & 0x05 == 0 else { throw .reservedBitsSet }
        guard let level = Level(rawValue: flags >> 6) else { throw .fieldOutOfRange("level") }
        let n = Int(b[19])
        guard n <= headlineLimit else { throw .fieldOutOfRange("headline") }
        let expected = headerLength + n + BoxCertificate.length + SignedAlertFrame.signatureLength
        guard b.count >= expected else { throw .truncated(length: b.count, needed: expected) }
        guard b.count == expected else { throw .trailingBytes(length: b.count, expected: expected) }
        let textBytes = b[headerLength..<headerLength + n]
        // Valid UTF-8 without control characters: what a sender writes, so anything else is not
        // a sender's (and never reaches a page or a log line as it came).
        guard let headline = String(validating: textBytes, as: UTF8.self), headline == airHeadline(headline) else {
            throw .fieldOutOfRange("headline")
        }
        let certificateStart = headerLength + n
        let certificate = try BoxCertificate(bytes: b[certificateStart..<certificateStart + BoxCertificate.length])
        let digest = b[6..<11].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return PublicWarningFrame(level: level, hops: (flags >> 3) & 0x07, digest: digest, expirySeconds: bigEndian32(b, 11),
                                  signedAtSeconds: bigEndian32(b, 15), signerClockVouched: flags & 0x02 != 0, headline: headline,
                                  certificate: certificate, signature: Array(b[(expected - SignedAlertFrame.signatureLength)...]),
                                  claimedSigner: bigEndian32(b, 2))
    }

    /// The node id in bytes 2-5, which must be the certificate's.
    public var claimedSigner: UInt32

    init(level: Level, hops: UInt8, digest: UInt64, expirySeconds: UInt32, signedAtSeconds: UInt32, signerClockVouched: Bool,
         headline: String, certificate: BoxCertificate, signature: [UInt8], claimedSigner: UInt32) {
        self.level = level
        self.hops = hops
        self.digest = digest
        self.expirySeconds = expirySeconds
        self.signedAtSeconds = signedAtSeconds
        self.signerClockVouched = signerClockVouched
        self.headline = headline
        self.certificate = certificate
        self.signature = signature
        self.claimedSigner = claimedSigner
    }
}
