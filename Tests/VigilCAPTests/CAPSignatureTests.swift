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

    @Test(arguments: ["signed-rsa.xml", "signed-ecdsa.xml", "object-alert.xml", "comment-in-headline.xml"])
    func aDocumentSignedByACertificateTheCATrustsVerifiesAndReadsAsWhatWasSigned(name: String) throws {
        let bytes = try Corpus.bytes("signed/" + name)
        let verdict = CAPSignature.verify(bytes, trusted: try Self.trusted())
        guard case .verified(let signer) = verdict else { Issue.record("\(name): \(verdict)"); return }
        #expect(signer.contains("warnings.example.gov"), "the signer is named: \(signer)")
        // What the reader takes from it is what was signed: an alert hidden in the signature's
        // Object is not read, and a comment does not change the text.
        var read = try CAPReader.read(bytes)
        read.hasSignature = false
        #expect(read == (try Corpus.alert("flood-warning.xml")), "\(name)")
    }

    /// Each refused for its own reason (the reason is libxmlsec1's, after the box's words).
    @Test(arguments: [
        ("tampered.xml", "the signature does not match the document"),
        ("stranger.xml", "the signature cannot be verified"),
        ("keyvalue.xml", "the signature cannot be verified"),
        ("sha1.xml", "the signature cannot be verified"),
        ("remote-reference.xml", "the signature cannot be verified"),
        ("two-signatures.xml", "more than one signature"),
        ("countersigned.xml", "more than one signature"),
        ("xpath-tampered.xml", "the signature cannot be verified"),
        ("two-references.xml", "the signature has more than one reference"),
    ])
    func whatDoesNotProveItsSenderIsRefusedWithTheReason(name: String, reason: String) throws {
        let verdict = CAPSignature.verify(try Corpus.bytes("signed/" + name), trusted: try Self.trusted())
        guard case .invalid(let said) = verdict else { Issue.record("\(name): \(verdict)"); return }
        #expect(said.hasPrefix(reason), "\(name): \(said)")
    }

    /// Why each is refused, in libxmlsec1's words: the restriction that refuses it, not some other (a
    /// bare KeyValue is not read at all, so no key is found for it).
    @Test(arguments: [
        ("stranger.xml", "certificate"), ("keyvalue.xml", "FindKey"), ("sha1.xml", "rsa-sha1"),
        ("remote-reference.xml", "uri"), ("xpath-tampered.xml", "xpath"),
    ])
    func theRestrictionThatRefusesItIsTheOneNamed(name: String, word: String) throws {
        let verdict = CAPSignature.verify(try Corpus.bytes("signed/" + name), trusted: try Self.trusted())
        guard case .invalid(let said) = verdict else { Issue.record("\(name): \(verdict)"); return }
        #expect(said.lowercased().contains(word.lowercased()), "\(name): \(said)")
    }

    @Test func onlyASelfSignedCAAnchorsTheSigners() throws {
        #expect(CAPSignature.anchorProblem(String(decoding: try Corpus.bytes("signed/ca.pem"), as: UTF8.self)) == nil)
        let leaf = CAPSignature.anchorProblem(String(decoding: try Corpus.bytes("signed/signer.pem"), as: UTF8.self))
        #expect(leaf?.hasPrefix("not self-signed") == true, "\(String(describing: leaf))")
        #expect(CAPSignature.anchorProblem("nothing") == "not a PEM certificate")
        let bundle = String(repeating: String(decoding: try Corpus.bytes("signed/ca.pem"), as: UTF8.self), count: 20)
        #expect(CAPSignature.certificates(pem: bundle).count == CAPSignature.maximumCertificates + 1, "a caller sees it is too many")
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

    @Test func aSignersFileIsOneToSixteenSelfSignedCAsAndNothingElse() throws {
        let ca = String(decoding: try Corpus.bytes("signed/ca.pem"), as: UTF8.self)
        let leaf = String(decoding: try Corpus.bytes("signed/signer.pem"), as: UTF8.self)
        #expect(try CAPSignature.signers(pem: "# the county's CA\n" + ca) == [ca])
        func problem(_ pem: String) -> String? {
            do { _ = try CAPSignature.signers(pem: pem); return nil } catch { return error.description }
        }
        #expect(problem("") == "it holds no PEM certificate")
        #expect(problem(String(repeating: ca, count: 17))?.hasPrefix("it holds more than 16 certificates") == true)
        #expect(problem(ca + leaf)?.hasPrefix("certificate 2: not self-signed") == true, "\(String(describing: problem(ca + leaf)))")
    }

    @Test func aBundleIsSplitIntoItsCertificates() throws {
        let ca = String(decoding: try Corpus.bytes("signed/ca.pem"), as: UTF8.self)
        #expect(CAPSignature.certificates(pem: "# ours\n" + ca + "comment\n" + ca).count == 2)
        #expect(CAPSignature.certificates(pem: "not a certificate").isEmpty)
        let broken = CAPSignature.verify(try Corpus.bytes("signed/signed-rsa.xml"), trusted: ["-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"])
        guard case .unverifiable(let reason) = broken else { Issue.record("the box's own certificate is at fault, not the document: \(broken)"); return }
        #expect(reason.hasPrefix("a trusted certificate is not a PEM certificate"), "\(reason)")
    }
}
