/// What an SMS to the box says, read strictly: a short, fixed list of whole replies, nothing
/// guessed from longer text. A reply the parser does not know is `unrecognised`, and the node
/// shows it to people instead of acting on it.
///
/// Replies (any case; see `parse` for what is ignored around and between words):
///
/// | reply | means |
/// | --- | --- |
/// | `TAKE`, `TAKEN`, `ON MY WAY` | `.take(code: nil)`: a staff member takes the call they were sent |
/// | `T4821` (a letter and 4 digits) | `.take(code: "T4821")`: takes the call with that code |
/// | `TAKE T4821`, `TAKEN T4821`, `ON MY WAY T4821` | `.take(code: "T4821")` |
/// | `OK`, `OKAY`, `YES`, `I'M OK`, `IM OK`, `I AM OK` | `.ok`: a resident answers "are you OK?" |
///
/// YES is `.ok` because the question it answers is "are you OK?"; staff take a call with TAKE
/// or its code. Whether a reply counts is the node's decision, by who sent it and what the box
/// asked them: an OK only answers a pending "are you OK?" to that number, a TAKE only an open
/// call sent to that number.
public enum SMSReply: Hashable, Sendable {
    case take(code: String?)
    case ok
    case unrecognised(String)

    /// The replies that take a call, as word lists after normalising (see `parse`).
    public static let takeReplies: [[String]] = [["TAKE"], ["TAKEN"], ["ON", "MY", "WAY"]]
    /// The replies that answer "are you OK?".
    public static let okReplies: [[String]] = [["OK"], ["OKAY"], ["YES"], ["I'M", "OK"], ["IM", "OK"], ["I", "AM", "OK"]]

    /// Texts longer than this are never a reply and are not looked at further.
    public static let maximumReplyLength = 64

    /// Reads a reply. The text is split into words at any white space (spaces, newlines,
    /// no-break spaces); punctuation at either end of a word is dropped ("Take.", "¡OK!",
    /// "\"TAKE\"", "OK ." all count), inside a word it stays ("I'M"); typographic apostrophes
    /// (’ ‘ ʼ) count as '; ASCII letters are compared without case. Then the words must be one
    /// of the replies exactly: "OK thanks", "OK 👍", "not OK", "TAKE?" with any other word are
    /// `unrecognised`.
    public static func parse(_ text: String) -> SMSReply {
        guard text.utf8.count <= maximumReplyLength * 4, text.unicodeScalars.count <= maximumReplyLength else {
            return .unrecognised(text)
        }
        let words = words(of: text)
        if okReplies.contains(words) { return .ok }
        if takeReplies.contains(words) { return .take(code: nil) }
        if let last = words.last, let code = ShortCode(last) {
            let before = Array(words.dropLast())
            if before.isEmpty || takeReplies.contains(before) { return .take(code: code.text) }
        }
        return .unrecognised(text)
    }

    /// The normalised words of `text` (see `parse`).
    static func words(of text: String) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        func finish() {
            let word = trimmingPunctuation(current)
            if !word.isEmpty { words.append(String(word)) }
            current = String.UnicodeScalarView()
        }
        for scalar in text.unicodeScalars {
            if scalar.properties.isWhitespace {
                finish()
                continue
            }
            switch scalar {
            case "\u{2019}", "\u{2018}", "\u{02BC}": current.append("'")
            case "a"..."z": current.append(Unicode.Scalar(scalar.value - 0x20) ?? scalar)
            default: current.append(scalar)
            }
        }
        finish()
        return words
    }

    private static func trimmingPunctuation(_ word: String.UnicodeScalarView) -> Substring.UnicodeScalarView {
        var slice = word[...]
        while let first = slice.first, isPunctuation(first) { slice = slice.dropFirst() }
        while let last = slice.last, isPunctuation(last) { slice = slice.dropLast() }
        return slice
    }

    private static func isPunctuation(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
             .initialPunctuation, .finalPunctuation, .otherPunctuation:
            return true
        default:
            return false
        }
    }
}
