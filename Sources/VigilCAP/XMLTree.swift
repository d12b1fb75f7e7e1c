import CLibXML2

/// An element of a parsed document, as the CAP decoder reads it: its namespace, local name,
/// text (its own text and CDATA children, joined), attributes without a namespace (an Atom
/// link's `href`) and child elements. Comments and processing instructions are dropped.
struct XMLElement: Sendable {
    var namespace: String?
    var name: String
    var text: String
    var attributes: [String: String] = [:]
    var children: [XMLElement]
}

/// libxml2, wrapped once: a document in memory to an `XMLElement` tree, with the network, DTDs
/// and entity substitution off, within `CAPLimits`. The only file that calls libxml2's parser.
enum XMLTree {
    /// libxml2's global state, made once before the first parse (thread-safe after that).
    private static let initialised: Void = { xmlInitParser() }()

    /// XML_PARSE_NONET: no network access, ever (a document cannot make the box fetch).
    /// NOERROR/NOWARNING: libxml2 reports nothing on stderr; the error is read from the context.
    /// Not set, on purpose: NOENT (entity substitution), DTDLOAD, DTDATTR, DTDVALID, XINCLUDE,
    /// HUGE (which lifts libxml2's own depth and size limits), RECOVER (a broken document is
    /// refused, never guessed at).
    static let options = Int32(bitPattern: XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)

    /// Parses `bytes` as UTF-8 XML into a tree. A DTD is refused before libxml2 sees the bytes
    /// (the scan is exact because the document is read as UTF-8 whatever it declares).
    static func parse(_ bytes: [UInt8], limits: CAPLimits) throws(CAPError) -> XMLElement {
        guard bytes.count <= limits.maxDocumentBytes else { throw .tooLarge(bytes: bytes.count, limit: limits.maxDocumentBytes) }
        if contains(bytes, "<!DOCTYPE") || contains(bytes, "<!ENTITY") { throw .documentType }
        // libxml2 2.9 checks an element's attributes for duplicates pair by pair: 58,000 of them
        // in 512 KiB take it 38 s. CAP and its feeds use a handful.
        if mostAttributes(bytes) > maximumAttributes { throw .tooMany(path: "attributes of an element", limit: maximumAttributes) }
        guard !bytes.isEmpty else { throw .notXML(message: "the document is empty", line: 0) }
        _ = initialised
        guard let context = xmlNewParserCtxt() else { throw .notXML(message: "libxml2 could not make a parser", line: 0) }
        defer { xmlFreeParserCtxt(context) }
        let document = read(bytes, context)
        guard let document, context.pointee.wellFormed != 0 else {
            if let document { xmlFreeDoc(document) }
            throw lastError(context)
        }
        defer { xmlFreeDoc(document) }
        // Belt and braces: the scan above already refused these.
        guard document.pointee.intSubset == nil, document.pointee.extSubset == nil else { throw .documentType }
        guard let root = xmlDocGetRootElement(document) else { throw .notXML(message: "no root element", line: 0) }
        var count = 0
        return try element(root, path: "", count: &count, limits: limits)
    }

    /// Parses and frees, nothing else: libxml2's own share of reading a document (the benchmark's
    /// baseline). Returns whether the document was well-formed.
    static func parseOnly(_ bytes: [UInt8]) -> Bool {
        _ = initialised
        guard !bytes.isEmpty, let context = xmlNewParserCtxt() else { return false }
        defer { xmlFreeParserCtxt(context) }
        let document = read(bytes, context)
        guard let document else { return false }
        xmlFreeDoc(document)
        return true
    }

