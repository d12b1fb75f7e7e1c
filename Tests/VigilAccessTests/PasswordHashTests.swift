import Testing
import VigilAccess

/// Stored passwords: `scrypt$LOG2N$R$P$SALT$HASH`. A stolen or tampered record must neither let a
/// wrong password in nor make the box do unbounded work.
@Suite struct PasswordHashTests {
    /// RFC 7914 §12's third test vector (P "pleaseletmein", S "SodiumChloride", N 16384, r 8,
    /// p 1): its first 32 bytes as the hash, salt and hash in base64url.
    static let rfc7914 = "scrypt$14$8$1$U29kaXVtQ2hsb3JpZGU$cCO9yzr9c0hGHAbNgf046_2o-7qQT44-qbVD9lRdofI"

    @Test func aRecordOfTheRFCVectorAcceptsItsPasswordOnly() {
        #expect(PasswordHash.verify("pleaseletmein", against: Self.rfc7914))
        #expect(!PasswordHash.verify("pleaseletmeiN", against: Self.rfc7914))
        #expect(!PasswordHash.verify("", against: Self.rfc7914))
    }

    @Test func aMadeHashVerifiesItsPasswordAndNoOther() throws {
        let stored = try PasswordHash.make("correct horse battery staple")
        #expect(stored.hasPrefix("scrypt$14$8$1$"))
        #expect(stored.split(separator: "$").count == 6)
        #expect(PasswordHash.verify("correct horse battery staple", against: stored))
        #expect(!PasswordHash.verify("correct horse battery stapl", against: stored))
    }

    @Test func aMalformedOrOversizedRecordIsRefusedUnread() {
        let salt = "U29kaXVtQ2hsb3JpZGU", hash = "cCO9yzr9c0hGHAbNgf046_2o-7qQT44-qbVD9lRdofI"
        let bad = [
            "",
            "scrypt",
            "bcrypt$14$8$1$\(salt)$\(hash)",
            "SCRYPT$14$8$1$\(salt)$\(hash)",
            "scrypt$14$8$1$\(salt)",
            "scrypt$14$8$1$\(salt)$\(hash)$extra",
            "scrypt$14$8$1$$\(hash)",
            // Work factors out of range are never attempted (2^40 rounds would take the box's memory).
            "scrypt$40$8$1$\(salt)$\(hash)",
            "scrypt$21$8$1$\(salt)$\(hash)",
            "scrypt$9$8$1$\(salt)$\(hash)",
            "scrypt$-14$8$1$\(salt)$\(hash)",
            "scrypt$14$0$1$\(salt)$\(hash)",
            "scrypt$14$17$1$\(salt)$\(hash)",
            "scrypt$14$8$0$\(salt)$\(hash)",
            "scrypt$14$8$5$\(salt)$\(hash)",
            "scrypt$14$8$99999999999999999999$\(salt)$\(hash)",
            "scrypt$fourteen$8$1$\(salt)$\(hash)",
            // Salt or hash that is not base64url, or a hash of the wrong size.
            "scrypt$14$8$1$not*base64$\(hash)",
            "scrypt$14$8$1$\(salt)$not*base64",
            "scrypt$14$8$1$\(salt)$\(hash.dropLast(4))",
            "scrypt$14$8$1$\(salt)$\(hash)AAAA",
        ]
        for record in bad {
            #expect(!PasswordHash.verify("pleaseletmein", against: record), "\(record)")
        }
    }

    @Test func equalBytesCompareEqualAndAnyDifferenceDoesNot() {
        #expect(PasswordHash.constantTimeEqual([], []))
        #expect(PasswordHash.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!PasswordHash.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!PasswordHash.constantTimeEqual([0, 2, 3], [1, 2, 3]))
        #expect(!PasswordHash.constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(!PasswordHash.constantTimeEqual([], [0]))
    }
}
