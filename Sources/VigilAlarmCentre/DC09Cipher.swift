#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto
import _CryptoExtras

/// AES-CBC with the all-zero IV DC-09 prescribes (§5.4.6: the random pad in front of each
/// message does an IV's work), on whole 16-byte blocks with no padding of AES's own (DC-09 pads
/// with its pad field). The only file that sees Foundation's `Data`, which swift-crypto's API
/// speaks. Returns nil instead of throwing: every caller has already checked the block count, so
/// nil means "this key cannot do it", which each caller reports in its own error.
enum DC09Cipher {
    static let blockSize = 16

    static func encrypt(_ plaintext: [UInt8], key: DC09Key) -> [UInt8]? {
        guard !plaintext.isEmpty, plaintext.count % blockSize == 0,
              let iv = try? AES._CBC.IV(ivBytes: [UInt8](repeating: 0, count: blockSize)),
              let sealed = try? AES._CBC.encrypt(plaintext, using: key.symmetricKey, iv: iv, noPadding: true)
        else { return nil }
        return [UInt8](sealed)
    }

    static func decrypt(_ ciphertext: [UInt8], key: DC09Key) -> [UInt8]? {
        guard !ciphertext.isEmpty, ciphertext.count % blockSize == 0,
              let iv = try? AES._CBC.IV(ivBytes: [UInt8](repeating: 0, count: blockSize)),
              let opened = try? AES._CBC.decrypt(ciphertext, using: key.symmetricKey, iv: iv, noPadding: true)
        else { return nil }
        return [UInt8](opened)
    }
}
