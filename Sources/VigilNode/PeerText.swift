/// Text a peer wrote (a phone, another box), as a page, a terminal or an alert may show it:
/// control characters (an escape sequence could rewrite a screen) become U+FFFD, and a text over
/// `limit` Unicode scalars is cut with "…". The one place this is decided for every view.
public enum PeerText {
    public static func printable(_ text: String, limit: Int = .max) -> String {
        var out = String.UnicodeScalarView()
        for (index, scalar) in text.unicodeScalars.enumerated() {
            if index == limit { out.append("…"); break }
            let controlled = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            out.append(controlled ? "\u{FFFD}" : scalar)
        }
        return String(out)
    }
}
