/// A phone number in E.164 form: "+", then 8 to 15 digits, the first not 0 (the country code).
/// What the call tree stores and what inbound senders are compared with.
///
/// Accepted input is a number in international form as people write it: a leading "+" or
/// "00", then digits, with spaces and dashes anywhere after the prefix ("+34 600-111 222",
/// "0034 600 111 222" → "+34600111222"); spaces around it are ignored. Everything else is
/// refused rather than guessed: letters, parentheses, dots, other spaces (a no-break space
/// pasted from a contact card), digits from other scripts, a number without its country code
/// ("600 111 222": which country?), fewer than 8 or more than 15 digits.
public struct PhoneNumber: Hashable, Sendable, CustomStringConvertible {
    /// "+34600111222".
    public let e164: String

    public static let minimumDigits = 8
    public static let maximumDigits = 15

    public init(_ text: some StringProtocol) throws(PhoneNumberError) {
        let scalars = Array(text.unicodeScalars)
        var start = 0
        var end = scalars.count
        while start < end, scalars[start] == " " { start += 1 }
        while end > start, scalars[end - 1] == " " { end -= 1 }
        guard start < end else { throw .empty }

        var index: Int
        if scalars[start] == "+" {
            index = start + 1
        } else if end - start >= 2, scalars[start] == "0", scalars[start + 1] == "0" {
            index = start + 2
        } else {
            throw .missingInternationalPrefix
        }

        var digits = String.UnicodeScalarView()
        var count = 0
        while index < end {
            let scalar = scalars[index]
            switch scalar {
            case "0"..."9":
                if count == 0, scalar == "0" { throw .countryCodeStartsWithZero }
                count += 1
                if count <= Self.maximumDigits { digits.append(scalar) }
            case " ", "-":
                break
            default:
                throw .invalidCharacter(scalar, position: index - start + 1)
            }
            index += 1
        }
        guard count >= Self.minimumDigits else { throw .tooFewDigits(count) }
        guard count <= Self.maximumDigits else { throw .tooManyDigits(count) }
        self.e164 = "+" + String(digits)
    }

    public var description: String { e164 }
}
