import Crypto
import VigilCore

/// Checks signed frames heard on the air (docs/signed-frames.md "Receiving"): the certificate
/// under the network key, revocations, the frame's signature, who may sign what, and freshness
/// against the time the box can vouch for. A value owned by one loop; no I/O, no clock.
///
/// CPU is bounded: Ed25519 checks are the one expensive step, so a certificate verified once and
/// a frame verified once (the same bytes heard again, as adverts are) cost a hash and a lookup,
/// and the checks a flood of new frames can demand are limited to `verificationsPerSecond` (with
/// a burst of as many) in two budgets: one for frames whose certificate is not known yet, one for
/// frames of known certificates and for revocations, so that a flood of made-up certificates
/// cannot crowd out the boxes already heard. Frames over a budget are shed (counted), never
/// believed: a real box repeats its frame every advertising round, so a shed frame is heard again.
public struct FrameVerifier: Sendable {
    public struct Settings: Sendable, Equatable {
        public var serviceUUID: UInt16 = AlertFrame.defaultServiceUUID
        /// A frame signed longer ago than this is refused (its signer re-signs more often).
        public var maximumAgeSeconds: UInt64 = 3_600
        /// How far ahead of the receiver's time a signing time may be (clocks differ).
        public var maximumAheadSeconds: UInt64 = 300
        /// The longest alert lifetime accepted (as in version 1).
        public var maximumLifetimeSeconds: UInt64 = 86_400
        public var verificationsPerSecond: UInt64 = 200
        public init() {}
    }

    /// What one heard frame came to.
    public enum Outcome: Sendable, Equatable {
        case accepted(SignedAlertFrame)
        /// A public warning frame (type 13), every check passed.
        case warning(PublicWarningFrame)
        /// A new revocation, verified: the caller keeps it durably and relays it.
        case revocation(Revocation)
        /// A revocation already known.
        case knownRevocation
        case refused(SignedFrameError)
        /// Over the verification budget: not checked, not believed.
        case shed
    }

    public let network: NetworkPublicKey
    public var settings: Settings
    public private(set) var revokedKeys: Set<BoxPublicKey> = []
    /// Certificates checked under the network key, with the library's key for their box.
    private var verifiedCertificates: [[UInt8]: Curve25519.Signing.PublicKey] = [:]
    private var verifiedFrames: Set<[UInt8]> = []
    /// Checks left for frames whose certificate is not known yet.
    private var unknownTokens: UInt64
    /// Checks left for frames of known certificates, and for revocations.
    private var knownTokens: UInt64
    private var lastRefillMicroseconds: UInt64?
    static let cacheLimit = 4_096
    /// Revocations kept; more than a network has boxes means a flood of the network's own key.
    public static let revocationLimit = 65_536

    public init(network: NetworkPublicKey, settings: Settings = Settings(), revocations: [Revocation] = []) {
        self.network = network
        self.settings = settings
        unknownTokens = settings.verificationsPerSecond
        knownTokens = settings.verificationsPerSecond
        for r in revocations where (try? r.verify(network: network)) != nil { revokedKeys.insert(r.boxKey) }
    }

