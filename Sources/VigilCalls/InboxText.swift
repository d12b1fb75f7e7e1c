/// What every text read from an inbox file (a message, a sender) is cleaned to before anything
/// else sees it. SMS text is typed by anyone who has the box's number: it is shown on the web
/// page, logged and compared with keywords, so nothing in it may hide, reorder or fake lines.
enum InboxText {
    /// The scalars with line breaks made "\n" (CR LF, a lone CR as some phones send it, U+2028
    /// and U+2029) and dropped: every other control character (C0, DEL, C1), and the invisible
    /// format characters (Unicode category Cf: bidirectional overrides and isolates, which can
    /// make a text display in another order than it reads, zero-width spaces, soft hyphens,
    /// U+FEFF) except the zero-width joiner and non-joiner, which emoji sequences and some scripts
    /// need.
    static func sanitised(_ scalars: some Sequence<Unicode.Scalar>) -> String {
        var out = String.UnicodeScalarView()
        var afterCarriageReturn = false
        for scalar in scalars {
            defer { afterCarriageReturn = scalar == "\r" }
            switch scalar {
            case "\n":
                if !afterCarriageReturn { out.append("\n") }
            case "\r", "\u{2028}", "\u{2029}":
                out.append("\n")
            case "\u{200C}", "\u{200D}":
                out.append(scalar)
            default:
                switch scalar.properties.generalCategory {
                case .control, .format, .surrogate: continue
                default: out.append(scalar)
                }
            }
        }
        return String(out)
    }

    /// UTF-16 code units as text, ending at the first U+0000: gammu's strings end there, and
    /// gammu-smsd 1.42's "unicode" inbox files carry bytes past it (see `InboxFormat.unicode`).
    /// A lone surrogate becomes U+FFFD.
    static func decode(utf16 units: some Collection<UInt16>) -> String {
        let text = units.prefix { $0 != 0 }
        return sanitised(String(decoding: text, as: UTF16.self).unicodeScalars)
    }

    /// Big-endian UTF-16 (gammu's own order) from bytes; a trailing odd byte is not read.
    static func unitsBigEndian(_ bytes: some Collection<UInt8>) -> [UInt16] {
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var high: UInt8?
        for byte in bytes {
            if let h = high {
                units.append(UInt16(h) << 8 | UInt16(byte))
                high = nil
            } else {
                high = byte
            }
        }
        return units
    }

    /// At most `limit` characters of `text`, for error messages: hostile text is never echoed
    /// whole into a log line.
    static func excerpt(_ text: some StringProtocol, limit: Int = 32) -> String {
        let clean = sanitised(text.unicodeScalars)
        return clean.count > limit ? String(clean.prefix(limit)) + "…" : clean
    }
}
