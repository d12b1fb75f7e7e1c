import VigilCalls

/// An address a message can go to, checked when it is entered (enrolment, configuration) so a
/// typo shows then, not at 3 a.m. when nobody is told.
///
/// - A phone number, normalised to E.164 by `PhoneNumber` (VigilCalls, the same rule that reads
///   an SMS's sender): `+`, a country code and the subscriber number, 8 to 15 digits in all.
///   Spaces and dashes are fine; a leading `00` is the international prefix and becomes `+`. A
///   number without `+` or `00` is refused: a box cannot know which country a national number
///   belongs to.
/// - An e-mail address (`name@host.domain`), for a notifier that sends mail.
/// - A webhook, an `https://` URL (or `http://`, for a relay on the box's own network).
/// - `arc`, the alarm receiving centre (`arc:`), where the caller allows it (the call tree).
///
/// Anything else is refused with a sentence that says what was expected.
public enum ContactAddress: Equatable, Sendable {
    case phone(String)
    case email(String)
    case webhook(String)
    case arc

    /// The normalised text: what is stored, compared and handed to notifiers.
    public var text: String {
        switch self {
        case .phone(let s), .email(let s), .webhook(let s): s
        case .arc: "arc"
        }
    }

    public var isPhone: Bool { if case .phone = self { true } else { false } }

    /// The longest address accepted: a URL with a token in it fits, a pasted paragraph does not.
    public static let maximumLength = 256

    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        public var address: String
        public var reason: String
        public var description: String { "\"\(address)\" is not an address: \(reason)" }
    }

    /// Parses and normalises `text`; `allowARC` admits `arc` (the call tree only).
    public static func parse(_ text: String, allowARC: Bool = false) throws(Invalid) -> ContactAddress {
        let trimmed = text.trimmingSpaces
        func invalid(_ reason: String) -> Invalid { Invalid(address: String(text.prefix(64)), reason: reason) }
        guard !trimmed.isEmpty else { throw invalid("it is empty") }
        guard trimmed.utf8.count <= maximumLength else { throw invalid("it is longer than \(maximumLength) bytes") }
        guard !trimmed.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw invalid("it has control characters")
        }
        if trimmed.lowercased() == "arc" {
            guard allowARC else { throw invalid("arc (the alarm receiving centre) belongs in calls.tree only") }
            return .arc
        }
        let lower = trimmed.lowercased()
        if lower.hasPrefix("https://") || lower.hasPrefix("http://") {
            let rest = trimmed.drop(while: { $0 != ":" }).dropFirst(3)
            guard let host = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first, !host.isEmpty,
                  !trimmed.contains(" ") else {
                throw invalid("a webhook is a URL such as https://host/path, without spaces")
            }
            return .webhook(trimmed)
        }
        if let first = trimmed.first, first == "+" || first.isASCII && first.isNumber {
            do {
                return .phone(try PhoneNumber(trimmed).e164)
            } catch {
                throw Invalid(address: String(text.prefix(64)), reason: error.description)
            }
        }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        // Not starting with "-": a notifier may pass the address on a command line.
        if parts.count == 2, !parts[0].isEmpty, !parts[0].hasPrefix("-"), parts[1].contains("."), !parts[1].hasPrefix("."),
           !parts[1].hasSuffix("."), !trimmed.contains(" ") {
            return .email(trimmed)
        }
        throw invalid("expected a phone number in international form (+34 600 111 222), an e-mail address or an https:// webhook")
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
