/// Why a text is not a phone number in international form. The descriptions say what to type
/// instead: they are shown to whoever enters the call tree.
public enum PhoneNumberError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Nothing but spaces.
    case empty
    /// Does not start with "+" or "00".
    case missingInternationalPrefix
    /// The first digit after the prefix is 0: no country code starts with 0 (a national
    /// trunk prefix, as in "+0 600…" or "0034 0600…", is not part of E.164).
    case countryCodeStartsWithZero
    /// Not a digit, space or dash; `position` counts characters from 1, after leading spaces.
    case invalidCharacter(Unicode.Scalar, position: Int)
    /// Fewer than `PhoneNumber.minimumDigits` digits after the prefix.
    case tooFewDigits(Int)
    /// More than `PhoneNumber.maximumDigits` digits after the prefix.
    case tooManyDigits(Int)

    public var description: String {
        switch self {
        case .empty:
            return "no phone number given: write it in international form, e.g. +34 600 111 222"
        case .missingInternationalPrefix:
            return "phone number without a country code: start it with + or 00 and the country code, e.g. +34 600 111 222"
        case .countryCodeStartsWithZero:
            return "phone number with a 0 after the + or 00: the country code comes first and never starts with 0 (drop the national 0)"
        case let .invalidCharacter(scalar, position):
            return "phone number with \(Self.name(scalar)) at character \(position): use only digits, spaces and dashes after the + or 00"
        case let .tooFewDigits(count):
            return "phone number with \(count) digits: an international number has \(PhoneNumber.minimumDigits) to \(PhoneNumber.maximumDigits) digits after the + (country code included)"
        case let .tooManyDigits(count):
            return "phone number with \(count) digits: an international number has at most \(PhoneNumber.maximumDigits) digits after the + (country code included)"
        }
    }

    /// A visible name for the character: itself when printable ASCII, else its code point.
    private static func name(_ scalar: Unicode.Scalar) -> String {
        if (0x21...0x7E).contains(scalar.value) { return "\"\(Character(scalar))\"" }
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
