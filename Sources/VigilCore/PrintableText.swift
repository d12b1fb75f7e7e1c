/// Text from outside the box (another box's alert, a taker's name) made safe to put in a message,
/// a page or a terminal: control characters (C0, DEL, C1), format characters that reorder or hide
/// text (bidi overrides, zero-width marks; the emoji joiner stays) and line or paragraph separators
/// become nothing or a space, and the length is bounded.
public enum PrintableText {
    public static func clean(_ text: String, limit: Int) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit * 4 else { break }
            switch scalar.value {
            case 0x0A, 0x0D, 0x09, 0x2028, 0x2029: out.append(" ")
            case 0x00...0x1F, 0x7F...0x9F: continue
            case 0x200B...0x200C, 0x200E...0x200F, 0x202A...0x202E, 0x2060...0x2064, 0x2066...0x206F, 0xFEFF: continue
            default: out.append(scalar)
            }
            count += 1
        }
        return String(String(out).prefix(limit))
    }
}
