import Foundation
import Testing
import VigilTestSupport
@testable import VigilCAP

/// XML signatures (libxmlsec1) on the signed corpus, which scripts/cap-sign-corpus made with
/// openssl and xmlsec1's command line: a test CA, a signer it certified, a stranger it did not.
struct CAPSignatureTests {
    static func trusted() throws -> [String] {
        CAPSignature.certificates(pem: String(decoding: try Corpus.bytes("signed/ca.pem"), as: UTF8.self))
    }

    @Test(arguments: ["signed-rsa.xml", "signed-ecdsa.xml"])
    func aDocumentSignedByACertificateTheCATrustsVerifies(name: String) throws {
        let verdict = CAPSignature.verify(try Corpus.bytes("signed/" + name), trusted: try Self.trusted())
        guard case .verified(let signer) = verdict else { Issue.record("\(name): \(verdict)"); return }
        #expect(signer.contains("warnings.example.gov"), "the signer is named: \(signer)")
    }

    @Test(arguments: [
        ("tampered.xml", "changed after it was signed"),
        ("stranger.xml", "a certificate the CA did not issue"),
        ("keyvalue.xml", "a bare public key: anyone can make one (xmlsec1's command line accepts it)"),
        ("sha1.xml", "SHA-1"),
        ("remote-reference.xml", "a reference to an address: never fetched"),
        ("two-signatures.xml", "two signatures"),
    ])
    func whatDoesNotProveItsSenderIsRefusedWithTheReason(name: String, why: String) throws {
        let verdict = CAPSignature.verify(try Corpus.bytes("signed/" + name), trusted: try Self.trusted())
        guard case .invalid(let reason) = verdict else { Issue.record("\(name) (\(why)): \(verdict)"); return }
        #expect(!reason.isEmpty)
    }

    @Test func anUnsignedDocumentIsUnsignedAndASignedOneNeedsATrustedCertificate() throws {
        #expect(CAPSignature.verify(try Corpus.bytes("flood-warning.xml"), trusted: try Self.trusted()) == .unsigned)
        #expect(CAPSignature.verify(try Corpus.bytes("signed/signed-rsa.xml"), trusted: []) == .invalid("no trusted certificate to verify it with"))
        let garbage = CAPSignature.verify(Array("<alert>".utf8), trusted: try Self.trusted())
        #expect(garbage == .invalid("not well-formed XML"))
    }

    @Test func aSignedDocumentReadsAsTheSameWarningAndValidatesAgainstTheSchema() throws {
        var signed = try Corpus.alert("signed/signed-rsa.xml")
        #expect(signed.hasSignature)
        signed.hasSignature = false
        #expect(signed == (try Corpus.alert("flood-warning.xml")))
        let names = ["signed-rsa.xml", "signed-ecdsa.xml", "tampered.xml"]
        let output = try CAPSchema.validate(names.map { Corpus.directory.appendingPathComponent("signed/" + $0).path })
        for name in names { #expect(output.contains("\(name) validates"), "\(output)") }
    }

    @Test func aBundleIsSplitIntoItsCertificates() throws {
        let ca = String(decoding: try Corpus.bytes("signed/ca.pem"), as: UTF8.self)
        #expect(CAPSignature.certificates(pem: "# ours\n" + ca + "comment\n" + ca).count == 2)
        #expect(CAPSignature.certificates(pem: "not a certificate").isEmpty)
        let broken = CAPSignature.verify(try Corpus.bytes("signed/signed-rsa.xml"), trusted: ["-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"])
        guard case .invalid(let reason) = broken else { Issue.record("\(broken)"); return }
        #expect(reason.hasPrefix("a trusted certificate is not a PEM certificate"), "\(reason)")
    }
}
