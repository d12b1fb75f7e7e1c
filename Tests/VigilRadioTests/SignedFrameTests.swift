import Foundation
import Testing
import VigilCore
import VigilEvents
@testable import VigilRadio
import VigilSystem

/// Signed frames (docs/signed-frames.md) against the vectors an independent implementation made
/// (scripts/signed-frame-vectors, Python cryptography), and the receiver's rules: who may sign
/// what, revocations, freshness with a wrong clock, and the verification budget under a flood.
@Suite struct SignedFrameTests {
    struct Vectors: Decodable {
        struct Certificate: Decodable { var node: UInt32; var box: String; var issued: UInt32; var expires: UInt32; var hex: String }
        struct Revocation: Decodable { var node: UInt32; var box: String; var at: UInt32; var hex: String; var frame_hex: String }
        struct Frame: Decodable { var name: String; var hex: String; var reason: String? }
        var seeds: [String: String]
        var network_public_key: String
        var certificates: [Certificate]
        var revocations: [Revocation]
        var frames: [Frame]
        var refused: [Frame]
        var warnings: [Warning]
        var time: UInt64
        struct Warning: Decodable { var name: String; var sender: String; var identifier: String; var level: UInt8; var name_on_air: UInt64; var headline: String; var hex: String }
    }

    static let vectors: Vectors? = {
        guard let url = Bundle.module.url(forResource: "signed-frames", withExtension: "json", subdirectory: "Vectors"),
              let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(Vectors.self, from: data)
    }()