    /// Checks one frame (the service data's bytes) heard at `wall` (µs) and `monotonic` (µs, for
    /// the budget). The box's time is `clock`'s reading; a frame accepted whose signer vouched for
    /// its clock is offered to `clock` (see `VouchedClock`), only once every check has passed.
    public mutating func check(_ bytes: [UInt8], clock: inout VouchedClock, wallMicroseconds wall: UInt64,
                               monotonicMicroseconds monotonic: UInt64) -> Outcome {
        refill(monotonic)
        do throws(SignedFrameError) {
            if let (revocation, _) = try RevocationFrame.parse(bytes) {
                if revokedKeys.contains(revocation.boxKey) { return .knownRevocation }
                guard spend(known: true) else { return .shed }
                try revocation.verify(network: network)
                return accept(revocation) ? .revocation(revocation) : .knownRevocation
            }
            if let warning = try PublicWarningFrame.parse(bytes) {
                // Only the signing box speaks of its own site, and only it (warnings are not
                // relayed from box to box yet: a count other than 0 is not a sender's).
                guard warning.claimedSigner == warning.signer else {
                    throw SignedFrameError.signerIsNotOrigin(signer: warning.signer, origin: warning.claimedSigner)
                }
                guard warning.hops == 0 else { throw SignedFrameError.fieldOutOfRange("hops") }
                // A warning frame lives half an hour from its signing, whatever the clocks say.
                guard warning.expirySeconds > warning.signedAtSeconds,
                      warning.expirySeconds - warning.signedAtSeconds <= PublicWarningFrame.lifetimeSeconds else {
                    throw SignedFrameError.tooFarInFuture
                }
                let signed = Signed(certificate: warning.certificate, expirySeconds: warning.expirySeconds, signedAtSeconds: warning.signedAtSeconds,
                                    signerClockVouched: warning.signerClockVouched,
                                    maximumLifetimeSeconds: UInt64(PublicWarningFrame.lifetimeSeconds),
                                    message: PublicWarningFrame.signedMessage(bytes.dropLast(SignedAlertFrame.signatureLength), uuid: settings.serviceUUID),
                                    signature: warning.signature)
                guard try verify(signed, clock: &clock, wall: wall, monotonic: monotonic) else { return .shed }
                return .warning(warning)
            }
            let frame = try SignedAlertFrame.parse(bytes)
            if frame.type.signerMustBeOrigin, frame.signer != frame.origin {
                throw SignedFrameError.signerIsNotOrigin(signer: frame.signer, origin: frame.origin)
            }
            let signed = Signed(certificate: frame.certificate, expirySeconds: frame.expirySeconds, signedAtSeconds: frame.signedAtSeconds,
                                signerClockVouched: frame.signerClockVouched, maximumLifetimeSeconds: settings.maximumLifetimeSeconds,
                                message: SignedAlertFrame.signedMessage(bytes.dropLast(SignedAlertFrame.signatureLength), uuid: settings.serviceUUID),
                                signature: frame.signature)
            guard try verify(signed, clock: &clock, wall: wall, monotonic: monotonic) else { return .shed }
            return .accepted(frame)
        } catch {
            return .refused(error)
        }
    }

    /// What every signed frame shares, for the checks below.
    struct Signed {
        var certificate: BoxCertificate
        var expirySeconds: UInt32
        var signedAtSeconds: UInt32
        var signerClockVouched: Bool
        /// The longest a frame of its kind may live (the lifetime rule).
        var maximumLifetimeSeconds: UInt64
        /// What the signature covers (the bytes before it, hops zeroed, behind the context).
        var message: [UInt8]
        var signature: [UInt8]
    }

    /// Revocation, freshness, the certificate, the signature and the certificate's period, in
    /// that order (docs/signed-frames.md "Receiving"); false when over a budget (shed). Offers a
    /// vouched signing time to `clock` once every check has passed.
    private mutating func verify(_ frame: Signed, clock: inout VouchedClock, wall: UInt64, monotonic: UInt64) throws(SignedFrameError) -> Bool {
        guard !revokedKeys.contains(frame.certificate.boxKey) else { throw SignedFrameError.revoked(node: frame.certificate.node) }
        let reading = clock.now(wallMicroseconds: wall, monotonicMicroseconds: monotonic)
        // A receiver that knows its time refuses a replay before paying for a signature check.
        try freshness(frame, reading: reading)
        // The same bytes heard again (hops aside) cost a hash: the digest covers the signature too.
        var hash = SHA256()
        hash.update(data: frame.message)
        hash.update(data: frame.signature)
        let digest = Array(hash.finalize())
        if !verifiedFrames.contains(digest) {
            let key: Curve25519.Signing.PublicKey
            if let known = verifiedCertificates[frame.certificate.bytes] {
                guard spend(known: true) else { return false }
                key = known
            } else {
                guard spend(known: false) else { return false }
                try frame.certificate.verify(network: network)
                key = try frame.certificate.boxKey.signingKey()
                if verifiedCertificates.count >= Self.cacheLimit { verifiedCertificates.removeAll(keepingCapacity: true) }
                verifiedCertificates[frame.certificate.bytes] = key
            }
            guard key.isValidSignature(frame.signature, for: frame.message) else { throw SignedFrameError.badSignature }
            if verifiedFrames.count >= Self.cacheLimit { verifiedFrames.removeAll(keepingCapacity: true) }
            verifiedFrames.insert(digest)
        }
        let signedAt = UInt64(frame.signedAtSeconds)
        // The certificate at the receiver's time and when the frame was signed.
        guard frame.certificate.isValid(atSeconds: reading.microseconds / 1_000_000),
              !frame.signerClockVouched || frame.certificate.isValid(atSeconds: signedAt) else {
            throw SignedFrameError.certificateNotValid(node: frame.certificate.node)
        }
        if frame.signerClockVouched {
            clock.heardVouchedFrame(signer: frame.certificate.node, signedAtMicroseconds: signedAt * 1_000_000,
                                    wallMicroseconds: wall, monotonicMicroseconds: monotonic)
        }
        return true
    }

