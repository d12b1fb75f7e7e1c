/// Phone numbers masked in text bound for the journal, the log's error fields and the hub: a
/// notifier's stderr, a delivery's error. The journal is read by whoever administers the box
/// (and often copied into bug reports); a resident's number is not theirs to read.
///
/// A number is 7 or more digits in a row, or a "+" followed by digits with single spaces or
/// dashes between them ("+34 600-111 222"); it is replaced by "+…" and its last two digits,
/// enough for staff to tell two numbers apart. Shorter runs (exit codes, ports, counts) and
/// dates ("2026-11-29": no "+", so the dashes end each run) are left as they are; a bare
/// 10-digit Unix time is masked too, which costs nothing a person needs.
public enum PhoneNumberRedaction {
    public static let minimumDigits = 7

    public static func redact(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            let startsNumber = isDigit(scalars[i]) || (scalars[i] == "+" && i + 1 < scalars.count && isDigit(scalars[i + 1]))
            guard startsNumber, i == 0 || !isDigit(scalars[i - 1]) else {
                out.append(scalars[i])
                i += 1
                continue
            }
            // The run: digits; after a "+", with single spaces or dashes between them.
            let international = scalars[i] == "+"
            var j = international ? i + 1 : i
            var digits: [Unicode.Scalar] = []
            var end = j
            while j < scalars.count {
                if isDigit(scalars[j]) {
                    digits.append(scalars[j])
                    j += 1
                    end = j
                } else if international, scalars[j] == " " || scalars[j] == "-", j + 1 < scalars.count, isDigit(scalars[j + 1]) {
                    j += 1
                } else {
                    break
                }
            }
            if digits.count >= minimumDigits {
                out.append(contentsOf: "+…".unicodeScalars)
                out.append(contentsOf: digits.suffix(2))
            } else {
                out.append(contentsOf: scalars[i..<end])
            }
            i = end
        }
        return String(out)
    }

    private static func isDigit(_ s: Unicode.Scalar) -> Bool { s.value >= 0x30 && s.value <= 0x39 }
}
