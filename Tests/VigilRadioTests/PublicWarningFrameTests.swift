import Testing
import VigilCore
import VigilEvents
@testable import VigilRadio

/// The public warning frame (signed frames, type 13): what a box signs, what a receiver believes,
/// and what it refuses, with the keys and certificates of the signed-frame vectors.
@Suite struct PublicWarningFrameTests {
    let frames = SignedFrameTests()

    func boxA(_ v: SignedFrameTests.Vectors) throws -> (BoxSigningKey, BoxCertificate) {
        (try frames.boxKey(v, "box-a"), try BoxCertificate(bytes: SignedFrameTests.bytes(v.certificates[0].hex)))
    }

    func warning(_ v: SignedFrameTests.Vectors, headline: String = "Flash flood: move to higher ground now", level: PublicWarningFrame.Level = .sounds,
                 signedAt: UInt64? = nil, lifetime: UInt32 = 1_800) throws -> [UInt8] {
        let (key, certificate) = try boxA(v)
        let at = UInt32(signedAt ?? v.time)
        return try PublicWarningFrame.sign(level: level, digest: 0x12_3456_789A, expirySeconds: at + lifetime, signedAtSeconds: at,
                                           clockVouched: true, headline: headline, key: key, certificate: certificate)
    }

    @Test func aSignedWarningReadsBackAsSignedAndIsBelievedByABoxKnowingOnlyTheNetworkKey() throws {
        let v = try frames.loaded()
        let bytes = try warning(v)
        #expect(bytes.count == PublicWarningFrame.headerLength + 38 + BoxCertificate.length + SignedAlertFrame.signatureLength)
        #expect(try AdvertisingPayload.signedVigil(frame: try warning(v, headline: String(repeating: "é", count: 40)), uuid: AlertFrame.defaultServiceUUID).bytes.count <= 251)
        let frame = try #require(try PublicWarningFrame.parse(bytes))
        #expect(frame.level == .sounds && frame.digest == 0x12_3456_789A && frame.signer == 0x0A0A_0A0A && frame.hops == 0)
        #expect(frame.headline == "Flash flood: move to higher ground now" && frame.signedAtSeconds == UInt32(v.time))
        var (verifier, clock) = try frames.verifier(v)
        let outcome = verifier.check(bytes, clock: &clock, wallMicroseconds: v.time * 1_000_000 + 5_000_000, monotonicMicroseconds: 1)
        #expect(outcome == .warning(frame))
        // Not an alert frame: the alert parser does not take it for one.
        #expect(throws: SignedFrameError.unknownType(13)) { try SignedAlertFrame.parse(bytes) }
    }

    /// The independent implementation (scripts/signed-frame-vectors) made these from the same seeds:
    /// the box names each warning as it does, signs the same fields to the same bytes, and
    /// believes both.
    @Test func theBoxSignsTheIndependentVectorsToTheSameBytesAndBelievesThem() throws {
        let v = try frames.loaded()
        try #require(v.warnings.count == 2)
        var (verifier, clock) = try frames.verifier(v)
        for (index, w) in v.warnings.enumerated() {
            let key = try frames.boxKey(v, index == 0 ? "box-a" : "box-b")
            let certificate = try BoxCertificate(bytes: SignedFrameTests.bytes(v.certificates[index].hex))
            let name = WarningBook.airDigest(sender: w.sender, identifier: w.identifier)
            #expect(name == w.name_on_air, "\(w.name): the name on the air")
            let level = try #require(PublicWarningFrame.Level(rawValue: w.level))
            let mine = try PublicWarningFrame.sign(level: level, digest: name, expirySeconds: UInt32(v.time) + 1_800, signedAtSeconds: UInt32(v.time),
                                                   clockVouched: true, headline: w.headline, key: key, certificate: certificate)
            #expect(mine == SignedFrameTests.bytes(w.hex), "\(w.name): the same bytes")
            let outcome = verifier.check(SignedFrameTests.bytes(w.hex), clock: &clock, wallMicroseconds: v.time * 1_000_000, monotonicMicroseconds: UInt64(index))
            guard case .warning(let frame) = outcome else {
                Issue.record("\(w.name): \(outcome)")
                continue
            }
            #expect(frame.headline == w.headline && frame.signer == certificate.node)
        }
    }

