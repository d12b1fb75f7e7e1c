import Foundation
import Testing
import VigilHubProtocol

/// The texts a box is handed or sends (enrolment tokens, credentials, node ids, the hub's
/// fingerprint): read exactly, or refused whole.
@Suite struct EnrolmentTokenTests {
    /// 32 bytes of secret as `vigil-hub enroll` makes it: 43 base64url characters.
    let secret = Base64URL.encode([UInt8](repeating: 0xFB, count: 32))
    let fingerprint = "148166c364ad85c9f6960982caaca6c6cffa2a9d5d6e334af084393d1e819cba"

    @Test func aTokenReadsBackAsItWasPrinted() throws {
        let token = EnrolmentToken(secret: secret, hubFingerprint: fingerprint)
        #expect(token.text == "vigil1.\(secret).\(fingerprint)")
        #expect(EnrolmentToken(text: token.text) == token)
        #expect(EnrolmentToken(text: "  \(token.text)\n") == token, "as pasted from a file or a terminal")
        let shouted = try #require(EnrolmentToken(text: "vigil1.\(secret).\(fingerprint.uppercased())"))
        #expect(shouted.hubFingerprint == fingerprint)
    }

    @Test func aSecretFrom32To128Base64URLCharactersIsAccepted() {
        for length in [32, 128] {
            let s = String(repeating: "a", count: length - 2) + "-_"
            #expect(EnrolmentToken(text: "vigil1.\(s).\(fingerprint)")?.secret == s, "\(length)")
        }
    }

    @Test func aMalformedTokenIsRefusedNotGuessed() {
        let bad = [
            "",
            "vigil1",
            "vigil1..",
            "vigil2.\(secret).\(fingerprint)",
            "VIGIL1.\(secret).\(fingerprint)",
            "\(secret).\(fingerprint)",
            "vigil1.\(secret).\(fingerprint).x",
            "vigil1.\(secret).\(fingerprint).",
            "vigil1.\(String(repeating: "a", count: 31)).\(fingerprint)",
            "vigil1.\(String(repeating: "a", count: 129)).\(fingerprint)",
            "vigil1.\(String(repeating: "a", count: 40))+/=.\(fingerprint)",
            "vigil1.\(String(repeating: "é", count: 40)).\(fingerprint)",
            "vigil1.\(secret).\(fingerprint.dropLast())",
            "vigil1.\(secret).\(fingerprint)0",
            "vigil1.\(secret).\(String(repeating: "g", count: 64))",
            "vigil1.\(secret) .\(fingerprint)",
        ]
        for text in bad {
            #expect(EnrolmentToken(text: text) == nil, "\(text.debugDescription)")
        }
    }
}

@Suite struct Base64URLTests {
    @Test func theURLAlphabetIsUsedAndPaddingLeftOff() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xFE]) == "-__-")
        #expect(Base64URL.encode([0x01]) == "AQ")
        #expect(Base64URL.encode([]) == "")
    }

    @Test func textDecodesWithOrWithoutPadding() {
        #expect(Base64URL.decode("-__-") == [0xFB, 0xFF, 0xFE])
        #expect(Base64URL.decode("AQ") == [0x01])
        #expect(Base64URL.decode("AQ==") == [0x01])
        let bytes = (0...255).map { UInt8($0) }
        #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
    }

    @Test func textThatIsNotBase64URLIsNil() {
        for text in ["A!", "****", "AQ.Q", "AQ Q", "AQ\n"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
        }
    }
}

@Suite struct BoxCredentialTests {
    let secret = String(repeating: "s", count: 43)

    @Test func aCredentialTravelsAsABearerHeaderAndReadsBack() {
        let credential = BoxCredential(node: 0x00AB_CDEF_0123_4567, secret: secret)
        #expect(credential.headerValue == "Bearer 00abcdef01234567.\(secret)")
        #expect(BoxCredential(headerValue: credential.headerValue) == credential)
        #expect(BoxCredential(headerValue: "Bearer ffffffffffffffff.\(secret)")?.node == UInt64.max)
    }

    @Test func aMalformedHeaderIsNoCredential() {
        for header in [
            "", "Bearer ", "bearer 00abcdef01234567.\(secret)", "Basic 00abcdef01234567.\(secret)",
            "Bearer  00abcdef01234567.\(secret)", "Bearer 00ABCDEF01234567.\(secret)", "Bearer abcdef01234567.\(secret)",
            "Bearer 00abcdef01234567\(secret)", "Bearer 00abcdef01234567.\(secret).x", "Bearer .\(secret)",
            "Bearer 00abcdef01234567.\(String(repeating: "s", count: 31))", "Bearer 00abcdef01234567.\(String(repeating: "s", count: 129))",
        ] {
            #expect(BoxCredential(headerValue: header) == nil, "\(header.debugDescription)")
        }
    }
}

