/// Reads CAP 1.2 documents (OASIS Common Alerting Protocol 1.2, 2010) into `CAPAlert`s:
/// libxml2 makes the tree (`XMLTree`, bounded, no DTD, no network), this decodes it strictly.
/// Every required element must be there, every enumeration must be one CAP 1.2 lists, times and
/// shapes must be as CAP writes them; elements may come in any order (feeds differ), but an
/// element CAP 1.2 does not have is refused, as is a second one of an element it has once.
/// Elements in the XML Signature namespace are allowed at the end of `alert` (a signed feed).
///
/// Misuse: the result says what a document claims, not that it is true; whether its signature
/// verifies and whether its sender is trusted are the feed reader's questions (docs/warnings.md).
public enum CAPReader {
    public static let namespace = "urn:oasis:names:tc:emergency:cap:1.2"
    public static let signatureNamespace = "http://www.w3.org/2000/09/xmldsig#"
    /// References one message may carry (a cancel of a day's updates names a few).
    public static let maximumReferences = 64

    /// The alert `bytes` hold, or why they are not one.
    public static func read(_ bytes: [UInt8], limits: CAPLimits = .standard) throws(CAPError) -> CAPAlert {
        let root = try XMLTree.parse(bytes, limits: limits)
        guard root.name == "alert", root.namespace == namespace else { throw .notCAP12(root: root.name, namespace: root.namespace) }
        var points = 0
        return try alert(root, limits: limits, points: &points)
    }

    /// libxml2's parse alone, for the benchmark's baseline: whether `bytes` are well-formed.
    public static func parseOnly(_ bytes: [UInt8]) -> Bool { XMLTree.parseOnly(bytes) }

    // MARK: - alert

    static func alert(_ e: XMLElement, limits: CAPLimits, points: inout Int) throws(CAPError) -> CAPAlert {
        let fields = try Fields(e, path: "alert",
                                once: ["identifier", "sender", "sent", "status", "msgType", "source", "scope", "restriction",
                                       "addresses", "note", "references", "incidents"],
                                many: ["code", "info"], allowSignature: true)
        let identifier = try fields.required("identifier")
        let sender = try fields.required("sender")
        for (name, value) in [("identifier", identifier), ("sender", sender)] {
            // CAP 1.2: no spaces, commas or restricted characters (< and &, which XML already took).
            guard !value.contains(where: { $0 == " " || $0 == "," || $0 == "\t" || $0 == "\n" || $0 == "\r" }) else {
                throw .invalid(path: "alert/\(name)", value: value, reason: "CAP 1.2 allows no spaces or commas here")
            }
        }
        let infos = fields.elements("info")
        guard infos.count <= limits.maxInfos else { throw .tooMany(path: "alert/info", limit: limits.maxInfos) }
        var decodedInfos: [CAPInfo] = []
        for (i, info) in infos.enumerated() {
            decodedInfos.append(try self.info(info, path: "alert/info[\(i + 1)]", limits: limits, points: &points))
        }
        let references = try fields.optional("references").map { text throws(CAPError) in try self.references(text) } ?? []
        return CAPAlert(identifier: identifier, sender: sender, sent: try fields.requiredTime("sent"),
                        status: try fields.enumeration("status"), messageType: try fields.enumeration("msgType"),
                        scope: try fields.enumeration("scope"), source: fields.optional("source"),
                        restriction: fields.optional("restriction"), addresses: fields.optional("addresses"),
                        codes: fields.texts("code"), note: fields.optional("note"), references: references,
                        incidents: fields.optional("incidents"), infos: decodedInfos, hasSignature: fields.hasSignature)
    }