    @Test func theHeadlineIsCutAtACharacterWithinFortyEightBytesAndLosesControlCharacters() throws {
        #expect(PublicWarningFrame.airHeadline("Evacuate\nnow\u{202E}!") == "Evacuate now!")
        #expect(PublicWarningFrame.airHeadline("  Flood\u{00A0} warning \u{200E} now\t ") == "Flood warning now")
        // One canonical form: what a sender makes reads back the same, so a receiver comparing
        // headlines sees news only when the words changed.
        for text in ["Flood  warning for the river flats and the old town centre", " \u{2067}x\u{2069} ", "\u{FEFF}Évacuez\r\nmaintenant"] {
            let once = PublicWarningFrame.airHeadline(text)
            #expect(PublicWarningFrame.airHeadline(once) == once && !once.hasSuffix(" ") && !once.hasPrefix(" "), "\(text)")
        }
        let long = PublicWarningFrame.airHeadline(String(repeating: "ü", count: 30))
        #expect(long.utf8.count == 48 && long == String(repeating: "ü", count: 24))
        let odd = PublicWarningFrame.airHeadline("a" + String(repeating: "ü", count: 30))
        #expect(odd.utf8.count == 47)
    }

    @Test func everyBitFlippedOutsideTheHopsIsRefusedAndNoneBelieved() throws {
        let v = try frames.loaded()
        let bytes = try warning(v)
        var (verifier, clock) = try frames.verifier(v)
        let now = v.time * 1_000_000
        for index in bytes.indices {
            for bit in 0..<8 where !(index == 1 && (3...5).contains(bit)) {
                var flipped = bytes
                flipped[index] ^= 1 << bit
                let outcome = verifier.check(flipped, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: UInt64(index * 8 + bit) * 10_000)
                if case .warning = outcome { Issue.record("byte \(index) bit \(bit) believed") }
                if case .accepted = outcome { Issue.record("byte \(index) bit \(bit) taken for an alert") }
            }
        }
    }

    @Test func aRelayedCountAnotherBoxsNameAnOverlongLifetimeOrAnExpiredFrameIsRefused() throws {
        let v = try frames.loaded()
        var (verifier, clock) = try frames.verifier(v)
        let now = v.time * 1_000_000
        var relayed = try warning(v)
        relayed[1] |= 1 << 3
        #expect(verifier.check(relayed, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 1) == .refused(.fieldOutOfRange("hops")))
        var renamed = try warning(v)
        renamed[5] ^= 0x01
        #expect(verifier.check(renamed, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 2)
                == .refused(.signerIsNotOrigin(signer: 0x0A0A_0A0A, origin: 0x0A0A_0A0B)))
        // The signer refuses to make a frame living longer than half an hour; one made by hand is
        // refused by the receiver.
        #expect(throws: SignedFrameError.fieldOutOfRange("expiry")) { try warning(v, lifetime: 7_200) }
        let (key, _) = try boxA(v)
        var long = try warning(v)
        long.replaceSubrange(11..<15, with: bigEndianBytes(UInt32(v.time) + 7_200))
        long.removeLast(SignedAlertFrame.signatureLength)
        long += try key.sign(PublicWarningFrame.signedMessage(long[...], uuid: AlertFrame.defaultServiceUUID))
        #expect(verifier.check(long, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 3) == .refused(.tooFarInFuture))
        let old = try warning(v, signedAt: v.time - 1_900)
        #expect(verifier.check(old, clock: &clock, wallMicroseconds: now, monotonicMicroseconds: 4) == .refused(.stale))
    }

    @Test func aHeadlineThatIsNotASendersTextIsMalformed() throws {
        let v = try frames.loaded()
        var bytes = try warning(v, headline: "Flood")
        bytes[PublicWarningFrame.headerLength] = 0x0A   // a line feed: never written by a sender
        #expect(throws: SignedFrameError.fieldOutOfRange("headline")) { try PublicWarningFrame.parse(bytes) }
        bytes[PublicWarningFrame.headerLength] = 0xFF   // not UTF-8
        #expect(throws: SignedFrameError.fieldOutOfRange("headline")) { try PublicWarningFrame.parse(bytes) }
        bytes[19] = 49
        #expect(throws: SignedFrameError.fieldOutOfRange("headline")) { try PublicWarningFrame.parse(bytes) }
        bytes[1] = 1 << 6   // level 1 (listed) never goes on the air
        #expect(throws: SignedFrameError.fieldOutOfRange("level")) { try PublicWarningFrame.parse(bytes) }
    }

    @Test func aRevokedBoxsWarningIsNotBelieved() throws {
        let v = try frames.loaded()
        var (verifier, clock) = try frames.verifier(v)
        let revocation = try Revocation(bytes: SignedFrameTests.bytes(v.revocations[0].hex))
        try verifier.add(revocation)
        #expect(verifier.check(try warning(v), clock: &clock, wallMicroseconds: v.time * 1_000_000, monotonicMicroseconds: 1)
                == .refused(.revoked(node: 0x0A0A_0A0A)))
    }
}
