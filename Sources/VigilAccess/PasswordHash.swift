import _CryptoExtras
import Crypto
import Foundation
import VigilHubProtocol

/// Passwords (the hub's coordinators, the box's admin), stored as scrypt hashes: `scrypt$LOG2N$R$P$SALT$HASH` (salt and
/// hash base64url). Slow on purpose (about 0.1 s and 16 MiB each): a stolen database does not
/// give the passwords away cheaply. The parameters are in the text, so stronger ones can come
/// later without invalidating old hashes.
public enum PasswordHash {
    static let log2N = 14
    static let blockSize = 8
    static let parallelism = 1
    static let hashBytes = 32
    /// Shorter passwords are refused when one is set.
    public static let minimumLength = 10

    public static func make(_ password: String) throws -> String {
        var salt = [UInt8](repeating: 0, count: 16)
        var rng = SystemRandomNumberGenerator()
        for i in salt.indices { salt[i] = rng.next() }
        let hash = try derive(password, salt: salt, log2N: log2N, r: blockSize, p: parallelism)
        return "scrypt$\(log2N)$\(blockSize)$\(parallelism)$\(Base64URL.encode(salt))$\(Base64URL.encode(hash))"
    }

    /// Whether `password` is the one `stored` was made from; false for a malformed record.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$").map(String.init)
        guard parts.count == 6, parts[0] == "scrypt", let n = Int(parts[1]), (10...20).contains(n),
              let r = Int(parts[2]), (1...16).contains(r), let p = Int(parts[3]), (1...4).contains(p),
              let salt = Base64URL.decode(parts[4]), let expected = Base64URL.decode(parts[5]), expected.count == hashBytes,
              let actual = try? derive(password, salt: salt, log2N: n, r: r, p: p) else { return false }
        return constantTimeEqual(actual, expected)
    }

    static func derive(_ password: String, salt: [UInt8], log2N: Int, r: Int, p: Int) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(from: Array(password.utf8), salt: salt, outputByteCount: hashBytes,
                                           rounds: 1 << log2N, blockSize: r, parallelism: p)
        return key.withUnsafeBytes { Array($0) }
    }

    /// Compares without stopping at the first difference (a timing oracle on hashes and tokens).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}
