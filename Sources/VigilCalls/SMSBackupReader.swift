import VigilHex

/// Reads gammu's smsbackup text format, as gammu-smsd writes a received message with
/// `inboxformat = detail`:
///
///     ; This file format was designed for Gammu and is compatible with Gammu+
///     ; Saved 20250114T093006 (Tue Jan 14 09:30:06 2025)
///
///     [SMSBackup000]
///     ; TAKE
///     SMSC = ""
///     PDU = Deliver
///     DateTime = 20250114T093005Z
///     Number = "+34600111222"
///     NumberUnicode = 002B0033…
///     UDH = 050003460301
///     Text00 = 00540041004B0045
///     Coding = Default_No_Compression
///     …
///
/// Lines end in "\n" or "\r\n" (gammu mixes them). Only the keys needed are read (by name,
/// any case); the others, comments (`;`, `#`) and blank lines are skipped, and the bytes of
/// skipped lines are never decoded (comments carry the text in the daemon's locale, maybe not
/// UTF-8). What gammu never writes is refused: a line that is neither a section, a comment nor
/// `key = value`, a key twice in a section, text keys with a gap, hex that is not hex.
enum SMSBackupReader {
    /// One `[SMSBackupNNN]` section: one part.
    private struct Section {
        var index: Int
        var values: [String: [UInt8]] = [:]
    }

    /// A decoded part.
    private struct Part {
        var sender: String
        /// The text's UTF-16 code units up to the first U+0000: decoded once the parts are
        /// joined, so a surrogate pair or a CR LF split between parts stays whole.
        var units: [UInt16]
        var kind: InboxMessage.Kind
        var concatenation: Concatenation?
    }

    /// Which part of which linked message (from the UDH's concatenation element).
    struct Concatenation: Equatable {
        var reference: Int
        var total: Int
        var sequence: Int
    }

    static func message(_ bytes: [UInt8]) throws(InboxMessageError) -> InboxMessage {
        let sections = try self.sections(bytes)
        guard !sections.isEmpty else { throw .noMessage }
        var parts: [Part] = []
        for section in sections { parts.append(try part(section)) }
        return try joined(parts)
    }

    // MARK: Lines and sections

