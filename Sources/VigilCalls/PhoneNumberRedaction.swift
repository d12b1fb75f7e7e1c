/// Phone numbers masked in text bound for the journal, the log's error fields and the hub: a
/// notifier's stderr, a delivery's error, an outbox entry's id (which names its recipient). The
/// journal is read by whoever administers the box (and often copied into bug reports); a
/// resident's number is not theirs to read.
///
/// A number is a run that starts a word (not after a letter or digit), of digits with single
/// spaces, dashes or dots between groups, an optional leading "+" and an optional area code in
/// parentheses ("+34 600-111 222", "0034600111222", "600 111 222", "(555) 123-4567"), holding 7
/// or more digits and not followed by a letter. It is replaced by "+…" and its last two digits,
/// enough for staff to tell two numbers apart. Left as they are: shorter runs (exit codes,
/// ports, counts), ISO dates ("2026-11-29"), times ("03:25:12"), digits inside hex ids. A bare
/// Unix time or a long sequence number is masked too, which costs nothing a person needs.
public enum PhoneNumberRedaction {
    public static let minimumDigits = 7

    public static func redact(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            if i == 0 || !isWordCharacter(scalars[i - 1]), let run = number(in: scalars, at: i) {
                out.append(contentsOf: "+…".unicodeScalars)
                out.append(contentsOf: run.digits.suffix(2))
                i = run.end
            } else {
                out.append(scalars[i])
                i += 1
            }
        }
        return String(out)
    }

    /// The number starting at `start`, if one does: its digits and where it ends.
    private static func number(in scalars: [Unicode.Scalar], at start: Int) -> (digits: [Unicode.Scalar], end: Int)? {
        var j = start
        if scalars[j] == "+" { j += 1 }
        var digits: [Unicode.Scalar] = []
        var groups: [Int] = []
        var separators: [Unicode.Scalar] = []
        var end = j
        var group = 0
        while j < scalars.count {
            let c = scalars[j]
            if isDigit(c) {
                digits.append(c)
                group += 1
                j += 1
                end = j
            } else if c == "(", group == 0, let close = closingParenthesis(scalars, after: j) {
                // An area code: "(555)", then a space or not.
                digits.append(contentsOf: scalars[(j + 1)..<close])
                groups.append(close - j - 1)
                j = close + 1
                if j < scalars.count, scalars[j] == " " { j += 1 }
                end = close + 1
            } else if group > 0, c == " " || c == "-" || c == ".", j + 1 < scalars.count, isDigit(scalars[j + 1]) || scalars[j + 1] == "(" {
                groups.append(group)
                separators.append(c)
                group = 0
                j += 1
            } else {
                break
            }
        }
        if group > 0 { groups.append(group) }
        guard digits.count >= minimumDigits else { return nil }
        if end < scalars.count, isLetter(scalars[end]) { return nil }
        // An ISO date (2026-11-29) is not a number to hide.
        if groups == [4, 2, 2] && separators == ["-", "-"] { return nil }
        return (digits, end)
    }

    private static func closingParenthesis(_ scalars: [Unicode.Scalar], after open: Int) -> Int? {
        var k = open + 1
        while k < scalars.count, isDigit(scalars[k]), k - open <= 5 { k += 1 }
        guard k < scalars.count, scalars[k] == ")", k - open >= 2 else { return nil }
        return k
    }

    private static func isDigit(_ s: Unicode.Scalar) -> Bool { s.value >= 0x30 && s.value <= 0x39 }
    private static func isLetter(_ s: Unicode.Scalar) -> Bool { s.properties.isAlphabetic }
    private static func isWordCharacter(_ s: Unicode.Scalar) -> Bool { isDigit(s) || isLetter(s) }
}