    /// "sender,identifier,sent" triples separated by whitespace; at most `maximumReferences`.
    static func references(_ text: String) throws(CAPError) -> [CAPReference] {
        var result: [CAPReference] = []
        for triple in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) {
            guard result.count < maximumReferences else { throw .tooMany(path: "alert/references", limit: maximumReferences) }
            let parts = triple.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, let sent = CAPTime(parts[2]) else {
                throw .invalid(path: "alert/references", value: String(triple), reason: "each reference is sender,identifier,sent")
            }
            result.append(CAPReference(sender: String(parts[0]), identifier: String(parts[1]), sent: sent))
        }
        return result
    }

    // MARK: - info

    static func info(_ e: XMLElement, path: String, limits: CAPLimits, points: inout Int) throws(CAPError) -> CAPInfo {
        let fields = try Fields(e, path: path,
                                once: ["language", "event", "urgency", "severity", "certainty", "audience", "effective", "onset",
                                       "expires", "senderName", "headline", "description", "instruction", "web", "contact"],
                                many: ["category", "responseType", "eventCode", "parameter", "resource", "area"])
        let categories = try fields.enumerations("category") as [CAPInfo.Category]
        guard !categories.isEmpty else { throw .missing(path: path + "/category") }
        let areas = fields.elements("area")
        guard areas.count <= limits.maxAreasPerInfo else { throw .tooMany(path: path + "/area", limit: limits.maxAreasPerInfo) }
        var decodedAreas: [CAPArea] = []
        for (i, area) in areas.enumerated() {
            decodedAreas.append(try self.area(area, path: path + "/area[\(i + 1)]", limits: limits, points: &points))
        }
        var resources: [CAPResource] = []
        for (i, resource) in fields.elements("resource").enumerated() {
            let r = try Fields(resource, path: path + "/resource[\(i + 1)]", once: ["resourceDesc", "mimeType", "size", "uri", "derefUri", "digest"], many: [])
            let size = try r.optional("size").map { text throws(CAPError) -> Int in
                guard let n = Int(text), n >= 0 else { throw .invalid(path: r.path + "/size", value: text, reason: "a size is a whole number of bytes") }
                return n
            }
            resources.append(CAPResource(description: try r.required("resourceDesc"), mimeType: try r.required("mimeType"), size: size, uri: r.optional("uri")))
        }
        // CAP 1.0's "Very Likely" is read as Likely (CAP 1.2, 3.2.2, certainty).
        let certainty: CAPInfo.Certainty = fields.optional("certainty") == CAPInfo.Certainty.veryLikely ? .likely : try fields.enumeration("certainty")
        return CAPInfo(language: fields.optional("language") ?? "en-US", categories: categories, event: try fields.required("event"),
                       responseTypes: try fields.enumerations("responseType"), urgency: try fields.enumeration("urgency"),
                       severity: try fields.enumeration("severity"), certainty: certainty, audience: fields.optional("audience"),
                       eventCodes: try fields.values("eventCode"), effective: try fields.time("effective"), onset: try fields.time("onset"),
                       expires: try fields.time("expires"), senderName: fields.optional("senderName"), headline: fields.optional("headline"),
                       description: fields.optional("description"), instruction: fields.optional("instruction"), web: fields.optional("web"),
                       contact: fields.optional("contact"), parameters: try fields.values("parameter"), resources: resources, areas: decodedAreas)
    }

    // MARK: - area

    static func area(_ e: XMLElement, path: String, limits: CAPLimits, points: inout Int) throws(CAPError) -> CAPArea {
        let fields = try Fields(e, path: path, once: ["areaDesc", "altitude", "ceiling"], many: ["polygon", "circle", "geocode"])
        var polygons: [CAPPolygon] = []
        for (i, text) in fields.texts("polygon").enumerated() {
            let where_ = path + "/polygon[\(i + 1)]"
            var polygon: [CAPPoint] = []
            for pair in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) {
                points += 1
                guard points <= limits.maxPoints else { throw .tooMany(path: "points", limit: limits.maxPoints) }
                guard let point = CAPPoint(pair: pair) else {
                    throw .invalid(path: where_, value: String(pair), reason: "each point is latitude,longitude in decimal degrees")
                }
                polygon.append(point)
            }
            guard polygon.count >= 4, polygon.first == polygon.last else {
                throw .invalid(path: where_, value: text, reason: "a polygon has at least four points, the first and last the same")
            }
            polygons.append(CAPPolygon(points: polygon))
        }
        var circles: [CAPCircle] = []
        for (i, text) in fields.texts("circle").enumerated() {
            let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" })
            guard parts.count == 2, let center = CAPPoint(pair: parts[0]), let radius = CAPPoint.degrees(parts[1], limit: 40_075), radius >= 0 else {
                throw .invalid(path: path + "/circle[\(i + 1)]", value: text, reason: "a circle is \"latitude,longitude radius\" (radius in km)")
            }
            circles.append(CAPCircle(center: center, radiusKilometres: radius))
        }
        func decimal(_ name: String) throws(CAPError) -> Double? {
            try fields.optional(name).map { text throws(CAPError) -> Double in
                // xs:decimal, as the schema says: no exponent, no "inf" or "nan".
                guard let v = CAPPoint.degrees(Substring(text), limit: 1e24) else {
                    throw .invalid(path: path + "/" + name, value: text, reason: "a decimal number of feet")
                }
                return v
            }
        }
        return CAPArea(description: try fields.required("areaDesc"), polygons: polygons, circles: circles,
                       geocodes: try fields.values("geocode"), altitude: try decimal("altitude"), ceiling: try decimal("ceiling"))
    }
}

