/// Why an export's signature was not accepted. Each case names a different fix.
public enum ExportSignatureError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No export.sig and unsigned files were not explicitly allowed.
    case unsigned
    /// A configured public key could not be read.
    case badPublicKey(detail: String)
    /// Verification was asked for with no configured public key.
    case noVerificationKeys
    /// export.sig ends in the middle of a field.
    case truncatedSignatureFile(byteCount: Int)
    /// export.sig is not a TEKSignatureList.
    case badSignatureFile(detail: String)
    /// export.sig holds no signatures.
    case noSignatures
    /// No signature names a configured key (by key id and version): the file comes from
    /// another server or the configuration lacks its key.
    case noSignatureFromConfiguredKey(found: [ExportSignatureInfo])
    /// The signature's algorithm is not ECDSA with SHA-256 (or SHA-512).
    case unsupportedAlgorithm(String)
    /// The signature bytes are not a DER ECDSA signature.
    case malformedSignature(ExportSignatureInfo)
    /// The signature does not verify: export.bin was altered (or truncated) after signing, or
    /// the configured key for this id is not the one the server signs with.
    case signatureMismatch(ExportSignatureInfo)

    public var description: String {
        switch self {
        case .unsigned:
            return "export has no export.sig; refusing unsigned keys (allow them explicitly to import anyway)"
        case let .badPublicKey(detail):
            return "verification key is not a P-256 public key (PEM, DER SubjectPublicKeyInfo or X9.63): \(detail)"
        case .noVerificationKeys:
            return "no verification keys configured: cannot check export.sig"
        case let .truncatedSignatureFile(count):
            return "export.sig is truncated: its protobuf ends mid-field after \(count) bytes"
        case let .badSignatureFile(detail):
            return "export.sig is not a TEKSignatureList (\(detail))"
        case .noSignatures:
            return "export.sig contains no signatures"
        case let .noSignatureFromConfiguredKey(found):
            let names = found.isEmpty ? "none" : found.map(\.description).joined(separator: "; ")
            return "export.sig is signed by no configured key (signatures from: \(names))"
        case let .unsupportedAlgorithm(oid):
            return "export.sig uses algorithm \(oid); only ECDSA P-256 with SHA-256 (\(ExportSignatureInfo.ecdsaWithSHA256)) or SHA-512 is supported"
        case let .malformedSignature(info):
            return "export.sig's signature for \(info) is not a DER-encoded ECDSA signature"
        case let .signatureMismatch(info):
            return "export.sig's signature for \(info) does not verify: export.bin was altered or truncated after signing, or the configured key for that id is not the server's"
        }
    }
}
