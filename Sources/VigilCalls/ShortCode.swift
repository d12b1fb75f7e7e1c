/// The short code a call for help carries ("Reply TAKE or T4821"): one letter and four digits,
/// so a staff member answering several open calls says which one they take. 17 letters ×
/// 10,000 = 170,000 codes.
///
/// Generated codes use only letters that cannot be misread as digits or as each other on a
/// phone screen or when read out: no B (8), D (0), G (6), I and L (1), O and Q (0), S (5), Z (2).
/// A reply is matched case-insensitively, and `SMSReply` accepts any letter (a code the box
/// never gave matches no call).
public struct ShortCode: Hashable, Sendable, CustomStringConvertible {
    /// "T4821": the letter upper case.
    public let text: String

    /// The letters generated codes start with.
    public static let letters: [Unicode.Scalar] = ["A", "C", "E", "F", "H", "J", "K", "M", "N", "P", "R", "T", "U", "V", "W", "X", "Y"]

    /// Random bytes `generate` needs to be sure of a code when no codes are avoided; more when
    /// many are (each candidate takes 5 bytes, a few bytes more are rejected to stay unbiased).
    public static let recommendedRandomByteCount = 32

    /// A letter (A to Z, either case) and four ASCII digits, else nil.
    public init?(_ text: some StringProtocol) {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count == 5, let first = scalars.first, first.isASCII, first.properties.isAlphabetic,
              scalars.dropFirst().allSatisfy({ ("0"..."9").contains($0) })
        else { return nil }
        self.text = String(String.UnicodeScalarView(scalars)).uppercased()
    }

    /// A new code from the caller's random bytes (pure: the node passes bytes from its random
    /// source), uniformly over the `letters` codes and none of `avoiding` (the codes of calls
    /// still open). Bytes are used without modulo bias: a byte is taken as a letter only below
    /// 255 (15 × 17) and as a digit only below 250, else skipped.
    public static func generate(randomBytes: [UInt8], avoiding: Set<ShortCode> = []) throws(ShortCodeError) -> ShortCode {
        var bytes = randomBytes.makeIterator()
        func pick(_ count: Int) -> Int? {
            let limit = 256 / count * count
            while let byte = bytes.next() {
                if Int(byte) < limit { return Int(byte) % count }
            }
            return nil
        }
        let digits: [Unicode.Scalar] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]
        while let letter = pick(letters.count) {
            var scalars = String.UnicodeScalarView()
            scalars.append(letters[letter])
            for _ in 0..<4 {
                guard let digit = pick(digits.count) else { throw .notEnoughRandomBytes(given: randomBytes.count) }
                scalars.append(digits[digit])
            }
            if let code = ShortCode(String(scalars)), !avoiding.contains(code) { return code }
        }
        throw .notEnoughRandomBytes(given: randomBytes.count)
    }

    public var description: String { text }
}

public enum ShortCodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The bytes ran out before a code not avoided came up.
    case notEnoughRandomBytes(given: Int)

    public var description: String {
        switch self {
        case let .notEnoughRandomBytes(given):
            return "no short code from \(given) random bytes: pass \(ShortCode.recommendedRandomByteCount) or more (more when many codes are in use)"
        }
    }
}
