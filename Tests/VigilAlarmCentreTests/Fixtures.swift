@testable import VigilAlarmCentre

/// Shared test values. Frames and CRCs marked "tools/dc09_vectors.py" were computed there with
/// crcmod, pycryptodome and pysiaalarm — independently of this package's code.
enum Fixture {
    static let identity = try! DC09Identity(account: "1234", receiver: "12", line: "1")
    static let sequence = DC09Sequence(42)!
    /// pysiaalarm's kind of key: 16 ASCII characters used as AES-128 key bytes.
    static let asciiKey128 = try! DC09Key(bytes: Array("0123456789ABCDEF".utf8))
    /// A standard hex-written AES-256 key: bytes 00 01 … 1F.
    static let hexKey256 = try! DC09Key(hex: "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F")
    /// 2026-11-28T02:38:32Z (tools/dc09_vectors.py).
    static let utcSeconds: Int64 = 1_795_833_512
    /// Pad bytes 0, 1, 2, … : pad characters "ABCDEFGHI…".
    static let countingPad: [UInt8] = Array(0..<16)

    static var plain: DC09Expectation { DC09Expectation(identity: identity, sequence: sequence, key: nil) }
    static func keyed(_ key: DC09Key = asciiKey128) -> DC09Expectation {
        DC09Expectation(identity: identity, sequence: sequence, key: key)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// LF, CRC, 0LLL, `body`, CR — a correctly framed reply around any body.
    static func framed(_ body: String) -> [UInt8] { framed(Array(body.utf8)) }
    static func framed(_ body: [UInt8]) -> [UInt8] {
        [0x0A] + ASCII.hex(DC09CRC.checksum(body), width: 4) + [0x30] + ASCII.hex(UInt16(body.count), width: 3) + body + [0x0D]
    }

    /// An encrypted reply body's hex region: `plaintext` (a whole number of blocks) under `key`.
    static func encryptedHex(_ plaintext: String, key: DC09Key = asciiKey128) -> String {
        String(decoding: Hex.encode(DC09Cipher.encrypt(Array(plaintext.utf8), key: key)!), as: UTF8.self)
    }

    // Replies captured from pysiaalarm 3.2.2 (scripts/sia-centre; Fuzz/corpus/dc09-reply holds them too).
    /// Plain ACK to sequence 0042 from account 1234, receiver 12, line 1.
    static let capturedAck = "\n" + "BAB00015\"ACK\"0042R12L1#1234[]" + "\r"
    /// NAK for a timestamp outside pysiaalarm's window (`--mode nak`).
    static let capturedNak = "\n" + "3F430026\"NAK\"0000R12L1A0[]_02:38:32,11-28-2026" + "\r"
    /// DUH (`--mode duh`).
    static let capturedDuh = "\n" + "E0C00015\"DUH\"0042R12L1#1234[]" + "\r"
}
