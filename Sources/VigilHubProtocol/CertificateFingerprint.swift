import Crypto
import Foundation
import VigilHex

/// A hub's identity as boxes pin it: the SHA-256 of its certificate's DER bytes, hex.
public enum CertificateFingerprint {
    /// The fingerprint of the first certificate in `pem`; nil if there is none.
    public static func of(pem: String) -> String? {
        guard let begin = pem.range(of: "-----BEGIN CERTIFICATE-----"),
              let end = pem.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<pem.endIndex) else { return nil }
        let body = pem[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: String(body)), !der.isEmpty else { return nil }
        return Hex.encode(Array(SHA256.hash(data: der)))
    }
}
