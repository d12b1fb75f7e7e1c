import Crypto
import _CryptoExtras

/// The GAEN key schedule of one Temporary Exposure Key (Exposure Notification Cryptography
/// Specification v1.2), through swift-crypto:
///
///     RPIK   = HKDF-SHA256(TEK, salt: none, info: "EN-RPIK", 16 bytes)
///     AEMK   = HKDF-SHA256(TEK, salt: none, info: "EN-AEMK", 16 bytes)
///     RPI(j) = AES-128(RPIK, "EN-RPI" ‖ 0x00 × 6 ‖ j as UInt32 little-endian)
///     AEM    = AES-128-CTR(AEMK, IV: RPI, metadata)
///
/// This type is for advertising and for reading a matched device's metadata: clear rather than
/// fast (one AES key setup per identifier). Matching millions of keys goes through
/// `RollingProximityIdentifierDeriver`, which must agree with it bit for bit (tests check).
public struct ExposureKeySchedule: Sendable {
    /// RPIK: the AES key of the identifiers.
    public let identifierKey: SymmetricKey
    /// AEMK: the AES-CTR key of the metadata.
    public let metadataKey: SymmetricKey

    public init(keyData: Bytes16) {
        identifierKey = Self.identifierKey(for: keyData)
        metadataKey = Self.deriveKey(keyData, info: KeyScheduleLabels.metadataKeyInfo)
    }

    public init(_ key: TemporaryExposureKey) { self.init(keyData: key.keyData) }

    /// RPIK alone: what matching needs (the AEMK only after a match).
    public static func identifierKey(for keyData: Bytes16) -> SymmetricKey {
        deriveKey(keyData, info: KeyScheduleLabels.identifierKeyInfo)
    }

    private static func deriveKey(_ keyData: Bytes16, info: [UInt8]) -> SymmetricKey {
        // No salt: RFC 5869 then uses HashLen zero bytes, as the specification intends.
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: keyData.bytes), info: info, outputByteCount: 16)
    }

    /// RPI for ENIntervalNumber `interval`: one high-level AES call (the baseline path).
    public func identifier(forInterval interval: UInt32) throws(ExposureCryptoError) -> RollingProximityIdentifier {
        try Self.identifier(forInterval: interval, identifierKey: identifierKey)
    }

    /// RPI for `interval` under an RPIK from `identifierKey(for:)`.
    public static func identifier(forInterval interval: UInt32, identifierKey: SymmetricKey) throws(ExposureCryptoError) -> RollingProximityIdentifier {
        var block = KeyScheduleLabels.paddedData(interval: interval)
        do {
            try AES.permute(&block, key: identifierKey)
        } catch {
            throw .cipherFailed(operation: "AES-128 of the RPI padded data", detail: "\(error)")
        }
        guard let value = Bytes16(block) else {
            throw .wrongLength(what: "AES-128 output", expected: Bytes16.count, actual: block.count)
        }
        return RollingProximityIdentifier(value)
    }

    /// AEM = AES-128-CTR(AEMK, IV = the identifier it is advertised with, metadata).
    public func encrypt(_ metadata: AssociatedMetadata, for identifier: RollingProximityIdentifier) throws(ExposureCryptoError) -> AssociatedEncryptedMetadata {
        let out = try ctr(metadata.bytes, identifier: identifier)
        guard let aem = AssociatedEncryptedMetadata(out) else {
            throw .wrongLength(what: "AES-128-CTR output", expected: AssociatedMetadata.count, actual: out.count)
        }
        return aem
    }

    /// The metadata of a matched advertisement; CTR decryption is the same keystream XOR.
    /// Any 4 bytes decrypt to *some* metadata: only a matched identifier makes it meaningful.
    public func decrypt(_ aem: AssociatedEncryptedMetadata, for identifier: RollingProximityIdentifier) throws(ExposureCryptoError) -> AssociatedMetadata {
        let out = try ctr(aem.bytes, identifier: identifier)
        guard let metadata = AssociatedMetadata(bytes: out) else {
            throw .wrongLength(what: "AES-128-CTR output", expected: AssociatedMetadata.count, actual: out.count)
        }
        return metadata
    }

    /// The advertisement this key sends in `interval` with `metadata`.
    public func advertisement(forInterval interval: UInt32, metadata: AssociatedMetadata) throws(ExposureCryptoError) -> ExposureAdvertisement {
        let rpi = try identifier(forInterval: interval)
        return ExposureAdvertisement(identifier: rpi, encryptedMetadata: try encrypt(metadata, for: rpi))
    }

    private func ctr(_ input: [UInt8], identifier: RollingProximityIdentifier) throws(ExposureCryptoError) -> [UInt8] {
        do {
            // The whole 16-byte RPI is the initial counter block, as the specification says.
            let nonce = try AES._CTR.Nonce(nonceBytes: identifier.bytes)
            return Array(try AES._CTR.encrypt(input, using: metadataKey, nonce: nonce))
        } catch {
            throw .cipherFailed(operation: "AES-128-CTR of the metadata", detail: "\(error)")
        }
    }
}

/// The specification's constant strings and the RPI's padded input block.
enum KeyScheduleLabels {
    static let identifierKeyInfo = Array("EN-RPIK".utf8)
    static let metadataKeyInfo = Array("EN-AEMK".utf8)
    static let paddedPrefix = Array("EN-RPI".utf8)

    /// "EN-RPI" ‖ six zero bytes ‖ interval as UInt32 little-endian: 16 bytes.
    static func paddedData(interval: UInt32) -> [UInt8] {
        paddedPrefix + [0, 0, 0, 0, 0, 0] + withUnsafeBytes(of: interval.littleEndian) { Array($0) }
    }
}
