import VigilCore
import VigilRadio

/// The box's credentials for signed frames (docs/signed-frames.md): its own key and the network's
/// certificate for it (to sign), the network's public key and the revocations it knows (to check).
package struct BoxCredentials: Sendable {
    package var key: BoxSigningKey
    /// Nil until the box is certified (`vigil keys certify`, or the hub at `vigil hub join`).
    package var certificate: BoxCertificate?
    package var network: NetworkPublicKey?
    package var revocations: [Revocation] = []

    package init(key: BoxSigningKey, certificate: BoxCertificate? = nil, network: NetworkPublicKey? = nil, revocations: [Revocation] = []) {
        self.key = key
        self.certificate = certificate
        self.network = network
        self.revocations = revocations
    }

    /// Why this box does not sign its frames, or nil when it does.
    package func whyNotSigning(nodeID: UInt64) -> String? {
        guard let network else { return "no network key (radio.network_key, or join a hub)" }
        guard let certificate else { return "not certified (vigil keys certify, or join a hub)" }
        guard certificate.boxKey == key.publicKey else { return "the certificate is for another key (certify this box again)" }
        guard certificate.node == UInt32(truncatingIfNeeded: nodeID) else {
            return "the certificate is for node \(String(certificate.node, radix: 16)), not this box"
        }
        guard (try? certificate.verify(network: network)) != nil else { return "the certificate is not the network's (another network, or forged)" }
        guard !revocations.contains(where: { $0.boxKey == key.publicKey }) else { return "this box's key has been revoked" }
        return nil
    }
}

