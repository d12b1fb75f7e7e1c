import Foundation

/// Sets a few settings in a YAML configuration file's text and keeps everything else as it was:
/// comments, blank lines, the order of keys, settings it was not asked about (what `vigil setup`
/// writes; docs/install.md "First start").
///
/// It edits lines, not a parsed tree, because a YAML library that writes a tree back drops every
/// comment, and the comments are the file's documentation for the next volunteer. It handles the
/// block style the shipped files use (`key: value`, `section:` with indented `key: value` lines);
/// anything else on the way to a setting it must change (a flow mapping `site: {name: x}`, a key
/// written twice, tabs) is refused with the setting's name, never guessed at. The caller parses
/// the result again and compares it with what it set (`NodeConfiguration.load(text:file:)`).
public struct ConfigFileEdit: Sendable {
    public private(set) var lines: [String]
    /// A carriage return anywhere (Windows line endings): Swift reads "\r\n" as one character,
    /// so such a file is refused rather than edited into mixed endings.
    private let hasCarriageReturns: Bool

    public struct Refused: Error, Equatable, Sendable, CustomStringConvertible {
        public var setting: String
        public var reason: String
        public var description: String { "cannot set \(setting) in this file: \(reason); edit it by hand" }
    }

    public init(text: String) {
        hasCarriageReturns = text.utf8.contains(13)
        var lines = text.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        self.lines = lines
    }

    /// The text, ending with a newline.
    public var text: String { lines.joined(separator: "\n") + "\n" }

