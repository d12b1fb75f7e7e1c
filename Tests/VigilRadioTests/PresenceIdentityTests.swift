import Testing
import VigilEvents
@testable import VigilRadio
import VigilSystem

@Suite struct PresenceIdentityTests {
    static let secret: [UInt8] = Array(0x20..<0x40)
    static func identity(_ secret: [UInt8] = secret, rotationSeconds: UInt32 = 900) -> PresenceIdentity? {
        try? PresenceIdentity(nodeSecret: secret, rotationSeconds: rotationSeconds)
    }

    /// Computed independently (Python hmac/hashlib); also in docs/radio.md.
    @Test func theRotationMatchesTheGoldenVector() throws {
        let identity = try #require(Self.identity())
        let rotation = identity.rotation(atUnixSeconds: 1_767_225_600)  // 2026-01-01T00:00:00Z
        #expect(rotation.interval == 1_963_584)
        #expect(Hex.encode(rotation.identifier) == "1bd9c94fc4f7a71f6fc46821912e64cc")
        #expect(rotation.address == 0x060F_7B5B_E038)
        #expect(formatAddress(rotation.address) == "06:0F:7B:5B:E0:38")
        #expect(rotation.addressLittleEndian == [0x38, 0xE0, 0x5B, 0x7B, 0x0F, 0x06])
        #expect(Hex.encode(rotation.presenceFrame) == "10" + "1bd9c94fc4f7a71f6fc46821912e64cc")
    }

    @Test func theSameSecretAndIntervalGiveTheSameIdentity() throws {
        let a = try #require(Self.identity())
        let b = try #require(Self.identity())
        for interval: UInt32 in [0, 1, 1_963_584, .max] {
            #expect(a.rotation(interval: interval) == b.rotation(interval: interval))
        }
    }

    @Test func differentIntervalsGiveUnrelatedIdentifiersAndAddresses() throws {
        let identity = try #require(Self.identity())
        var identifiers = Set<[UInt8]>()
        var addresses = Set<UInt64>()
        let first = identity.rotation(interval: 1_000_000)
        for interval: UInt32 in 1_000_000..<1_002_000 {
            let r = identity.rotation(interval: interval)
            identifiers.insert(r.identifier)
            addresses.insert(r.address)
        }
        #expect(identifiers.count == 2_000 && addresses.count == 2_000)
        // Neighbouring intervals share no structure: about half the identifier bits differ.
        let next = identity.rotation(interval: 1_000_001)
        let differing = zip(first.identifier, next.identifier).reduce(0) { $0 + ($1.0 ^ $1.1).nonzeroBitCount }
        #expect((32...96).contains(differing))
    }

    @Test func anotherSecretGivesAnotherIdentity() throws {
        let a = try #require(Self.identity())
        let b = try #require(Self.identity(Array(repeating: 0x20, count: 32)))
        #expect(a.rotation(interval: 5).identifier != b.rotation(interval: 5).identifier)
        #expect(a.rotation(interval: 5).address != b.rotation(interval: 5).address)
    }

    @Test func everyAddressIsANonResolvablePrivateAddress() throws {
        let identity = try #require(Self.identity())
        for interval: UInt32 in 0..<5_000 {
            let address = identity.rotation(interval: interval).address
            #expect(address >> 46 == 0, "interval \(interval): \(formatAddress(address))")
            #expect(address & 0x3FFF_FFFF_FFFF != 0 && address & 0x3FFF_FFFF_FFFF != 0x3FFF_FFFF_FFFF)
            #expect(PresenceIdentity.isNonResolvablePrivateAddress(address))
        }
    }

    @Test func theLittleEndianAddressIsThePrintedAddressReversed() throws {
        let identity = try #require(Self.identity())
        for interval: UInt32 in 0..<100 {
            let r = identity.rotation(interval: interval)
            let printed = (0..<6).map { UInt8(truncatingIfNeeded: r.address >> UInt64(8 * (5 - $0))) }
            #expect(r.addressLittleEndian == Array(printed.reversed()))
        }
    }

