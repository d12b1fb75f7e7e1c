import Crypto
import VigilHex

/// A key server's public key, as configured by the operator, with the key id and version the
/// server puts in its signatures (`SignatureInfo.verification_key_id` / `_version`).
///
/// A nil `keyID` or `keyVersion` matches any value: configure ids when you trust several
/// servers, so each signature is checked against the key it names.
public struct ExportVerificationKey: Sendable {
    public let publicKey: P256.Signing.PublicKey
    public let keyID: String?
    public let keyVersion: String?

    public init(publicKey: P256.Signing.PublicKey, keyID: String? = nil, keyVersion: String? = nil) {
        self.publicKey = publicKey
        self.keyID = keyID
        self.keyVersion = keyVersion
    }

    /// From PEM text ("-----BEGIN PUBLIC KEY-----", SubjectPublicKeyInfo).
    /// - Throws: `ExportSignatureError.badPublicKey`.
    public init(pem: String, keyID: String? = nil, keyVersion: String? = nil) throws(ExportSignatureError) {
        do {
            self.init(publicKey: try P256.Signing.PublicKey(pemRepresentation: pem), keyID: keyID, keyVersion: keyVersion)
        } catch {
            throw .badPublicKey(detail: "PEM: \(error)")
        }
    }

    /// From binary: DER SubjectPublicKeyInfo (starts 0x30), raw X9.63 (65 bytes, 0x04 ‖ x ‖ y)
    /// or compressed (33 bytes, 0x02/0x03 ‖ x). PEM text is also accepted here, so a key file's
    /// bytes can be passed as they are.
    /// - Throws: `ExportSignatureError.badPublicKey`.
    public init(bytes: [UInt8], keyID: String? = nil, keyVersion: String? = nil) throws(ExportSignatureError) {
        let pemMarker = Array("-----BEGIN".utf8)
        if let start = bytes.firstIndex(of: pemMarker.first ?? 0), bytes[start...].starts(with: pemMarker) {
            try self.init(pem: String(decoding: bytes, as: UTF8.self), keyID: keyID, keyVersion: keyVersion)
            return
        }
        do {
            let key: P256.Signing.PublicKey
            switch (bytes.first, bytes.count) {
            case (0x04, 65): key = try P256.Signing.PublicKey(x963Representation: bytes)
            case (0x02, 33), (0x03, 33): key = try P256.Signing.PublicKey(compressedRepresentation: bytes)
            case (0x30, _): key = try P256.Signing.PublicKey(derRepresentation: bytes)
            default:
                throw ExportSignatureError.badPublicKey(detail: "\(bytes.count) bytes starting 0x\(Hex.encode(bytes.prefix(1))): not DER, X9.63 or PEM")
            }
            self.init(publicKey: key, keyID: keyID, keyVersion: keyVersion)
        } catch let error as ExportSignatureError {
            throw error
        } catch {
            throw .badPublicKey(detail: "\(error)")
        }
    }

    /// Whether this key is the one a signature names (absent names on either side match).
    func matches(_ info: ExportSignatureInfo) -> Bool {
        Self.agree(keyID, info.keyID) && Self.agree(keyVersion, info.keyVersion)
    }

    private static func agree(_ configured: String?, _ named: String?) -> Bool {
        guard let configured, let named else { return true }
        return configured == named
    }
}