    /// One document from memory, read as UTF-8 (`bytes` is not empty: the callers check).
    private static func read(_ bytes: [UInt8], _ context: xmlParserCtxtPtr) -> xmlDocPtr? {
        bytes.withUnsafeBufferPointer { buffer -> xmlDocPtr? in
            guard let base = buffer.baseAddress else { return nil }
            return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                xmlCtxtReadMemory(context, $0, Int32(buffer.count), nil, "UTF-8", options)
            }
        }
    }

    private static func lastError(_ context: xmlParserCtxtPtr) -> CAPError {
        guard let error = xmlCtxtGetLastError(context) else { return .notXML(message: "not well-formed", line: 0) }
        let message = error.pointee.message.map { String(cString: $0) } ?? "not well-formed"
        return .notXML(message: message.trimmingWhitespace(), line: Int(error.pointee.line))
    }

    private static func element(_ node: xmlNodePtr, path: String, count: inout Int, limits: CAPLimits) throws(CAPError) -> XMLElement {
        count += 1
        let name = node.pointee.name.map { String(cString: $0) } ?? ""
        let here = path.isEmpty ? name : path + "/" + name
        guard count <= limits.maxElements else { throw .tooMany(path: "elements", limit: limits.maxElements) }
        var result = XMLElement(namespace: node.pointee.ns?.pointee.href.map { String(cString: $0) }, name: name, text: "", children: [])
        var attribute = node.pointee.properties
        while let a = attribute {
            if a.pointee.ns == nil, let attributeName = a.pointee.name.map({ String(cString: $0) }) {
                var value = ""
                var part = a.pointee.children
                while let p = part {
                    if p.pointee.type == XML_TEXT_NODE, let content = p.pointee.content { value += String(cString: content) }
                    part = p.pointee.next
                }
                result.attributes[attributeName] = value
            }
            attribute = a.pointee.next
        }
        var child = node.pointee.children
        while let c = child {
            switch c.pointee.type {
            case XML_ELEMENT_NODE:
                result.children.append(try element(c, path: here, count: &count, limits: limits))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = c.pointee.content { result.text += String(cString: content) }
            case XML_ENTITY_REF_NODE, XML_ENTITY_NODE, XML_XINCLUDE_START:
                throw .documentType
            default:
                break // comments, processing instructions
            }
            child = c.pointee.next
        }
        return result
    }

    static let maximumAttributes = 32

    /// The most `=` signs outside quotes in any one tag (`<` to `>`; comments, CDATA sections and
    /// processing instructions skipped whole): an upper bound on an element's attributes.
    static func mostAttributes(_ bytes: [UInt8]) -> Int {
        var most = 0
        var i = 0
        let n = bytes.count
        func starts(_ text: StaticString, at index: Int) -> Bool {
            text.withUTF8Buffer { t in index + t.count <= n && (0..<t.count).allSatisfy { bytes[index + $0] == t[$0] } }
        }
        func skip(to end: StaticString, from index: Int) -> Int {
            var j = index
            while j < n, !starts(end, at: j) { j += 1 }
            return j + end.utf8CodeUnitCount
        }
        while i < n {
            guard bytes[i] == 0x3C else { i += 1; continue }
            if starts("<!--", at: i) { i = skip(to: "-->", from: i + 4); continue }
            if starts("<![CDATA[", at: i) { i = skip(to: "]]>", from: i + 9); continue }
            if starts("<?", at: i) { i = skip(to: "?>", from: i + 2); continue }
            // A tag: count `=` outside quoted values until its `>`.
            var count = 0
            var quote: UInt8 = 0
            i += 1
            while i < n {
                let b = bytes[i]
                i += 1
                if quote != 0 {
                    if b == quote { quote = 0 }
                } else if b == 0x22 || b == 0x27 {
                    quote = b
                } else if b == 0x3D {
                    count += 1
                } else if b == 0x3E {
                    break
                }
            }
            most = max(most, count)
        }
        return most
    }

    private static func contains(_ bytes: [UInt8], _ needle: StaticString) -> Bool {
        let n = needle.withUTF8Buffer { Array($0) }
        guard bytes.count >= n.count else { return false }
        var i = 0
        let last = bytes.count - n.count
        while i <= last {
            if bytes[i] == n[0] {
                var j = 1
                while j < n.count, bytes[i + j] == n[j] { j += 1 }
                if j == n.count { return true }
            }
            i += 1
        }
        return false
    }
}

extension String {
    /// Without leading and trailing XML whitespace (space, tab, CR, LF).
    func trimmingWhitespace() -> String {
        let u = Array(utf8)
        func ws(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        var start = 0, end = u.count
        while start < end, ws(u[start]) { start += 1 }
        while end > start, ws(u[end - 1]) { end -= 1 }
        if start == 0 && end == u.count { return self }
        return String(decoding: u[start..<end], as: UTF8.self)
    }
}