/// One element's children by name, checked against what CAP 1.2 allows there.
struct Fields {
    let path: String
    private var byName: [String: [XMLElement]] = [:]
    private(set) var hasSignature = false

    init(_ e: XMLElement, path: String, once: Set<String>, many: Set<String>, allowSignature: Bool = false) throws(CAPError) {
        self.path = path
        for child in e.children {
            if allowSignature, child.namespace == CAPReader.signatureNamespace {
                hasSignature = true
                continue
            }
            let here = path + "/" + child.name
            guard child.namespace == CAPReader.namespace, once.contains(child.name) || many.contains(child.name) else {
                throw .unexpected(path: here)
            }
            if once.contains(child.name), byName[child.name] != nil { throw .unexpected(path: here + "[2]") }
            byName[child.name, default: []].append(child)
        }
        // Text-only elements have no element children.
        for (name, elements) in byName where !Self.structured.contains(name) {
            if elements.contains(where: { !$0.children.isEmpty }) { throw .unexpected(path: path + "/" + name + "/" + (elements.first { !$0.children.isEmpty }?.children.first?.name ?? "")) }
        }
    }

    /// Elements with elements inside (the rest hold text).
    static let structured: Set<String> = ["info", "eventCode", "parameter", "resource", "area", "geocode"]

    func elements(_ name: String) -> [XMLElement] { byName[name] ?? [] }

    func texts(_ name: String) -> [String] { elements(name).map { $0.text.trimmingWhitespace() } }

    /// The element's text, if present and not empty.
    func optional(_ name: String) -> String? {
        guard let text = elements(name).first?.text.trimmingWhitespace(), !text.isEmpty else { return nil }
        return text
    }

    func required(_ name: String) throws(CAPError) -> String {
        guard let text = optional(name) else { throw .missing(path: path + "/" + name) }
        return text
    }

    func requiredTime(_ name: String) throws(CAPError) -> CAPTime {
        let text = try required(name)
        guard let time = CAPTime(text) else {
            throw .invalid(path: path + "/" + name, value: text, reason: "a CAP time is YYYY-MM-DDThh:mm:ss±hh:mm")
        }
        return time
    }

    func time(_ name: String) throws(CAPError) -> CAPTime? {
        guard let text = optional(name) else { return nil }
        guard let time = CAPTime(text) else {
            throw .invalid(path: path + "/" + name, value: text, reason: "a CAP time is YYYY-MM-DDThh:mm:ss±hh:mm")
        }
        return time
    }

    func enumeration<E: RawRepresentable & CaseIterable>(_ name: String) throws(CAPError) -> E where E.RawValue == String {
        let text = try required(name)
        guard let value = E(rawValue: text) else {
            throw .invalid(path: path + "/" + name, value: text, reason: "one of " + E.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return value
    }

    func enumerations<E: RawRepresentable & CaseIterable>(_ name: String) throws(CAPError) -> [E] where E.RawValue == String {
        var result: [E] = []
        for (i, text) in texts(name).enumerated() {
            guard let value = E(rawValue: text) else {
                throw .invalid(path: path + "/\(name)[\(i + 1)]", value: text, reason: "one of " + E.allCases.map(\.rawValue).joined(separator: ", "))
            }
            result.append(value)
        }
        return result
    }

    /// valueName/value pairs (eventCode, parameter, geocode).
    func values(_ name: String) throws(CAPError) -> [CAPValue] {
        var result: [CAPValue] = []
        for (i, e) in elements(name).enumerated() {
            let pair = try Fields(e, path: path + "/\(name)[\(i + 1)]", once: ["valueName", "value"], many: [])
            result.append(CAPValue(name: try pair.required("valueName"), value: pair.optional("value") ?? ""))
        }
        return result
    }
}