@Suite struct NodeIDTextTests {
    @Test func nodeIdsAreSixteenLowerCaseHexDigits() {
        #expect(NodeIDText.format(0) == "0000000000000000")
        #expect(NodeIDText.format(0xAB) == "00000000000000ab")
        #expect(NodeIDText.format(UInt64.max) == "ffffffffffffffff")
        #expect(FeedAnswer.digestText(1) == "0000000000000001")
        for id: UInt64 in [0, 1, 0xAB, 0x8000_0000_0000_0000, UInt64.max] {
            #expect(NodeIDText.parse(NodeIDText.format(id)) == id)
        }
    }

    @Test func anythingButSixteenLowerCaseHexDigitsIsRefused() {
        for text in ["", "ab", "000000000000000", "00000000000000000", "FFFFFFFFFFFFFFFF", "+000000000000001",
                     "-000000000000001", "0x00000000000001", " 000000000000001", "000000000000000g",
                     "０００００００００００００００１"] {
            #expect(NodeIDText.parse(text) == nil, "\(text)")
        }
    }
}

/// A hub's identity as a box pins it: SHA-256 of the certificate's DER bytes.
@Suite struct CertificateFingerprintTests {
    /// A self-signed P-256 certificate (CN=vigil-test) as `openssl req -x509` makes it; its
    /// fingerprint is what `openssl x509 -noout -fingerprint -sha256` printed, without colons.
    static let pem = """
        -----BEGIN CERTIFICATE-----
        MIIBfjCCASWgAwIBAgIUT7wLaG1LIXnFdMV6C5saZVIXzhMwCgYIKoZIzj0EAwIw
        FTETMBEGA1UEAwwKdmlnaWwtdGVzdDAeFw0yNjExMzAwMDAxMjBaFw0zNjExMjcw
        MDAxMjBaMBUxEzARBgNVBAMMCnZpZ2lsLXRlc3QwWTATBgcqhkjOPQIBBggqhkjO
        PQMBBwNCAAQTleD2hL13KbIsuHXMkl8qN+vKI7PEuGk0OGhQfqA8C8aBPOPwyDYb
        UnltUeQpamSMdbAEQlLhbzhEIWYfhmX/o1MwUTAdBgNVHQ4EFgQUfv474NiPbmEt
        bDJrmZZOWcGOWQgwHwYDVR0jBBgwFoAUfv474NiPbmEtbDJrmZZOWcGOWQgwDwYD
        VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiAZwAUoybJ9rYewZI7eM23z
        LwP8H+5424ifJHPPyxIW2QIgFp8tj1uM0IDJjR2xADNMTLQhC3ATsE+h69fQ5ws1
        NA4=
        -----END CERTIFICATE-----

        """
    static let fingerprint = "148166c364ad85c9f6960982caaca6c6cffa2a9d5d6e334af084393d1e819cba"

    @Test func theFingerprintIsTheSHA256OfTheCertificatesBytes() {
        #expect(CertificateFingerprint.of(pem: Self.pem) == Self.fingerprint)
        #expect(CertificateFingerprint.of(pem: Self.pem.replacingOccurrences(of: "\n", with: "\r\n")) == Self.fingerprint,
                "line endings do not matter")
    }

    @Test func theFirstCertificateOfAFileCounts() {
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        let other = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        #expect(CertificateFingerprint.of(pem: key + Self.pem + other) == Self.fingerprint)
    }

    @Test func aFileWithoutAWholeCertificateHasNoFingerprint() {
        let begin = "-----BEGIN CERTIFICATE-----\n", end = "-----END CERTIFICATE-----\n"
        let texts: [String] = [
            "", "hello",
            "\(begin)AAAA\n",                    // never ends
            "AAAA\n\(end)",                      // never begins
            "\(end)AAAA\n\(begin)",               // ends before it begins
            "\(begin)\(end)",                     // empty
            "\(begin)\n \n\(end)",                // only whitespace
            "\(begin)not base64!\n\(end)",
            String(Self.pem.prefix(200)),         // a file cut short
        ]
        for text in texts {
            #expect(CertificateFingerprint.of(pem: text) == nil, "\(text.debugDescription)")
        }
    }
}