    @Test func anAllZeroOrAllOneWindowFallsThroughToTheNextBytes() {
        var digest = [UInt8](repeating: 0xAB, count: 32)
        // Top two bits are masked off: 0xC0 00 00 00 00 00 is all zero in the 46 random bits.
        digest.replaceSubrange(16..<22, with: [0xC0, 0, 0, 0, 0, 0])
        digest.replaceSubrange(22..<28, with: [0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC])
        #expect(PresenceIdentity.nonResolvablePrivateAddress(digest: digest) == 0x1234_5678_9ABC)
        // All ones in the random bits (whatever the top two bits were) is refused as well.
        digest.replaceSubrange(16..<22, with: [0x3F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(PresenceIdentity.nonResolvablePrivateAddress(digest: digest) == 0x1234_5678_9ABC)
        digest.replaceSubrange(16..<22, with: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(PresenceIdentity.nonResolvablePrivateAddress(digest: digest) == 0x1234_5678_9ABC)
        // Second window bad too: the third (bytes 26..<32), again with the top bits cleared.
        digest.replaceSubrange(22..<32, with: [0, 0, 0, 0, 0, 0, 0xF1, 0x22, 0x33, 0x44])
        #expect(PresenceIdentity.nonResolvablePrivateAddress(digest: digest) == 0x0000_F122_3344)
        // A good first window is used as it is, top bits cleared.
        digest.replaceSubrange(16..<22, with: [0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x01])
        #expect(PresenceIdentity.nonResolvablePrivateAddress(digest: digest) == 0x1EAD_BEEF_0001)
    }

    @Test func whenEveryWindowIsInvalidTheFallbackIsStillValid() {
        for digest in [[UInt8](repeating: 0, count: 32), [UInt8](repeating: 0xFF, count: 32),
                       [UInt8](repeating: 0xC0, count: 16) + [0xC0, 0, 0, 0, 0, 0, 0x3F] + [UInt8](repeating: 0xFF, count: 9),
                       [UInt8](repeating: 1, count: 10)] {
            let address = PresenceIdentity.nonResolvablePrivateAddress(digest: digest)
            #expect(address == PresenceIdentity.fallbackAddress)
            #expect(PresenceIdentity.isNonResolvablePrivateAddress(address))
        }
    }

    @Test func theIntervalIsUnixSecondsOverTheRotationPeriod() throws {
        let identity = try #require(Self.identity())
        #expect(identity.interval(atUnixSeconds: 0) == 0)
        #expect(identity.interval(atUnixSeconds: 899) == 0)
        #expect(identity.interval(atUnixSeconds: 900) == 1)
        #expect(identity.rotation(atUnixSeconds: 1_799) == identity.rotation(interval: 1))
        let r = identity.rotation(atUnixSeconds: 1_767_225_600 + 450)
        #expect(r.startUnixSeconds == 1_767_225_600 && r.endUnixSeconds == 1_767_226_500)
        let hourly = try #require(Self.identity(rotationSeconds: 3_600))
        #expect(hourly.interval(atUnixSeconds: 7_199) == 1)
        #expect(hourly.rotation(interval: 1).identifier == identity.rotation(interval: 1).identifier)  // same derivation
    }

    @Test func aPresenceFrameFitsAnAdvertAndDecodesBack() throws {
        let identity = try #require(Self.identity())
        let r = identity.rotation(interval: 77)
        let advert = try AdvertisingPayload.vigil(frame: r.presenceFrame)
        #expect(advert.bytes.count == 21)
        let key = try AlertFrameKey(shelterKey: Array(repeating: 7, count: 32))
        #expect(try VigilAdvertisement.decode(advertisingData: advert.bytes, key: key) == .presence(r.identifier))
    }

    @Test func aBadSecretOrPeriodIsRefused() {
        for count in [0, 31, 33] {
            #expect(throws: PresenceIdentityError.badSecretLength(count)) {
                try PresenceIdentity(nodeSecret: Array(repeating: 1, count: count))
            }
        }
        #expect(throws: PresenceIdentityError.badRotationPeriod) {
            try PresenceIdentity(nodeSecret: Self.secret, rotationSeconds: 0)
        }
        if let identity = Self.identity() { #expect(String(describing: identity).contains("redacted")) }
    }
}