/// Signed frames on the node's side: signing this box's frames, checking heard ones, keeping the
/// origin's bytes of frames this box relays, and revocations heard on the air. Owned by `AirLink`.
package struct SignedAir: Sendable {
    /// Signs this box's frames; nil when the box cannot (no certificate, no network key).
    let signer: (key: BoxSigningKey, certificate: BoxCertificate)?
    /// Checks heard frames; nil without a network key.
    package private(set) var verifier: FrameVerifier?
    package private(set) var clock: VouchedClock
    /// The latest verified bytes of each alert, cancel and acknowledgement heard signed (by
    /// `AlertAirtime.heardKey`), so relays keep the origin's signature. Bounded.
    private var originals: [String: [UInt8]] = [:]
    static let originalsLimit = 1_024
    /// Every revocation this box knows (its file, the hub, the air): each box advertises them in
    /// turn, one per ten-minute slot, so that a box that was off, or out of range, learns them.
    private(set) var knownRevocations: [Revocation] = []
    /// Revocations verified since the node last took them (to keep durably and log).
    package private(set) var newRevocations: [Revocation] = []
    /// Frames re-signed this often (the signing time is rounded down to it), so that adverts stay
    /// the same between and receivers' maximum age is never reached by a box that is on.
    static let resignMicroseconds: UInt64 = 600_000_000
    let whyNotSigning: String?
    /// The service UUID the box's adverts go under, which every signature covers.
    let serviceUUID: UInt16

    package init(credentials: BoxCredentials?, nodeID: UInt64, settings: FrameVerifier.Settings) {
        clock = VouchedClock(maximumFrameAgeMicroseconds: settings.maximumAgeSeconds * 1_000_000)
        serviceUUID = settings.serviceUUID
        guard let credentials else {
            signer = nil
            verifier = nil
            whyNotSigning = "no box key"
            return
        }
        whyNotSigning = credentials.whyNotSigning(nodeID: nodeID)
        signer = whyNotSigning == nil ? credentials.certificate.map { (credentials.key, $0) } : nil
        verifier = credentials.network.map { FrameVerifier(network: $0, settings: settings, revocations: credentials.revocations) }
        if let network = credentials.network {
            knownRevocations = Array(Set(credentials.revocations.filter { (try? $0.verify(network: network)) != nil }))
                .sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        }
    }

    /// Why the box does not sign now: the reasons at start, or its certificate's period, or a
    /// revocation of its own key learned since.
    func whyNotSigningNow(wall: UInt64, monotonic: UInt64) -> String? {
        if let whyNotSigning { return whyNotSigning }
        guard let signer else { return "no certificate" }
        if verifier?.revokedKeys.contains(signer.key.publicKey) == true { return "this box's key has been revoked" }
        let now = clock.now(wallMicroseconds: wall, monotonicMicroseconds: monotonic).microseconds / 1_000_000
        guard signer.certificate.isValid(atSeconds: now) else { return "the certificate is not valid now (it expired, or the clock is wrong)" }
        return nil
    }

    /// The signed frame for a broadcast of this box (hops 0: an alert or cancel raised here, an
    /// acknowledgement made here), or the origin's bytes one hop further for a relay.
    func frame(for frame: AlertFrame, isRelay: Bool, heardKey: String, wall: UInt64, monotonic: UInt64) -> [UInt8]? {
        if isRelay {
            // The origin's freshest bytes, with the hop count this box relays at.
            guard let original = originals[heardKey] else { return nil }
            return try? SignedAlertFrame.withHops(original, frame.hops)
        }
        guard let signer, whyNotSigningNow(wall: wall, monotonic: monotonic) == nil else { return nil }
        let reading = clock.now(wallMicroseconds: wall, monotonicMicroseconds: monotonic)
        let signedAt = UInt32(clamping: (reading.microseconds / Self.resignMicroseconds * Self.resignMicroseconds) / 1_000_000)
        let type: SignedAlertFrame.FrameType = SignedAlertFrame.FrameType(frame.type)
        return try? SignedAlertFrame.sign(type: type, severity: UInt8(clamping: frame.severity.rawValue), hops: 0, origin: frame.origin,
                                          counter: frame.counter, expirySeconds: frame.expirySeconds, signedAtSeconds: signedAt,
                                          clockVouched: reading.vouched, location: frame.location, key: signer.key,
                                          certificate: signer.certificate, uuid: serviceUUID)
    }

    /// The public warning frame this box advertises for a warning in force at its site (docs/signed-
    /// frames.md "Public warning frame"): signed at the current ten-minute slot, expiring half an
    /// hour later or with the warning; nil when the box does not sign or the warning has ended.
    func warningFrame(level: PublicWarningFrame.Level, digest: UInt64, headline: String, warningEndMicroseconds: UInt64,
                      wall: UInt64, monotonic: UInt64) -> [UInt8]? {
        guard let signer, whyNotSigningNow(wall: wall, monotonic: monotonic) == nil else { return nil }
        let reading = clock.now(wallMicroseconds: wall, monotonicMicroseconds: monotonic)
        let signedAt = UInt32(clamping: (reading.microseconds / Self.resignMicroseconds * Self.resignMicroseconds) / 1_000_000)
        // The warning's end by this box's vouched time: the wall clock's remaining time to it.
        let remaining = warningEndMicroseconds > wall ? (warningEndMicroseconds - wall) / 1_000_000 : 0
        let end = UInt64(reading.microseconds / 1_000_000) &+ remaining
        let expiry = UInt32(clamping: min(UInt64(signedAt) + UInt64(PublicWarningFrame.lifetimeSeconds), end))
        guard expiry > signedAt else { return nil }
        return try? PublicWarningFrame.sign(level: level, digest: digest, expirySeconds: expiry, signedAtSeconds: signedAt,
                                            clockVouched: reading.vouched, headline: headline, key: signer.key, certificate: signer.certificate,
                                            uuid: serviceUUID)
    }

    /// Keeps an accepted frame's signed bytes for relaying, once the node has taken the frame (a
    /// new alert within its sender's allowance, or one it knows): frames over the allowance are
    /// never kept, so a flood of them cannot crowd out the alerts this box relays.
    mutating func keepOriginal(_ bytes: [UInt8], of frame: SignedAlertFrame) {
        guard let v1 = frame.asVersion1 else { return }
        let key = AlertAirtime.heardKey(v1.id.text, cancel: v1.type == .cancel, acknowledgement: v1.type == .acknowledge)
        // The freshest signature is kept (the origin re-signs every ten minutes); an older one,
        // however few its hops, never replaces it.
        if let kept = originals[key], let old = try? SignedAlertFrame.parse(kept),
           old.signedAtSeconds > frame.signedAtSeconds || (old.signedAtSeconds == frame.signedAtSeconds && old.hops <= frame.hops) { return }
        if originals[key] == nil, originals.count >= Self.originalsLimit { originals.removeAll() }
        originals[key] = bytes
    }

    /// Checks a version-2 frame heard on the air.
    mutating func check(_ bytes: [UInt8], wall: UInt64, monotonic: UInt64) -> FrameVerifier.Outcome {
        guard var verifier else { return .refused(.badKey) }
        let outcome = verifier.check(bytes, clock: &clock, wallMicroseconds: wall, monotonicMicroseconds: monotonic)
        self.verifier = verifier
        switch outcome {
        case .revocation(let revocation):
            newRevocations.append(revocation)
            knownRevocations.append(revocation)
            originals = originals.filter { (try? SignedAlertFrame.parse($0.value).certificate.boxKey) != revocation.boxKey }
        default:
            break
        }
        return outcome
    }

    /// Revocations from the hub's feed or a file, checked under the network key.
    mutating func add(_ revocation: Revocation) -> Bool {
        guard var verifier, (try? verifier.add(revocation)) == true else { return false }
        self.verifier = verifier
        knownRevocations.append(revocation)
        originals = originals.filter { (try? SignedAlertFrame.parse($0.value).certificate.boxKey) != revocation.boxKey }
        return true
    }

    mutating func takeNewRevocations() -> [Revocation] {
        defer { newRevocations = [] }
        return newRevocations
    }

    mutating func prune(wall: UInt64, keep: (String) -> Bool) {
        originals = originals.filter { keep($0.key) }
    }

    /// The revocation this box advertises in the current ten-minute slot, if it knows any.
    func revocationOnAir(wall: UInt64) -> [UInt8]? {
        guard !knownRevocations.isEmpty else { return nil }
        let slot = Int((wall / Self.resignMicroseconds) % UInt64(knownRevocations.count))
        return RevocationFrame.encode(knownRevocations[slot])
    }

    package mutating func systemClock(synchronised: Bool) { clock.systemClock(synchronised: synchronised) }
    mutating func hubTime(_ microseconds: UInt64, monotonic: UInt64) { clock.hubTime(microseconds, monotonicMicroseconds: monotonic) }

    /// The next time this box's own signed frames change (the next re-signing), or the revocation
    /// it advertises does.
    func nextResign(after wall: UInt64) -> UInt64? {
        signer == nil && knownRevocations.count < 2 ? nil : (wall / Self.resignMicroseconds + 1) * Self.resignMicroseconds
    }
}
