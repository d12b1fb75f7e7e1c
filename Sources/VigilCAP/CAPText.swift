/// A CAP document's text as one line a terminal, a journal or a page line can show: whatever a
/// feed writes (control characters, terminal escapes, bidi overrides that reorder what a reader
/// sees) is hostile until shown this way. Line breaks and tabs become spaces; other control and
/// direction-changing characters are dropped; at most `limit` characters, "…" after a cut.
public enum CAPText {
    public static func oneLine(_ text: String, limit: Int = 200) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        var lastWasSpace = false
        for scalar in text.unicodeScalars {
            let v = scalar.value
            let space = v == 0x20 || v == 0x09 || v == 0x0A || v == 0x0D || v == 0x2028 || v == 0x2029
            if space {
                if lastWasSpace || out.isEmpty { continue }
                lastWasSpace = true
                out.append(" ")
            } else if v < 0x20 || (0x7F...0x9F).contains(v) || v == 0x200E || v == 0x200F || (0x202A...0x202E).contains(v)
                        || (0x2066...0x2069).contains(v) {
                continue
            } else {
                lastWasSpace = false
                out.append(scalar)
            }
            count += 1
            if count >= limit {
                out.append("…")
                break
            }
        }
        var result = String(out)
        while result.hasSuffix(" ") { result.removeLast() }
        return result
    }
}
