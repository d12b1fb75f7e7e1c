import Crypto
import SwiftProtobuf

/// Checks `export.sig` (a `TEKSignatureList`) against `export.bin`: each signature is ECDSA
/// P-256 over SHA-256 of the *whole* export.bin, header included, DER-encoded.
///
/// A file is accepted when at least one signature that names a configured key (by key id and
/// version, see `ExportVerificationKey`) verifies. Signatures naming unknown keys are ignored
/// (files may carry signatures for several verifiers).
public struct ExportSignatureVerifier: Sendable {
    public let keys: [ExportVerificationKey]

    public init(keys: [ExportVerificationKey]) { self.keys = keys }

    /// - Returns: the signature info of the signature that verified.
    /// - Throws: `ExportSignatureError` — see its cases; `.signatureMismatch` when a signature
    ///   from a configured key fails (tampering, truncation, or the wrong configured key).
    @discardableResult
    public func verify(exportBin: [UInt8], exportSig: [UInt8]) throws(ExportSignatureError) -> ExportSignatureInfo {
        guard !keys.isEmpty else { throw .noVerificationKeys }
        let list: Gaen_TEKSignatureList
        do {
            list = try Gaen_TEKSignatureList(serializedBytes: exportSig)
        } catch BinaryDecodingError.truncated {
            throw .truncatedSignatureFile(byteCount: exportSig.count)
        } catch {
            throw .badSignatureFile(detail: "\(error)")
        }
        guard !list.signatures.isEmpty else { throw .noSignatures }

        var firstFailure: ExportSignatureError?
        var attempted = false
        for entry in list.signatures {
            let info = ExportSignatureInfo(entry.signatureInfo)
            let candidates = keys.filter { $0.matches(info) }
            if candidates.isEmpty { continue }
            attempted = true
            do {
                try Self.check(entry, info: info, exportBin: exportBin, against: candidates)
                return info
            } catch {
                // Keep the first reason: with one signature it is the reason.
                if firstFailure == nil { firstFailure = error }
            }
        }
        if attempted, let firstFailure { throw firstFailure }
        throw .noSignatureFromConfiguredKey(found: list.signatures.map { ExportSignatureInfo($0.signatureInfo) })
    }

    private static func check(_ entry: Gaen_TEKSignature, info: ExportSignatureInfo, exportBin: [UInt8], against candidates: [ExportVerificationKey]) throws(ExportSignatureError) {
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try P256.Signing.ECDSASignature(derRepresentation: entry.signature)
        } catch {
            throw .malformedSignature(info)
        }
        let valid: Bool
        switch info.algorithm ?? ExportSignatureInfo.ecdsaWithSHA256 {
        case ExportSignatureInfo.ecdsaWithSHA256:
            let digest = SHA256.hash(data: exportBin)
            valid = candidates.contains { $0.publicKey.isValidSignature(signature, for: digest) }
        case ExportSignatureInfo.ecdsaWithSHA512:
            let digest = SHA512.hash(data: exportBin)
            valid = candidates.contains { $0.publicKey.isValidSignature(signature, for: digest) }
        case let other:
            throw .unsupportedAlgorithm(other)
        }
        guard valid else { throw .signatureMismatch(info) }
    }
}

/// Signs export files the way key servers do — for the box publishing its own keys, and for
/// tests. ECDSA signatures are randomised: two signatures of one file differ, both verify.
public struct ExportSigner: Sendable {
    public let privateKey: P256.Signing.PrivateKey
    public let info: ExportSignatureInfo

    public init(privateKey: P256.Signing.PrivateKey, keyID: String?, keyVersion: String?) {
        self.privateKey = privateKey
        info = ExportSignatureInfo(keyID: keyID, keyVersion: keyVersion, algorithm: ExportSignatureInfo.ecdsaWithSHA256)
    }

    /// The matching verification key (same id and version).
    public var verificationKey: ExportVerificationKey {
        ExportVerificationKey(publicKey: privateKey.publicKey, keyID: info.keyID, keyVersion: info.keyVersion)
    }

    /// `export.sig` bytes for `exportBin`: one TEKSignature, DER, over SHA-256 of the file.
    /// - Throws: `ExposureCryptoError.cipherFailed` if signing or encoding fails.
    public func signatureFile(for exportBin: [UInt8], batchNumber: Int32 = 1, batchSize: Int32 = 1) throws(ExposureCryptoError) -> [UInt8] {
        var entry = Gaen_TEKSignature()
        entry.signatureInfo = info.message
        entry.batchNum = batchNumber
        entry.batchSize = batchSize
        do {
            entry.signature = try privateKey.signature(for: SHA256.hash(data: exportBin)).derRepresentation
            var list = Gaen_TEKSignatureList()
            list.signatures = [entry]
            return try list.serializedBytes()
        } catch {
            throw .cipherFailed(operation: "signing export.bin", detail: "\(error)")
        }
    }
}
