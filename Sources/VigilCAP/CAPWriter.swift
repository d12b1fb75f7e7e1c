/// Writes a `CAPAlert` as a CAP 1.2 document: the elements in the order the OASIS schema fixes,
/// in CAP's namespace, UTF-8. What it writes `CAPReader` reads back to the same value, and it
/// validates against the CAP 1.2 schema (the tests check both with xmllint).
///
/// Contract: the writer does not judge what it is given, it only makes it well-formed. Text is
/// escaped, and characters XML 1.0 cannot hold (C0 controls other than tab and line breaks,
/// U+FFFE, U+FFFF) are dropped, so no value can break the document or add an element. What goes
/// in is the caller's choice: the box's and the hub's alerts (docs/warnings.md "CAP out") never
/// carry names, rooms or phone numbers, because their callers never put them in.
/// Misuse: an identifier or sender with spaces or commas, an `info` without a category, or a
/// polygon of fewer than four points makes a document the schema or a reader refuses; callers
/// build those from their own values, not from input.
public enum CAPWriter {
    public static func write(_ alert: CAPAlert) -> [UInt8] {
        var x = XMLText()
        x.raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<alert xmlns=\"\(CAPReader.namespace)\">\n")
        x.element("identifier", alert.identifier, indent: 1)
        x.element("sender", alert.sender, indent: 1)
        x.element("sent", alert.sent.capText, indent: 1)
        x.element("status", alert.status.rawValue, indent: 1)
        x.element("msgType", alert.messageType.rawValue, indent: 1)
        x.element("source", alert.source, indent: 1)
        x.element("scope", alert.scope.rawValue, indent: 1)
        x.element("restriction", alert.restriction, indent: 1)
        x.element("addresses", alert.addresses, indent: 1)
        for code in alert.codes { x.element("code", code, indent: 1) }
        x.element("note", alert.note, indent: 1)
        if !alert.references.isEmpty {
            x.element("references", alert.references.map { "\($0.sender),\($0.identifier),\($0.sent.capText)" }.joined(separator: " "), indent: 1)
        }
        x.element("incidents", alert.incidents, indent: 1)
        for info in alert.infos { write(info, into: &x) }
        x.raw("</alert>\n")
        return x.bytes
    }

    static func write(_ info: CAPInfo, into x: inout XMLText) {
        x.open("info", indent: 1)
        x.element("language", info.language, indent: 2)
        for c in info.categories { x.element("category", c.rawValue, indent: 2) }
        x.element("event", info.event, indent: 2)
        for r in info.responseTypes { x.element("responseType", r.rawValue, indent: 2) }
        x.element("urgency", info.urgency.rawValue, indent: 2)
        x.element("severity", info.severity.rawValue, indent: 2)
        x.element("certainty", info.certainty.rawValue, indent: 2)
        x.element("audience", info.audience, indent: 2)
        for v in info.eventCodes { x.pair("eventCode", v, indent: 2) }
        x.element("effective", info.effective?.capText, indent: 2)
        x.element("onset", info.onset?.capText, indent: 2)
        x.element("expires", info.expires?.capText, indent: 2)
        x.element("senderName", info.senderName, indent: 2)
        x.element("headline", info.headline, indent: 2)
        x.element("description", info.description, indent: 2)
        x.element("instruction", info.instruction, indent: 2)
        x.element("web", info.web, indent: 2)
        x.element("contact", info.contact, indent: 2)
        for v in info.parameters { x.pair("parameter", v, indent: 2) }
        for r in info.resources {
            x.open("resource", indent: 2)
            x.element("resourceDesc", r.description, indent: 3)
            x.element("mimeType", r.mimeType, indent: 3)
            x.element("size", r.size.map(String.init), indent: 3)
            x.element("uri", r.uri, indent: 3)
            x.close("resource", indent: 2)
        }
        for area in info.areas {
            x.open("area", indent: 2)
            x.element("areaDesc", area.description, indent: 3)
            for p in area.polygons {
                x.element("polygon", p.points.map(\.capText).joined(separator: " "), indent: 3)
            }
            for c in area.circles {
                x.element("circle", c.center.capText + " " + CAPNumber.text(c.radiusKilometres), indent: 3)
            }
            for v in area.geocodes { x.pair("geocode", v, indent: 3) }
            x.element("altitude", area.altitude.map(CAPNumber.text), indent: 3)
            x.element("ceiling", area.ceiling.map(CAPNumber.text), indent: 3)
            x.close("area", indent: 2)
        }
        x.close("info", indent: 1)
    }
}