    /// A YAML scalar for `value`: double-quoted with JSON's escapes, which YAML's double-quoted
    /// style reads the same way.
    public static func scalar(_ value: String) -> String {
        var out = "\""
        for u in value.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                // C0 and C1 controls, and the line and paragraph separators YAML reads as line
                // breaks (NEL, LS, PS), escaped: written raw they would be folded or refused.
                if u.value < 0x20 || (0x7F...0x9F).contains(u.value) || u.value == 0x2028 || u.value == 0x2029 {
                    out += String(format: "\\u%04X", u.value)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    /// A YAML flow sequence of scalars: `["+34600111222", "+34600111333"]`, or `[]`.
    public static func list(_ values: [String]) -> String {
        "[" + values.map(scalar).joined(separator: ", ") + "]"
    }

    /// Sets the top-level `key` to `value` (YAML text, from `scalar` or `list`).
    public mutating func set(_ key: String, to value: String) throws(Refused) {
        try set(path: key, section: nil, key: key, value: value)
    }

    /// Sets `key` inside the top-level mapping `section` to `value` (YAML text), adding the key,
    /// or the section, where missing.
    public mutating func set(_ section: String, _ key: String, to value: String) throws(Refused) {
        try set(path: section + "." + key, section: section, key: key, value: value)
    }

    /// Removes `key` from the top-level mapping `section` (its line, and a value on the lines
    /// below it), leaving the default; nothing when it is not there.
    public mutating func remove(_ section: String, _ key: String) throws(Refused) {
        let path = section + "." + key
        try checkReadable(path)
        let headers = lines.indices.filter { Self.keyOf(lines[$0], indent: 0) == section }
        guard headers.count <= 1 else { throw Refused(setting: path, reason: "\(section) is written \(headers.count) times") }
        guard let header = headers.first else { return }
        let range = (header + 1)..<Self.blockEnd(lines, after: header, deeperThan: 0)
        guard let indent = range.first(where: { Self.isContent(lines[$0]) }).map({ Self.indentation(lines[$0]) }) else { return }
        let matches = range.filter { Self.keyOf(lines[$0], indent: indent) == key }
        guard matches.count <= 1 else { throw Refused(setting: path, reason: "\(path) is written \(matches.count) times") }
        guard let at = matches.first else { return }
        let end = Self.valueEnd(lines, after: at, indent: indent)
        let doomed = [at] + ((at + 1)..<end).filter { Self.isContent(lines[$0]) }
        for i in doomed.reversed() { lines.remove(at: i) }
    }

    /// What this editor does not read the way YAML does, refused before any edit.
    private func checkReadable(_ path: String) throws(Refused) {
        if lines.contains(where: { $0.hasPrefix("\t") || $0.drop(while: { $0 == " " }).hasPrefix("\t") }) {
            throw Refused(setting: path, reason: "it is indented with tabs")
        }
        if hasCarriageReturns {
            throw Refused(setting: path, reason: "it has Windows line endings (CRLF); convert it with dos2unix")
        }
        if lines.first?.hasPrefix("\u{FEFF}") == true {
            throw Refused(setting: path, reason: "it starts with a byte order mark")
        }
    }

    private mutating func set(path: String, section: String?, key: String, value: String) throws(Refused) {
        try checkReadable(path)
        let range: Range<Int>
        let indent: Int
        if let section {
            let headers = lines.indices.filter { Self.keyOf(lines[$0], indent: 0) == section }
            guard headers.count <= 1 else { throw Refused(setting: path, reason: "\(section) is written \(headers.count) times") }
            guard let header = headers.first else {
                // No such section: it goes at the end, after a blank line.
                if let last = lines.last, !last.trimmingCharacters(in: .whitespaces).isEmpty { lines.append("") }
                lines.append("\(section):")
                lines.append("  \(key): \(value)")
                return
            }
            guard Self.valueText(lines[header]).isEmpty else {
                throw Refused(setting: path, reason: "\(section) is not written as a block of indented settings")
            }
            let end = Self.blockEnd(lines, after: header, deeperThan: 0)
            range = (header + 1)..<end
            let childIndents = range.compactMap { Self.isContent(lines[$0]) ? Self.indentation(lines[$0]) : nil }
            indent = childIndents.first ?? 2
            if childIndents.isEmpty {
                lines.insert(String(repeating: " ", count: indent) + "\(key): \(value)", at: header + 1)
                return
            }
        } else {
            range = 0..<lines.count
            indent = 0
        }
        let matches = range.filter { Self.keyOf(lines[$0], indent: indent) == key }
        guard matches.count <= 1 else { throw Refused(setting: path, reason: "\(path) is written \(matches.count) times") }
        guard let at = matches.first else {
            // Missing: the key goes after the section's last setting (or at the end of the file).
            let last = range.last { Self.isContent(lines[$0]) } ?? (range.lowerBound - 1)
            lines.insert(String(repeating: " ", count: indent) + "\(key): \(value)", at: last + 1)
            return
        }
        // A value on the following lines (a block sequence or mapping) goes, replaced by the
        // value on the key's line; comment lines among them stay.
        let continuation = Self.valueEnd(lines, after: at, indent: indent)
        if continuation > at + 1 {
            let nested = ((at + 1)..<continuation).filter { Self.isContent(lines[$0]) }
            // A block scalar (`key: |` and its text lines) is a value too; a mapping is not.
            let blockScalar = Self.valueText(lines[at]).hasPrefix("|") || Self.valueText(lines[at]).hasPrefix(">")
            if !blockScalar && nested.contains(where: { !lines[$0].drop(while: { $0 == " " }).hasPrefix("-") }) {
                throw Refused(setting: path, reason: "\(path) holds settings of its own")
            }
            for i in nested.reversed() { lines.remove(at: i) }
        }
        let line = lines[at]
        let comment = Self.commentPart(line)
        let head = String(repeating: " ", count: indent) + "\(key): \(value)"
        if let comment {
            // Keep the comment where it was when the new value fits before it.
            let column = line.count - comment.count
            let padding = max(1, column - head.count)
            lines[at] = head + String(repeating: " ", count: padding) + comment
        } else {
            lines[at] = head
        }
    }

    // MARK: Reading lines

    static func indentation(_ line: String) -> Int { line.prefix { $0 == " " }.count }

    /// A line that holds YAML content (not blank, not only a comment).
    static func isContent(_ line: String) -> Bool {
        let t = line.drop { $0 == " " }
        return !t.isEmpty && !t.hasPrefix("#")
    }

    /// The key of a `key: value` or `key:` line at exactly `indent` spaces; nil otherwise.
    static func keyOf(_ line: String, indent: Int) -> String? {
        guard indentation(line) == indent, isContent(line) else { return nil }
        let t = line.dropFirst(indent)
        guard let colon = t.firstIndex(of: ":") else { return nil }
        let key = t[..<colon]
        guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else { return nil }
        let after = t[t.index(after: colon)...]
        guard after.isEmpty || after.first == " " else { return nil }
        return String(key)
    }

    /// The first line after `start` that is content at `deeperThan` spaces or fewer (the end of
    /// the block that `start` opens); blank and comment lines belong to the block only when more
    /// content of it follows.
    static func blockEnd(_ lines: [String], after start: Int, deeperThan indent: Int) -> Int {
        var end = start + 1
        var i = start + 1
        while i < lines.count {
            if isContent(lines[i]) {
                if indentation(lines[i]) <= indent { break }
                end = i + 1
            }
            i += 1
        }
        return end
    }

    /// The end of the value that the key at `start` (at `indent` spaces) has on the lines below
    /// it: lines more indented, and `- item` lines at the key's own indent (YAML's indentless
    /// sequence, `staff:` then `- "+34..."` under it).
    static func valueEnd(_ lines: [String], after start: Int, indent: Int) -> Int {
        var end = start + 1
        var i = start + 1
        while i < lines.count {
            if isContent(lines[i]) {
                let deeper = indentation(lines[i]) > indent
                let item = indentation(lines[i]) == indent && lines[i].dropFirst(indent).hasPrefix("-")
                if !deeper && !item { break }
                end = i + 1
            }
            i += 1
        }
        return end
    }

    /// What follows `key:` on the line, without its comment, trimmed.
    static func valueText(_ line: String) -> String {
        guard let colon = line.firstIndex(of: ":") else { return "" }
        var rest = String(line[line.index(after: colon)...])
        if let comment = commentPart(line) { rest = String(rest.dropLast(comment.count)) }
        return rest.trimmingCharacters(in: .whitespaces)
    }

    /// The line's trailing comment (`# ...`, from the `#`), outside quotes and after white
    /// space, as YAML reads one; nil when it has none.
    static func commentPart(_ line: String) -> String? {
        var quote: Character?
        var escaped = false
        var previous: Character = " "
        for i in line.indices {
            let c = line[i]
            if let q = quote {
                // In double quotes a backslash escapes the next character; single quotes have none.
                if escaped { escaped = false } else if q == "\"" && c == "\\" { escaped = true } else if c == q { quote = nil }
            } else if (c == "\"" || c == "'") && (previous == " " || previous == "[" || previous == ",") {
                // A quote opens a quoted scalar only where a scalar starts: "St John's" is plain.
                quote = c
            } else if c == "#", previous == " " {
                return String(line[i...])
            }
            previous = c
        }
        return nil
    }
}
