import Crypto
import VigilCore

/// Checks signed frames heard on the air (docs/signed-frames.md "Receiving"): the certificate
/// under the network key, revocations, the frame's signature, who may sign what, and freshness
/// against the time the box can vouch for. A value owned by one loop; no I/O, no clock.
///
/// CPU is bounded: Ed25519 checks are the one expensive step, so a certificate verified once and
/// a frame verified once (the same bytes heard again, as adverts are) cost a hash and a lookup,
/// and the checks a flood of new frames can demand are limited to `verificationsPerSecond` (with
/// a burst of as many). Frames over the budget are shed (counted), never believed: a real box
/// repeats its frame every advertising round, so a shed frame is heard again.
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
    private var verifiedCertificates: Set<[UInt8]> = []
    private var verifiedFrames: Set<[UInt8]> = []
    private var tokens: UInt64
    private var lastRefillMicroseconds: UInt64?
    static let cacheLimit = 4_096
    /// Revocations kept; more than a network has boxes means a flood of the network's own key.
    public static let revocationLimit = 65_536

    public init(network: NetworkPublicKey, settings: Settings = Settings(), revocations: [Revocation] = []) {
        self.network = network
        self.settings = settings
        tokens = settings.verificationsPerSecond
        for r in revocations where (try? r.verify(network: network)) != nil { revokedKeys.insert(r.boxKey) }
    }

    /// Checks one frame (the service data's bytes) heard at `now` (the vouched clock's reading),
    /// `monotonic` for the budget. A vouched signer's time moves `clock` (see `VouchedClock`).
    public mutating func check(_ bytes: [UInt8], clock: inout VouchedClock, wallMicroseconds wall: UInt64,
                               monotonicMicroseconds monotonic: UInt64) -> Outcome {
        refill(monotonic)
        do throws(SignedFrameError) {
            if let (revocation, _) = try RevocationFrame.parse(bytes) {
                if revokedKeys.contains(revocation.boxKey) { return .knownRevocation }
                guard spend() else { return .shed }
                try revocation.verify(network: network)
                return accept(revocation) ? .revocation(revocation) : .knownRevocation
            }
            let frame = try SignedAlertFrame.parse(bytes)
            if frame.type.signerMustBeOrigin, frame.signer != frame.origin {
                throw SignedFrameError.signerIsNotOrigin(signer: frame.signer, origin: frame.origin)
            }
            guard !revokedKeys.contains(frame.certificate.boxKey) else { throw SignedFrameError.revoked(node: frame.signer) }
            // A receiver that knows its time refuses a replay before paying for a signature check.
            let before = clock.now(wallMicroseconds: wall, monotonicMicroseconds: monotonic)
            if before.vouched { try freshness(frame, nowSeconds: before.microseconds / 1_000_000) }
            let digest = Array(SHA256.hash(data: SignedAlertFrame.signedMessage(bytes[...], uuid: settings.serviceUUID)))
            if !verifiedFrames.contains(digest) {
                if !verifiedCertificates.contains(frame.certificate.bytes) {
                    guard spend() else { return .shed }
                    try frame.certificate.verify(network: network)
                    remember(frame.certificate.bytes, in: &verifiedCertificates)
                }
                guard spend() else { return .shed }
                try frame.verifySignature(bytes, uuid: settings.serviceUUID)
                remember(digest, in: &verifiedFrames)
            }
            if frame.signerClockVouched {
                clock.heardVouchedFrame(signedAtMicroseconds: UInt64(frame.signedAtSeconds) * 1_000_000,
                                        wallMicroseconds: wall, monotonicMicroseconds: monotonic)
            }
            let nowSeconds = clock.now(wallMicroseconds: wall, monotonicMicroseconds: monotonic).microseconds / 1_000_000
            guard frame.certificate.isValid(atSeconds: nowSeconds) else { throw SignedFrameError.certificateNotValid(node: frame.signer) }
            try freshness(frame, nowSeconds: nowSeconds)
            return .accepted(frame)
        } catch {
            return .refused(error)
        }
    }

    /// The freshness rule: the alert has not expired and does not live implausibly long; a frame
    /// whose signer vouched for its clock was signed within the maximum age and not ahead of now
    /// by more than clocks differ. A frame from a signer that could not vouch for its clock is
    /// judged by its expiry only (an SOS from a box that lost its time must still be heard).
    func freshness(_ frame: SignedAlertFrame, nowSeconds now: UInt64) throws(SignedFrameError) {
        let expiry = UInt64(frame.expirySeconds)
        guard expiry > now else { throw .stale }
        guard expiry - now <= settings.maximumLifetimeSeconds else { throw .tooFarInFuture }
        guard frame.signerClockVouched else { return }
        let signedAt = UInt64(frame.signedAtSeconds)
        guard signedAt + settings.maximumAgeSeconds >= now else { throw .tooOld }
        guard signedAt <= now + settings.maximumAheadSeconds else { throw .signedInTheFuture }
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
        tokens = min(tokens, settings.verificationsPerSecond)   // the settings may have lowered the burst
        guard let last = lastRefillMicroseconds, monotonic > last else {
            if lastRefillMicroseconds == nil { lastRefillMicroseconds = monotonic }
            return
        }
        let earned = (monotonic - last) * settings.verificationsPerSecond / 1_000_000
        guard earned > 0 else { return }
        tokens = min(settings.verificationsPerSecond, tokens + earned)
        lastRefillMicroseconds = monotonic
    }

    private mutating func spend() -> Bool {
        guard tokens > 0 else { return false }
        tokens -= 1
        return true
    }

    private func remember(_ item: [UInt8], in set: inout Set<[UInt8]>) {
        if set.count >= Self.cacheLimit { set.removeAll(keepingCapacity: true) }
        set.insert(item)
    }
}