    static func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex) ?? [] }

    func loaded() throws -> Vectors { try #require(Self.vectors, "Vectors/signed-frames.json is in the test bundle") }

    func networkKey(_ v: Vectors) throws -> NetworkSigningKey { try NetworkSigningKey(seed: Self.bytes(try #require(v.seeds["network"]))) }
    func boxKey(_ v: Vectors, _ name: String) throws -> BoxSigningKey { try BoxSigningKey(seed: Self.bytes(try #require(v.seeds[name]))) }

    /// A verifier at the vectors' time, its clock synchronised.
    func verifier(_ v: Vectors) throws -> (FrameVerifier, VouchedClock) {
        var clock = VouchedClock()
        clock.systemClock(synchronised: true)
        return (FrameVerifier(network: try NetworkPublicKey(rawRepresentation: Self.bytes(v.network_public_key))), clock)
    }

    // MARK: The independent vectors

    @Test func theBoxMakesTheSameCertificatesAndRevocationsFromTheSameSeeds() throws {
        let v = try loaded()
        let network = try networkKey(v)
        #expect(network.publicKey.rawRepresentation == Self.bytes(v.network_public_key))
        for c in v.certificates {
            let made = try network.certify(node: c.node, boxKey: try boxKey(v, c.box).publicKey, issued: c.issued, expires: c.expires)
            #expect(made.bytes == Self.bytes(c.hex))
            try BoxCertificate(bytes: Self.bytes(c.hex)).verify(network: network.publicKey)
        }
        for r in v.revocations {
            let made = try network.revoke(node: r.node, boxKey: try boxKey(v, r.box).publicKey, at: r.at)
            #expect(made.bytes == Self.bytes(r.hex))
            #expect(RevocationFrame.encode(made) == Self.bytes(r.frame_hex))
        }
    }

    /// Ed25519 is deterministic: the box signing the same fields with the same key makes the same
    /// bytes, so its frames verify in the independent implementation.
    @Test func theBoxSignsEachVectorFrameToTheSameBytes() throws {
        let v = try loaded()
        let keys = [0x0A0A_0A0A: try boxKey(v, "box-a"), 0x0B0B_0B0B: try boxKey(v, "box-b")]
        for f in v.frames {
            let data = Self.bytes(f.hex)
            let frame = try SignedAlertFrame.parse(data)
            let key = try #require(keys[Int(frame.signer)])
            let made = try SignedAlertFrame.sign(type: frame.type, severity: frame.severity, hops: frame.hops, origin: frame.origin,
                                                 counter: frame.counter, expirySeconds: frame.expirySeconds,
                                                 signedAtSeconds: frame.signedAtSeconds, clockVouched: frame.signerClockVouched,
                                                 location: frame.location, key: key, certificate: frame.certificate)
            #expect(made == data, "\(f.name)")
        }
    }

    @Test func everyVectorFrameIsAcceptedAndEveryRefusedOneRefusedForItsReason() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        let now = v.time * 1_000_000 + 60_000_000
        for f in v.frames {
            guard case .accepted(let frame) = verifier.check(Self.bytes(f.hex), clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 1) else {
                Issue.record("\(f.name) was not accepted")
                continue
            }
            #expect(frame.origin == (frame.type.signerMustBeOrigin ? frame.signer : 0x0A0A_0A0A))
        }
        for f in v.refused {
            let outcome = verifier.check(Self.bytes(f.hex), clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 1)
            guard case .refused(let error) = outcome else {
                Issue.record("\(f.name): \(outcome)")
                continue
            }
            #expect("\(error)".hasPrefix(f.reason ?? "?"), "\(f.name): \(error)")
        }
    }

    // MARK: Relays and tampering

    @Test func aRelayAddsAHopAndKeepsTheOriginsSignature() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        var data = Self.bytes(v.frames[0].hex)
        for hop in 1...7 {
            data = try SignedAlertFrame.relayed(data)
            guard case .accepted(let frame) = verifier.check(data, clock: &clock, wallMicroseconds: v.time * 1_000_000, monotonicMicroseconds: 1) else {
                Issue.record("hop \(hop) refused")
                return
            }
            #expect(frame.hops == UInt8(hop))
        }
        #expect(throws: SignedFrameError.hopLimitReached) { try SignedAlertFrame.relayed(data) }
    }

    @Test func flippingAnyBitOutsideTheHopsIsRefused() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        let data = Self.bytes(v.frames[3].hex)
        verifier.settings.verificationsPerSecond = 1_000_000   // every altered frame is checked, none shed
        for index in data.indices {
            for bit in 0..<8 where !(index == 1 && (3...5).contains(bit)) {
                var altered = data
                altered[index] ^= 1 << bit
                let outcome = verifier.check(altered, clock: &clock, wallMicroseconds: v.time * 1_000_000, monotonicMicroseconds: UInt64(index * 8 + bit) * 1_000_000)
                if case .accepted = outcome { Issue.record("byte \(index) bit \(bit) accepted") }
                if case .shed = outcome { Issue.record("byte \(index) bit \(bit) shed") }
            }
        }
    }

    @Test func aFrameWithItsSignatureStrippedOrCutIsRefusedAsMalformed() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        let data = Self.bytes(v.frames[0].hex)
        for cut in [data.count - 64, data.count - 1, 17, 1, 0] {
            let outcome = verifier.check(Array(data.prefix(cut)), clock: &clock, wallMicroseconds: v.time * 1_000_000, monotonicMicroseconds: 1)
            guard case .refused(.truncated) = outcome else {
                Issue.record("cut to \(cut): \(outcome)")
                continue
            }
        }
    }

    // MARK: Revocation

    @Test func aRevokedBoxIsNotBelievedAndTheRevocationTravelsOnTheAir() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        let now = v.time * 1_000_000
        let revocationFrame = Self.bytes(v.revocations[0].frame_hex)
        guard case .accepted = verifier.check(Self.bytes(v.frames[0].hex), clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 1) else {
            Issue.record("A's sos before the revocation")
            return
        }
        guard case .revocation(let r) = verifier.check(revocationFrame, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 2) else {
            Issue.record("the revocation frame")
            return
        }
        #expect(r.node == 0x0A0A_0A0A)
        let outcome1 = verifier.check(revocationFrame, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 3)
        #expect(outcome1 == .knownRevocation)
        let outcome2 = verifier.check(Self.bytes(v.frames[0].hex), clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 4)
        #expect(outcome2
                    == .refused(.revoked(node: 0x0A0A_0A0A)))
        // B's frames still stand, relayed ones too.
        let outcome3 = verifier.check(try RevocationFrame.relayed(revocationFrame), clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 5)
        #expect(outcome3
                    == .knownRevocation)
        guard case .accepted = verifier.check(Self.bytes(v.frames[5].hex), clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 6) else {
            Issue.record("B's evacuate after A's revocation")
            return
        }
    }

    @Test func aRevocationTheNetworkDidNotSignIsRefused() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        let stranger = try NetworkSigningKey(seed: Self.bytes(try #require(v.seeds["stranger"])))
        let fake = try stranger.revoke(node: 0x0B0B_0B0B, boxKey: try boxKey(v, "box-b").publicKey, at: UInt32(v.time))
        let outcome4 = verifier.check(RevocationFrame.encode(fake), clock: &clock, wallMicroseconds: v.time * 1_000_000, monotonicMicroseconds: 1)
        #expect(outcome4
                    == .refused(.forgedRevocation))
        #expect(throws: SignedFrameError.forgedRevocation) { try verifier.add(fake) }
        #expect(verifier.revokedKeys.isEmpty)
    }

    // MARK: Freshness and the clock

    func sos(_ v: Vectors, signedAt: UInt64, vouched: Bool = true, lifetime: UInt32 = 3_600) throws -> [UInt8] {
        let key = try boxKey(v, "box-a")
        let certificate = try BoxCertificate(bytes: Self.bytes(v.certificates[0].hex))
        return try SignedAlertFrame.sign(type: .sos, severity: 3, origin: 0x0A0A_0A0A, counter: UInt32(signedAt % 1_000),
                                         expirySeconds: UInt32(signedAt) + lifetime, signedAtSeconds: UInt32(signedAt),
                                         clockVouched: vouched, key: key, certificate: certificate)
    }

    @Test func aSynchronisedBoxRefusesADayOldFrameStillWithinItsExpiry() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        let now = v.time + 86_400
        let dayOld = try sos(v, signedAt: v.time, lifetime: 86_400 + 3_600)
        let outcome5 = verifier.check(dayOld, clock: &clock, wallMicroseconds: now * 1_000_000, monotonicMicroseconds: 1)
        #expect(outcome5 == .refused(.tooOld))
        let fresh = try sos(v, signedAt: now - 5)
        guard case .accepted = verifier.check(fresh, clock: &clock, wallMicroseconds: now * 1_000_000, monotonicMicroseconds: 2) else {
            Issue.record("a fresh frame")
            return
        }
        let outcome6 = verifier.check(try sos(v, signedAt: now + 3_600), clock: &clock, wallMicroseconds: now * 1_000_000, monotonicMicroseconds: 3)
        #expect(outcome6
                    == .refused(.signedInTheFuture))
    }

    func evacuate(_ v: Vectors, signedAt: UInt64) throws -> [UInt8] {
        let key = try boxKey(v, "box-b")
        let certificate = try BoxCertificate(bytes: Self.bytes(v.certificates[1].hex))
        return try SignedAlertFrame.sign(type: .evacuate, severity: 2, origin: 0x0B0B_0B0B, counter: UInt32(signedAt % 1_000),
                                         expirySeconds: UInt32(signedAt) + 3_600, signedAtSeconds: UInt32(signedAt),
                                         clockVouched: true, key: key, certificate: certificate)
    }

    /// The Raspberry Pi case: no RTC, no network, booted at a time six hours old.
    @Test func aBoxSixHoursBehindAcceptsAFreshFrameAndStillRefusesADayOldOne() throws {
        let v = try loaded()
        var verifier = FrameVerifier(network: try NetworkPublicKey(rawRepresentation: Self.bytes(v.network_public_key)))
        var clock = VouchedClock()
        let real = v.time + 86_400
        let wall = (real - 6 * 3_600) * 1_000_000
        let dayOld = try sos(v, signedAt: v.time, lifetime: 86_400 + 3_600)
        // Heard first, before any fresh frame: 18 hours older than even this box's clock.
        let before = verifier.check(dayOld, clock: &clock, wallMicroseconds: wall, monotonicMicroseconds: 1_000_000)
        #expect(before == .refused(.tooOld))
        // A fresh frame is six hours "ahead" of this box: accepted (a box that cannot vouch for its
        // time checks only how old a frame is, never how far ahead).
        guard case .accepted = verifier.check(try sos(v, signedAt: real), clock: &clock, wallMicroseconds: wall, monotonicMicroseconds: 2_000_000) else {
            Issue.record("a fresh frame refused by a box six hours behind")
            return
        }
        #expect(clock.now(wallMicroseconds: wall, monotonicMicroseconds: 2_000_000).source == .none, "one signer does not set the time")
        // A second box agrees: the box takes the time from the two.
        guard case .accepted = verifier.check(try evacuate(v, signedAt: real), clock: &clock, wallMicroseconds: wall, monotonicMicroseconds: 2_000_000) else {
            Issue.record("a second fresh frame refused")
            return
        }
        let reading = clock.now(wallMicroseconds: wall + 60_000_000, monotonicMicroseconds: 62_000_000)
        #expect(reading.source == .frame)
        #expect(reading.microseconds == (real + 60) * 1_000_000)
        // The day-old frame again, and an older replay: refused, the clock unmoved.
        let again = verifier.check(dayOld, clock: &clock, wallMicroseconds: wall, monotonicMicroseconds: 3_000_000)
        #expect(again == .refused(.tooOld))
        let older = verifier.check(try sos(v, signedAt: real - 7_200, lifetime: 86_400), clock: &clock, wallMicroseconds: wall,
                                   monotonicMicroseconds: 4_000_000)
        #expect(older == .refused(.tooOld))
        #expect(clock.now(wallMicroseconds: wall, monotonicMicroseconds: 5_000_000).microseconds == real * 1_000_000 + 3_000_000)
    }

    /// A stolen box signs a frame dated far ahead: accepted as its own alert (until it is revoked)
    /// but it moves no box's time, so real frames are still accepted afterwards.
    @Test func aFrameDatedFarAheadByOneBoxDoesNotMoveTheClock() throws {
        let v = try loaded()
        var verifier = FrameVerifier(network: try NetworkPublicKey(rawRepresentation: Self.bytes(v.network_public_key)))
        var clock = VouchedClock()
        let wall = v.time * 1_000_000
        // 40 hours ahead, an hour's lifetime: within what a receiver that cannot vouch for its
        // time accepts, so these frames are believed, and still move no clock.
        for (i, ahead) in [40 * 3_600, 40 * 3_600 + 60].enumerated() {
            guard case .accepted = verifier.check(try sos(v, signedAt: v.time + UInt64(ahead)), clock: &clock, wallMicroseconds: wall,
                                                  monotonicMicroseconds: UInt64(i + 1)) else {
                Issue.record("the far-ahead frame \(i) was refused: the test would prove nothing")
                return
            }
        }
        #expect(clock.now(wallMicroseconds: wall, monotonicMicroseconds: 3).source == .none)
        guard case .accepted = verifier.check(try evacuate(v, signedAt: v.time), clock: &clock, wallMicroseconds: wall, monotonicMicroseconds: 4) else {
            Issue.record("a real frame refused after one box's far-future frames")
            return
        }
    }

    @Test func aFrameFromABoxThatLostItsTimeIsJudgedByItsExpiryAndMovesNoClock() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        let now = v.time + 100_000
        // Signed with a clock far behind, not vouched: still heard while its alert lives.
        let lost = try sos(v, signedAt: v.time, vouched: false, lifetime: 100_000 + 3_600)
        guard case .accepted = verifier.check(lost, clock: &clock, wallMicroseconds: now * 1_000_000, monotonicMicroseconds: 1) else {
            Issue.record("an SOS from a box without a vouched clock")
            return
        }
        var unsynchronised = VouchedClock()
        _ = verifier.check(lost, clock: &unsynchronised, wallMicroseconds: now * 1_000_000, monotonicMicroseconds: 2)
        #expect(unsynchronised.now(wallMicroseconds: 5, monotonicMicroseconds: 3).source == .none)
        let outcome10 = verifier.check(try sos(v, signedAt: v.time, vouched: false, lifetime: 3_600), clock: &clock,
                               wallMicroseconds: now * 1_000_000, monotonicMicroseconds: 4)
        #expect(outcome10 == .refused(.stale))
    }

    // MARK: The budget

    @Test func aFloodOfForgedFramesIsShedAtTheBudgetAndAKnownFrameStillPasses() throws {
        let v = try loaded()
        var (verifier, clock) = try verifier(v)
        verifier.settings.verificationsPerSecond = 50
        let now = v.time * 1_000_000
        let real = Self.bytes(v.frames[5].hex)
        guard case .accepted = verifier.check(real, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 0) else {
            Issue.record("the real frame")
            return
        }
        var forged = Self.bytes(v.refused[0].hex)
        var refused = 0, shed = 0
        for i in 0..<1_000 {
            forged[40] = UInt8(truncatingIfNeeded: i)   // a different certificate each time (its key's bytes)
            switch verifier.check(forged, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: UInt64(i) * 1_000) {
            case .refused: refused += 1
            case .shed: shed += 1
            case .accepted, .warning, .revocation, .knownRevocation: Issue.record("forged frame \(i) accepted")
            }
            if i == 500 {
                let outcome = verifier.check(real, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: UInt64(i) * 1_000)
                if case .accepted = outcome {} else { Issue.record("the known frame during the flood: \(outcome)") }
            }
        }
        // One second of flood: the burst and one second's worth, no more.
        #expect(refused <= 100 && refused >= 50, "\(refused) checked")
        #expect(shed == 1_000 - refused)
    }
}