    /// The freshness rule (docs/signed-frames.md "Receiving"): the alert has not expired and does
    /// not live implausibly long. A frame whose signer vouched for its clock was signed within the
    /// maximum age; and, where the receiver's own time is vouched for (system or hub), not ahead of
    /// it by more than clocks differ. A receiver whose time is not vouched for (it may be hours
    /// behind) checks only the first. A frame from a signer that could not vouch for its clock is
    /// judged by its expiry only (an SOS from a box that lost its time must still be heard).
    func freshness(_ frame: Signed, reading: VouchedClock.Reading) throws(SignedFrameError) {
        let now = reading.microseconds / 1_000_000
        let expiry = UInt64(frame.expirySeconds)
        guard expiry > now else { throw .stale }
        // A receiver that cannot vouch for its time may be a day behind: twice the lifetime.
        let lifetime = frame.maximumLifetimeSeconds * (reading.vouched ? 1 : 2)
        guard expiry - now <= lifetime else { throw .tooFarInFuture }
        guard frame.signerClockVouched else { return }
        let signedAt = UInt64(frame.signedAtSeconds)
        guard signedAt + settings.maximumAgeSeconds >= now else { throw .tooOld }
        guard expiry > signedAt, expiry - signedAt <= frame.maximumLifetimeSeconds + settings.maximumAgeSeconds else { throw .tooFarInFuture }
        if reading.vouched {
            guard signedAt <= now + settings.maximumAheadSeconds else { throw .signedInTheFuture }
        }
    }

    /// Adds a revocation (from the hub's feed, a file, or the air) once its signature verified.
    /// Returns whether it was new.
    @discardableResult
    public mutating func add(_ revocation: Revocation) throws(SignedFrameError) -> Bool {
        try revocation.verify(network: network)
        return accept(revocation)
    }

    private mutating func accept(_ revocation: Revocation) -> Bool {
        guard revokedKeys.count < Self.revocationLimit else { return false }
        guard revokedKeys.insert(revocation.boxKey).inserted else { return false }
        // Frames already verified under the key must be checked again, and refused.
        verifiedFrames.removeAll()
        return true
    }

    private mutating func refill(_ monotonic: UInt64) {
        let burst = settings.verificationsPerSecond   // the settings may have lowered it
        unknownTokens = min(unknownTokens, burst)
        knownTokens = min(knownTokens, burst)
        guard let last = lastRefillMicroseconds, monotonic > last else {
            if lastRefillMicroseconds == nil { lastRefillMicroseconds = monotonic }
            return
        }
        let earned = (monotonic - last) * burst / 1_000_000
        guard earned > 0 else { return }
        unknownTokens = min(burst, unknownTokens + earned)
        knownTokens = min(burst, knownTokens + earned)
        lastRefillMicroseconds = monotonic
    }

    private mutating func spend(known: Bool) -> Bool {
        if known {
            guard knownTokens > 0 else { return false }
            knownTokens -= 1
        } else {
            guard unknownTokens > 0 else { return false }
            unknownTokens -= 1
        }
        return true
    }
}
