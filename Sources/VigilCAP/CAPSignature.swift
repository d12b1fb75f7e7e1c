import CVigilXMLSec
import Foundation

/// A CAP document's XML signature, verified with libxmlsec1 (docs/warnings.md, "Signatures").
///
/// Accepted: one enveloped signature over the whole document (`Reference URI=""`), canonical
/// XML (inclusive or exclusive), SHA-256/384/512, RSA or ECDSA, signed with the key of an
/// X509Data certificate that chains to one of the trusted certificates now. Refused, whatever
/// else holds: a bare public key (KeyValue: anyone can make one), SHA-1, a reference to anything
/// but the document (nothing is ever fetched), XSLT and other transforms, two signatures.
/// Verifying costs one more parse of the document (at most `CAPLimits.maxDocumentBytes`, read by
/// `CAPReader` first) and one public-key check.
public enum CAPSignature {
    public enum Verdict: Sendable, Equatable {
        /// The signature verifies; the signing certificate's subject.
        case verified(signer: String)
        /// The document carries no signature.
        case unsigned
        /// It carries one that does not verify, and why.
        case invalid(String)
        /// The box could not judge it (libxmlsec1 did not start, memory ran out): not the
        /// document's fault; asked again later.
        case unverifiable(String)
    }

    /// Starts libxmlsec1 once for the process; false when it cannot. Called before feeds are
    /// read on other threads (starting it changes process-wide state of libxml2's).
    @discardableResult
    public static func start() -> Bool { cvigil_xmlsec_start() == 1 }

    /// Why `pem` (one certificate) cannot anchor verification, or nil when it can: libxmlsec1 1.2
    /// verifies whole chains only, so a feed's signers must be self-signed CA certificates.
    public static func anchorProblem(_ pem: String) -> String? {
        var reason = [CChar](repeating: 0, count: 512)
        let bytes = Array(pem.utf8)
        let result = bytes.withUnsafeBufferPointer { cvigil_xmlsec_check_anchor($0.baseAddress, $0.count, &reason, reason.count) }
        return result == 0 ? nil : text(reason)
    }

    /// The verdict on `document` under `trusted` (PEM certificates, as `certificates(pem:)`
    /// splits a bundle). With no trusted certificate, a signed document is `invalid`.
    public static func verify(_ document: [UInt8], trusted: [String]) -> Verdict {
        guard document.count <= CAPLimits.standard.maxDocumentBytes else {
            return .invalid("the document is longer than \(CAPLimits.standard.maxDocumentBytes) bytes")
        }
        // The certificates end to end, each with its length: bytes, never C strings (a NUL in
        // one would make a C string shorter than the length said).
        let joined = trusted.flatMap { Array($0.utf8) }
        let lengths = trusted.map { $0.utf8.count }
        var reason = [CChar](repeating: 0, count: 512)
        var signer = [CChar](repeating: 0, count: 256)
        let result = document.withUnsafeBufferPointer { bytes in
            joined.withUnsafeBufferPointer { certificates in
                lengths.withUnsafeBufferPointer { sizes in
                    cvigil_xmlsec_verify(bytes.baseAddress, bytes.count, certificates.baseAddress, sizes.baseAddress, sizes.count,
                                         &reason, reason.count, &signer, signer.count)
                }
            }
        }
        switch result {
        case CVIGIL_XMLSEC_VERIFIED: return .verified(signer: CAPText.oneLine(text(signer), limit: 200))
        case CVIGIL_XMLSEC_UNSIGNED: return .unsigned
        case CVIGIL_XMLSEC_INVALID: return .invalid(CAPText.oneLine(text(reason), limit: 400))
        default: return .unverifiable(CAPText.oneLine(text(reason), limit: 400))
        }
    }

    /// The certificates of a PEM bundle, each with its BEGIN and END lines (anything between
    /// them, such as comments, left out); at most `maximumCertificates` and one more, so a caller
    /// can refuse a bundle that holds more (a system's whole CA bundle given by mistake).
    public static func certificates(pem: String) -> [String] {
        var out: [String] = []
        var remaining = pem[...]
        while out.count <= maximumCertificates, let begin = remaining.range(of: "-----BEGIN CERTIFICATE-----"),
              let end = remaining[begin.upperBound...].range(of: "-----END CERTIFICATE-----") {
            out.append(String(remaining[begin.lowerBound ..< end.upperBound]) + "\n")
            remaining = remaining[end.upperBound...]
        }
        return out
    }

    /// A feed's signers are its own CA or two, never a system's bundle of public roots (whose
    /// every TLS certificate could then sign warnings).
    public static let maximumCertificates = 16

    /// Why a signers file cannot be used.
    public struct SignersProblem: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// The trusted certificates of a signers file (PEM): one to `maximumCertificates`, each a
    /// self-signed CA (`anchorProblem`), with libxmlsec1 started. Every box's feed and the hub's
    /// poller read a signers file through this, so both trust the same things.
    public static func signers(pem: String) throws(SignersProblem) -> [String] {
        let found = certificates(pem: pem)
        guard !found.isEmpty else { throw SignersProblem(description: "it holds no PEM certificate") }
        guard found.count <= maximumCertificates else {
            throw SignersProblem(description: "it holds more than \(maximumCertificates) certificates: a feed's signers are its own CA, not a bundle of public roots")
        }
        for (n, certificate) in found.enumerated() {
            if let problem = anchorProblem(certificate) { throw SignersProblem(description: "certificate \(n + 1): \(problem)") }
        }
        guard start() else { throw SignersProblem(description: "libxmlsec1 could not start") }
        return found
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
