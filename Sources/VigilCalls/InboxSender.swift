/// Who an inbound SMS says it is from. A number only when the sender normalises to E.164
/// exactly as the numbers of the call tree do (`PhoneNumber`), so matching is by equal
/// `PhoneNumber`s; anything else (an alphanumeric sender such as "Vodafone", a number in
/// national form such as "600111222", a service code) is `other` and never matches a person.
///
/// A sender is what the network says, not proof: SMS senders can be forged. Replies only ever
/// answer a question the box asked that number, and the short code in a call for help ties a
/// TAKE to that call.
public enum InboxSender: Hashable, Sendable, CustomStringConvertible {
    case number(PhoneNumber)
    case other(String)

    /// The sender as gammu spells it (an inbox file name, or a "detail" file's Number).
    public init(_ raw: String) {
        if let number = try? PhoneNumber(raw) {
            self = .number(number)
        } else {
            self = .other(raw)
        }
    }

    public var phoneNumber: PhoneNumber? {
        if case let .number(number) = self { return number }
        return nil
    }

    public var description: String {
        switch self {
        case let .number(number): return number.e164
        case let .other(text): return InboxText.excerpt(text)
        }
    }
}