    private static func sections(_ bytes: [UInt8]) throws(InboxMessageError) -> [Section] {
        var sections: [Section] = []
        var current: Section?
        var lineNumber = 0
        for rawLine in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = trimmed(rawLine)
            guard let first = line.first else { continue }
            if first == UInt8(ascii: ";") || first == UInt8(ascii: "#") { continue }
            if first == UInt8(ascii: "[") {
                guard line.last == UInt8(ascii: "]") else { throw .malformedLine(line: lineNumber) }
                if let done = current { sections.append(done) }
                let name = String(decoding: line.dropFirst().dropLast(), as: UTF8.self).lowercased()
                // Only SMSBackup sections are messages (gammu reads no others).
                current = name.hasPrefix("smsbackup") ? Section(index: sections.count) : nil
                continue
            }
            guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else { throw .malformedLine(line: lineNumber) }
            guard var section = current else { continue }
            let key = String(decoding: trimmed(line[line.startIndex..<equals]), as: UTF8.self).lowercased()
            guard !key.isEmpty else { throw .malformedLine(line: lineNumber) }
            guard section.values[key] == nil else {
                throw .duplicateKey(InboxText.excerpt(key, limit: 24), part: section.index)
            }
            section.values[key] = Array(trimmed(line[line.index(after: equals)...]))
            current = section
        }
        if let done = current { sections.append(done) }
        return sections
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let b = slice.first, b == 0x20 || b == 0x09 || b == 0x0D { slice = slice.dropFirst() }
        while let b = slice.last, b == 0x20 || b == 0x09 || b == 0x0D { slice = slice.dropLast() }
        return slice
    }

    // MARK: One part

    private static func part(_ section: Section) throws(InboxMessageError) -> Part {
        let index = section.index
        let kind: InboxMessage.Kind
        switch section.values["pdu"].map({ String(decoding: $0, as: UTF8.self) }) {
        case "Deliver": kind = .message
        case "Status_Report": kind = .deliveryReport
        case let other: throw .notReceived(pdu: other.map { InboxText.excerpt($0, limit: 24) }, part: index)
        }

        let sender: String
        if let hex = section.values["numberunicode"] {
            guard let bytes = hexBytes(hex), bytes.count % 2 == 0 else { throw .badHex(key: "NumberUnicode", part: index) }
            sender = InboxText.decode(utf16: InboxText.unitsBigEndian(bytes))
        } else if let quoted = section.values["number"] {
            sender = InboxText.sanitised(String(decoding: unquoted(quoted), as: UTF8.self).unicodeScalars)
        } else {
            throw .missingSender(part: index)
        }
        guard !sender.isEmpty else { throw .missingSender(part: index) }

        // Gammu's default when Coding is absent is 8-bit.
        let coding = section.values["coding"].map { String(decoding: $0, as: UTF8.self).lowercased() } ?? "8bit"
        switch coding {
        case "default_no_compression", "unicode_no_compression": break
        case "8bit": throw .binaryMessage
        default: throw .unsupportedCoding(InboxText.excerpt(coding, limit: 24), part: index)
        }

        var hex: [UInt8] = []
        var textKeys = 0
        for (key, _) in section.values where key.hasPrefix("text") { textKeys += 1 }
        for number in 0..<textKeys {
            let key = "text" + (number < 10 ? "0" : "") + String(number)
            guard let line = section.values[key] else { throw .textGap(part: index) }
            hex += line
        }
        guard let textBytes = hexBytes(hex), textBytes.count % 2 == 0 else { throw .badHex(key: "Text", part: index) }
        let units = Array(InboxText.unitsBigEndian(textBytes).prefix { $0 != 0 })

        var concatenation: Concatenation?
        if let udhHex = section.values["udh"] {
            guard let udh = hexBytes(udhHex) else { throw .badHex(key: "UDH", part: index) }
            concatenation = Self.concatenation(udh)
        }
        return Part(sender: sender, units: units, kind: kind, concatenation: concatenation)
    }

    /// A quoted value without its quotes and gammu's escapes (\n, \r, \\) undone.
    private static func unquoted(_ value: [UInt8]) -> [UInt8] {
        var body = value[...]
        if body.count >= 2, body.first == UInt8(ascii: "\""), body.last == UInt8(ascii: "\"") {
            body = body.dropFirst().dropLast()
        }
        var out: [UInt8] = []
        var escaped = false
        for byte in body {
            if escaped {
                switch byte {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                default: out.append(byte)
                }
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else {
                out.append(byte)
            }
        }
        return out
    }

    /// The bytes of hex text (either case), or nil for an odd length or a non-hex byte: the one
    /// hex codec (VigilHex).
    private static func hexBytes(_ hex: [UInt8]) -> [UInt8]? {
        guard hex.allSatisfy({ $0 < 0x80 }) else { return nil }
        return Hex.decode(String(decoding: hex, as: UTF8.self))
    }

    /// The concatenation element of a user data header (3GPP TS 23.040 9.2.3.24.1 and .8:
    /// IEI 00 with an 8-bit reference, 08 with a 16-bit one), or nil when there is none or it
    /// is inconsistent (a part 0, a part past the total).
    static func concatenation(_ udh: [UInt8]) -> Concatenation? {
        guard let length = udh.first else { return nil }
        let end = min(udh.count, 1 + Int(length))
        var index = 1
        while index + 1 < end {
            let iei = udh[index]
            let size = Int(udh[index + 1])
            let start = index + 2
            guard start + size <= end else { return nil }
            let data = udh[start..<(start + size)]
            var found: Concatenation?
            if iei == 0x00, size == 3 {
                found = Concatenation(reference: Int(data[start]), total: Int(data[start + 1]), sequence: Int(data[start + 2]))
            } else if iei == 0x08, size == 4 {
                found = Concatenation(reference: Int(data[start]) << 8 | Int(data[start + 1]),
                                      total: Int(data[start + 2]), sequence: Int(data[start + 3]))
            }
            if let c = found {
                return c.total >= 1 && (1...c.total).contains(c.sequence) ? c : nil
            }
            index = start + size
        }
        return nil
    }

    // MARK: The message

    private static func joined(_ parts: [Part]) throws(InboxMessageError) -> InboxMessage {
        guard let first = parts.first else { throw .noMessage }
        guard parts.allSatisfy({ $0.sender == first.sender }) else { throw .partsFromDifferentSenders }
        guard parts.allSatisfy({ $0.kind == first.kind }) else { throw .mixedKinds }
        guard let link = first.concatenation, link.total > 1 else {
            guard parts.count == 1 else { throw .unlinkedParts(parts.count) }
            return InboxMessage(text: InboxText.decode(utf16: first.units), kind: first.kind, sender: first.sender, linking: .single)
        }
        var bySequence: [Int: [UInt16]] = [:]
        for part in parts {
            guard let c = part.concatenation, c.reference == link.reference, c.total == link.total else {
                throw .unlinkedParts(parts.count)
            }
            guard bySequence[c.sequence] == nil else { throw .repeatedPart(c.sequence) }
            bySequence[c.sequence] = part.units
        }
        let received = bySequence.keys.sorted()
        let text = InboxText.decode(utf16: received.compactMap { bySequence[$0] }.joined())
        let linking: InboxMessage.Linking = received.count == link.total
            ? .complete(parts: link.total) : .incomplete(received: received, total: link.total)
        return InboxMessage(text: text, kind: first.kind, sender: first.sender, linking: linking)
    }
}
