// The OpenSSL engine of RollingProximityIdentifierDeriver. Compiled only when the package gives
// this target the `COpenSSL` system-library module (libcrypto, Debian libssl-dev); otherwise the
// swift-crypto engine is the only one. Every libcrypto call is wrapped once, here.
#if canImport(COpenSSL)
import COpenSSL

/// HKDF-SHA256 → RPIK, then AES-128-ECB over all padded interval blocks in one EVP call.
///
/// Why not swift-crypto: its public AES API sets the key up again for every 16-byte block
/// (`AES.permute`), and its HKDF allocates several keys per call; here one key setup serves
/// 144 blocks (pipelined AES-NI) and the zero-salt HMAC is reused. Not thread-safe.
final class LibcryptoIdentifierEngine {
    private let cipher: OpaquePointer        // EVP_CIPHER* AES-128-ECB, fetched once
    private let cipherContext: OpaquePointer // EVP_CIPHER_CTX*, re-keyed per key
    private let mac: OpaquePointer           // EVP_MAC* HMAC, fetched once
    private let macContext: OpaquePointer    // EVP_MAC_CTX* HMAC-SHA256, re-keyed per step
    private var cipherKeyed = false
    /// "EN-RPIK" ‖ 0x01: the info of the first (and only needed) expand block.
    private let expandInfo = KeyScheduleLabels.identifierKeyInfo + [1]
    /// 144 blocks of "EN-RPI" ‖ 0×6 ‖ interval: only the last 4 bytes of each change per key.
    private var padded: [UInt8]

    init() throws(ExposureCryptoError) {
        guard let cipher = EVP_CIPHER_fetch(nil, "AES-128-ECB", nil) else { throw Self.failure("EVP_CIPHER_fetch(AES-128-ECB)") }
        guard let cipherContext = EVP_CIPHER_CTX_new() else {
            EVP_CIPHER_free(cipher)
            throw Self.failure("EVP_CIPHER_CTX_new")
        }
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else {
            EVP_CIPHER_CTX_free(cipherContext); EVP_CIPHER_free(cipher)
            throw Self.failure("EVP_MAC_fetch(HMAC)")
        }
        guard let macContext = EVP_MAC_CTX_new(mac) else {
            EVP_MAC_free(mac); EVP_CIPHER_CTX_free(cipherContext); EVP_CIPHER_free(cipher)
            throw Self.failure("EVP_MAC_CTX_new")
        }
        self.cipher = cipher
        self.cipherContext = cipherContext
        self.mac = mac
        self.macContext = macContext
        padded = []
        for _ in 0..<Exposure.intervalsPerDay { padded += KeyScheduleLabels.paddedData(interval: 0) }
        // The digest is a context parameter: set once, kept across re-keying.
        let ok = "SHA256".withCString { name in
            var params = [OSSL_PARAM_construct_utf8_string("digest", UnsafeMutablePointer(mutating: name), 0), OSSL_PARAM_construct_end()]
            return EVP_MAC_CTX_set_params(macContext, &params) == 1
        }
        guard ok else { throw Self.failure("EVP_MAC_CTX_set_params(digest SHA256)") }
    }

    deinit {
        EVP_MAC_CTX_free(macContext)
        EVP_MAC_free(mac)
        EVP_CIPHER_CTX_free(cipherContext)
        EVP_CIPHER_free(cipher)
    }

    /// Writes `count` (≤ 144) RPIs, 16 bytes each, for intervals `firstInterval...` into `out`.
    func identifiers(keyData: Bytes16, firstInterval: UInt32, count: Int, into out: UnsafeMutableRawBufferPointer) throws(ExposureCryptoError) {
        guard count >= 0, count <= Int(Exposure.intervalsPerDay), out.count >= count * 16 else {
            throw .wrongLength(what: "identifier buffer", expected: count * 16, actual: out.count)
        }
        try setCipherKey(try identifierKey(keyData))
        let length = count * 16
        let ok = padded.withUnsafeMutableBytes { input in
            for i in 0..<count {
                input.storeBytes(of: (firstInterval &+ UInt32(i)).littleEndian, toByteOffset: i * 16 + 12, as: UInt32.self)
            }
            return encrypt(input.baseAddress, length: length, into: out.baseAddress)
        }
        guard ok else { throw Self.failure("EVP_EncryptUpdate(AES-128-ECB)") }
    }

    /// RPIK = HKDF-SHA256(TEK, zero salt, "EN-RPIK"): extract, then the first expand block
    /// T(1) = HMAC(PRK, info ‖ 0x01), of which 16 bytes are the key.
    func identifierKey(_ keyData: Bytes16) throws(ExposureCryptoError) -> Bytes16 {
        // No salt: RFC 5869 then uses HashLen (32) zero bytes.
        let zeroSalt = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        var prk = zeroSalt
        var okm = zeroSalt
        let ok = withUnsafeBytes(of: zeroSalt) { salt in
            withUnsafeMutableBytes(of: &prk) { prkBytes in
                withUnsafeMutableBytes(of: &okm) { okmBytes in
                    keyData.withUnsafeBytes { ikm in hmac(key: salt, message: ikm, into: prkBytes) }
                        && expandInfo.withUnsafeBytes { info in hmac(key: UnsafeRawBufferPointer(prkBytes), message: info, into: okmBytes) }
                }
            }
        }
        guard ok else { throw Self.failure("HKDF-SHA256 (EVP_MAC HMAC)") }
        return Bytes16(lo: UInt64(littleEndian: okm.0), hi: UInt64(littleEndian: okm.1))
    }

    // MARK: the libcrypto calls (each returns whether it succeeded; callers throw `failure`)

    private func hmac(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        var written = 0
        return EVP_MAC_init(macContext, key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count, nil) == 1
            && EVP_MAC_update(macContext, message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count) == 1
            && EVP_MAC_final(macContext, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, out.count) == 1
            && written == out.count
    }

    private func setCipherKey(_ key: Bytes16) throws(ExposureCryptoError) {
        // After the first call only the key changes: passing no cipher skips the re-fetch/reset.
        let cipherToSet = cipherKeyed ? nil : cipher
        let ok = key.withUnsafeBytes { k in
            EVP_EncryptInit_ex2(cipherContext, cipherToSet, k.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, nil) == 1
                && EVP_CIPHER_CTX_set_padding(cipherContext, 0) == 1
        }
        guard ok else { throw Self.failure("EVP_EncryptInit_ex2(AES-128-ECB)") }
        cipherKeyed = true
    }

    private func encrypt(_ input: UnsafeMutableRawPointer?, length: Int, into output: UnsafeMutableRawPointer?) -> Bool {
        var written: Int32 = 0
        return EVP_EncryptUpdate(cipherContext, output?.assumingMemoryBound(to: UInt8.self), &written,
                                 input?.assumingMemoryBound(to: UInt8.self), Int32(length)) == 1
            && Int(written) == length
    }

    /// The failure with libcrypto's queued reason, clearing the queue so it cannot leak into a
    /// later, unrelated report.
    private static func failure(_ call: String) -> ExposureCryptoError {
        var detail = "no reason given"
        let code = ERR_get_error()
        if code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            detail = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        ERR_clear_error()
        return .cipherFailed(operation: call, detail: detail)
    }
}
#endif
