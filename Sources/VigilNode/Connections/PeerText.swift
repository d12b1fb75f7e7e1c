/// Text a peer wrote (a phone, another box), as a page, a terminal or an alert may show it:
/// control characters (an escape sequence could rewrite a screen), bidirectional overrides and
/// isolates (they reorder what is shown after them, "Trojan Source") and the line and paragraph
/// separators become U+FFFD, and a text over `limit` Unicode scalars is cut with "…". The one
/// place this is decided for every view.
public enum PeerText {
    public static func printable(_ text: String, limit: Int = .max) -> String {
        var out = String.UnicodeScalarView()
        for (index, scalar) in text.unicodeScalars.enumerated() {
            if index == limit { out.append("…"); break }
            out.append(isHidden(scalar.value) ? "\u{FFFD}" : scalar)
        }
        return String(out)
    }

    static func isHidden(_ v: UInt32) -> Bool {
        v < 0x20 || (0x7F...0x9F).contains(v)
            || v == 0x200E || v == 0x200F || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v)
            || v == 0x2028 || v == 0x2029
    }
}
