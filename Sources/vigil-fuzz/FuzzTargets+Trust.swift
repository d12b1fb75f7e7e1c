import VigilCore
import VigilRadio

// Signed frames, certificates and revocations: what the air and the hub's feed bring.
extension FuzzTargets {
    // Signed frames (docs/signed-frames.md): a fixed network and box, so that a fuzzed frame can
    // reach every check, and frames the fuzzer builds from its input are signed for real.
    static let fuzzNetwork: NetworkSigningKey? = try? NetworkSigningKey(seed: [UInt8](repeating: 0x11, count: 32))
    static let fuzzBox: BoxSigningKey? = try? BoxSigningKey(seed: [UInt8](repeating: 0x22, count: 32))

    /// A signed frame heard on the air: parsed and checked (never a trap, never accepted unless
    /// it verifies); and the same fields signed by the fuzz box parse back to what was signed and
    /// are accepted, one more hop included.
    static func signedFrame(_ bytes: [UInt8]) {
        guard let network = fuzzNetwork, let box = fuzzBox,
              let certificate = try? network.certify(node: 0x0F0F_0F0F, boxKey: box.publicKey, issued: 1_700_000_000, expires: 2_000_000_000) else { return }
        var verifier = FrameVerifier(network: network.publicKey)
        var clock = VouchedClock()
        let now: UInt64 = 1_800_000_000 * 1_000_000
        switch verifier.check(bytes, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 0) {
        case .accepted(let frame): check(frame.certificate.boxKey == box.publicKey, "only a frame signed with the certified key is accepted")
        case .warning(let frame): check(frame.certificate.boxKey == box.publicKey, "only a warning signed with the certified key is believed")
        default: break
        }
        publicWarning(bytes, network: network, box: box, certificate: certificate, now: now)
        guard bytes.count >= 12, let type = SignedAlertFrame.FrameType(rawValue: bytes[0] % 11 + 1) else { return }
        func be(_ range: Range<Int>) -> UInt32 { bytes[range].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let location = bytes.count >= 20 && !type.refersToAnotherAlert
            ? AlertFrame.Coordinates(latitudeE7: Int32(bitPattern: be(12..<16)) % 900_000_000, longitudeE7: Int32(bitPattern: be(16..<20)) % 1_800_000_000) : nil
        let origin: UInt32 = type.signerMustBeOrigin ? 0x0F0F_0F0F : be(4..<8)
        guard let signed = try? SignedAlertFrame.sign(type: type, severity: bytes[1] & 3, hops: bytes[1] >> 2 & 7, origin: origin,
                                                      counter: be(8..<12) & 0xFF_FFFF, expirySeconds: 1_800_000_000 + UInt32(bytes[2]) * 60 + 60,
                                                      signedAtSeconds: 1_800_000_000 - UInt32(bytes[3]), clockVouched: bytes[1] & 0x80 != 0,
                                                      location: location, key: box, certificate: certificate) else { return }
        guard let parsed = try? SignedAlertFrame.parse(signed) else { fail("a frame the box signed does not parse") }
        check(parsed.origin == origin && parsed.type == type && parsed.signer == 0x0F0F_0F0F, "a frame parses to what was signed")
        var fresh = FrameVerifier(network: network.publicKey)
        guard case .accepted = fresh.check(signed, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 0) else { fail("a frame the box signed is refused") }
        if let relayed = try? SignedAlertFrame.relayed(signed) {
            guard case .accepted = fresh.check(relayed, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 0) else { fail("a relayed frame is refused") }
        }
    }

    /// The same bytes as the fields of a public warning frame (type 13) the fuzz box signs: it
    /// parses back to what was signed, its headline as the air carries it, and is believed.
    static func publicWarning(_ bytes: [UInt8], network: NetworkSigningKey, box: BoxSigningKey, certificate: BoxCertificate, now: UInt64) {
        guard bytes.count >= 8 else { return }
        let digest = bytes[0..<5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let signedAt = UInt32(now / 1_000_000) - UInt32(bytes[5])
        let headline = String(decoding: bytes.dropFirst(8), as: UTF8.self)
        guard let signed = try? PublicWarningFrame.sign(level: bytes[6] & 1 == 0 ? .shown : .sounds, digest: digest,
                                                        expirySeconds: UInt32(now / 1_000_000) + 1 + UInt32(bytes[7]) * 6, signedAtSeconds: signedAt,
                                                        clockVouched: bytes[6] & 2 != 0, headline: headline, key: box, certificate: certificate)
        else { fail("the box could not sign a public warning") }
        guard let parsed = try? PublicWarningFrame.parse(signed) else { fail("a warning the box signed does not parse") }
        check(parsed.digest == digest && parsed.headline == PublicWarningFrame.airHeadline(headline) && parsed.headline.utf8.count <= 48,
              "a warning parses to what was signed")
        var fresh = FrameVerifier(network: network.publicKey)
        var clock = VouchedClock()
        guard case .warning = fresh.check(signed, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 0) else {
            fail("a warning the box signed is refused")
        }
    }

    /// A certificate from the hub's feed, a file or a frame: parsed and verified; only the
    /// network's own pass, and what parses encodes back to the same bytes.
    static func boxCertificate(_ bytes: [UInt8]) {
        guard let network = fuzzNetwork, let certificate = try? BoxCertificate(bytes: bytes) else { return }
        check(certificate.bytes == bytes, "a certificate keeps its bytes")
        if (try? certificate.verify(network: network.publicKey)) != nil {
            check(bytes.count == BoxCertificate.length, "a verified certificate is whole")
        }
    }

    /// A revocation from the feed, a file or the air (its frame): parsed and verified, never a trap.
    static func revocation(_ bytes: [UInt8]) {
        guard let network = fuzzNetwork else { return }
        if let r = try? Revocation(bytes: bytes) {
            var verifier = FrameVerifier(network: network.publicKey)
            let added = (try? verifier.add(r)) == true
            check(added == ((try? r.verify(network: network.publicKey)) != nil), "a revocation is kept exactly when the network signed it")
        }
        if let parsed = try? RevocationFrame.parse(bytes) {
            check(parsed.revocation.bytes == Array(bytes.dropFirst(2)), "a revocation frame holds the revocation")
        }
    }
}