extension CAPTime {
    /// The time as CAP 1.2 requires it be written: UTC as "-00:00" (3.3.2), other offsets as kept.
    public var capText: String {
        let text = description
        return offsetMinutes == 0 ? String(text.dropLast(6)) + "-00:00" : text
    }
}

extension CAPPoint {
    /// "lat,lon" in decimal degrees, as a polygon or a circle writes a point.
    public var capText: String { CAPNumber.text(latitude) + "," + CAPNumber.text(longitude) }
}

/// Decimal numbers as CAP writes them (xs:decimal): the shortest digits that read back as the
/// same number, never with an exponent (the schema and this box's reader refuse one).
enum CAPNumber {
    static func text(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let shortest = value.description
        let negative = shortest.hasPrefix("-")
        let unsigned = negative ? String(shortest.dropFirst()) : shortest
        let mantissa: Substring
        var exponent = 0
        if let e = unsigned.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = unsigned[..<e]
            exponent = Int(unsigned[unsigned.index(after: e)...]) ?? 0
        } else {
            mantissa = unsigned[...]
        }
        let point = mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) } ?? mantissa.count
        let digits = Array(mantissa.filter { $0 != "." })
        return (negative && digits.contains { $0 != "0" } ? "-" : "") + plain(digits, point: point + exponent)
    }

    /// `digits` with the point after `point` of them (before the first when 0 or less).
    private static func plain(_ digits: [Character], point: Int) -> String {
        var whole: String, fraction: String
        if point <= 0 {
            whole = "0"
            fraction = String(repeating: "0", count: -point) + String(digits)
        } else if point >= digits.count {
            whole = String(digits) + String(repeating: "0", count: point - digits.count)
            fraction = ""
        } else {
            whole = String(digits[..<point])
            fraction = String(digits[point...])
        }
        // Leading zeros of the whole part ("05") and trailing ones of the fraction ("5.0") carry nothing.
        while fraction.hasSuffix("0") { fraction.removeLast() }
        while whole.count > 1, whole.hasPrefix("0") { whole.removeFirst() }
        return fraction.isEmpty ? whole : whole + "." + fraction
    }
}

/// An XML document being written: escaped text, elements on their own lines.
struct XMLText {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(2_048) }

    mutating func raw(_ text: String) { bytes.append(contentsOf: text.utf8) }

    mutating func open(_ name: String, indent: Int) { raw(String(repeating: "  ", count: indent) + "<\(name)>\n") }
    mutating func close(_ name: String, indent: Int) { raw(String(repeating: "  ", count: indent) + "</\(name)>\n") }

    /// `<name>text</name>` on a line; nothing for nil.
    mutating func element(_ name: String, _ text: String?, indent: Int) {
        guard let text else { return }
        raw(String(repeating: "  ", count: indent) + "<\(name)>")
        escaped(text)
        raw("</\(name)>\n")
    }

    /// A `valueName`/`value` pair under `name`.
    mutating func pair(_ name: String, _ value: CAPValue, indent: Int) {
        open(name, indent: indent)
        element("valueName", value.name, indent: indent + 1)
        element("value", value.value, indent: indent + 1)
        close(name, indent: indent)
    }

    /// Text content or an attribute value: &, <, >, quotes escaped; what XML 1.0 cannot hold dropped.
    mutating func escaped(_ text: String) {
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x26: raw("&amp;")
            case 0x3C: raw("&lt;")
            case 0x3E: raw("&gt;")
            case 0x22: raw("&quot;")
            case 0x27: raw("&apos;")
            case 0x09, 0x0A: bytes.append(UInt8(scalar.value))
            // A carriage return would be read back as a line feed; written as a reference it stays.
            case 0x0D: raw("&#13;")
            case 0x00 ..< 0x20, 0xFFFE, 0xFFFF: continue
            default: UTF8.encode(scalar) { bytes.append($0) }
            }
        }
    }
}
