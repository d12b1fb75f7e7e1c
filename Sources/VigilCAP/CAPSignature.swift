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
    }

    /// The verdict on `document` under `trusted` (PEM certificates, as `certificates(pem:)`
    /// splits a bundle). With no trusted certificate, a signed document is `invalid`.
    public static func verify(_ document: [UInt8], trusted: [String]) -> Verdict {
        guard document.count <= CAPLimits.standard.maxDocumentBytes else {
            return .invalid("the document is longer than \(CAPLimits.standard.maxDocumentBytes) bytes")
        }
        let copies = trusted.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
        guard !pointers.contains(where: { $0 == nil }) else { return .invalid("out of memory") }
        let lengths = trusted.map { $0.utf8.count }
        var reason = [CChar](repeating: 0, count: 512)
        var signer = [CChar](repeating: 0, count: 256)
        let result = document.withUnsafeBufferPointer { bytes in
            pointers.withUnsafeBufferPointer { list in
                lengths.withUnsafeBufferPointer { sizes in
                    cvigil_xmlsec_verify(bytes.baseAddress, bytes.count, list.baseAddress, sizes.baseAddress, list.count,
                                         &reason, reason.count, &signer, signer.count)
                }
            }
        }
        switch result {
        case CVIGIL_XMLSEC_VERIFIED: return .verified(signer: CAPText.oneLine(text(signer), limit: 200))
        case CVIGIL_XMLSEC_UNSIGNED: return .unsigned
        default: return .invalid(CAPText.oneLine(text(reason), limit: 400))
        }
    }

    /// The certificates of a PEM bundle, each with its BEGIN and END lines (anything between
    /// them, such as comments, left out); at most `maximumCertificates`.
    public static func certificates(pem: String) -> [String] {
        var out: [String] = []
        var remaining = pem[...]
        while out.count < maximumCertificates, let begin = remaining.range(of: "-----BEGIN CERTIFICATE-----"),
              let end = remaining[begin.upperBound...].range(of: "-----END CERTIFICATE-----") {
            out.append(String(remaining[begin.lowerBound ..< end.upperBound]) + "\n")
            remaining = remaining[end.upperBound...]
        }
        return out
    }

    public static let maximumCertificates = 64

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
