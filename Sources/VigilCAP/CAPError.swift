/// Why a document was not read as a CAP 1.2 alert. One case per kind of refusal, each saying
/// where (an element path such as `alert/info[2]/area[1]/polygon[1]`) and why, so that a feed's
/// operator can fix what they publish and the box can count refusals by kind.
public enum CAPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Over `CAPLimits.maxDocumentBytes`: refused before parsing.
    case tooLarge(bytes: Int, limit: Int)
    /// A document type declaration (DTD): CAP has none, and a DTD is how entity bombs and
    /// external entities get in. Refused before parsing.
    case documentType
    /// Not well-formed XML (libxml2's message and line).
    case notXML(message: String, line: Int)
    /// Well-formed, but its root is not a CAP 1.2 `alert` (another version, another document).
    case notCAP12(root: String, namespace: String?)
    /// A required element is absent.
    case missing(path: String)
    /// An element CAP 1.2 does not have there, or a second of one that may appear once.
    case unexpected(path: String)
    /// An element's text is not what CAP 1.2 allows there.
    case invalid(path: String, value: String, reason: String)
    /// More elements (or points, infos, areas) than `CAPLimits` allows.
    case tooMany(path: String, limit: Int)

    /// A short name of the kind, for counters (`vigil_warnings_refused_total{reason=...}`).
    public var kind: String {
        switch self {
        case .tooLarge: "too_large"
        case .documentType: "document_type"
        case .notXML: "not_xml"
        case .notCAP12: "not_cap12"
        case .missing: "missing"
        case .unexpected: "unexpected"
        case .invalid: "invalid"
        case .tooMany: "too_many"
        }
    }

    public var description: String {
        switch self {
        case let .tooLarge(bytes, limit): "the document is \(bytes) bytes; at most \(limit) are read"
        case .documentType: "the document declares a DTD (<!DOCTYPE or <!ENTITY): CAP has none, and none is read"
        case let .notXML(message, line): "not well-formed XML at line \(line): \(message)"
        case let .notCAP12(root, namespace):
            "the root is \(root) in namespace \(namespace ?? "(none)"), not a CAP 1.2 alert (\(CAPReader.namespace))"
        case let .missing(path): "\(path) is required and missing"
        case let .unexpected(path): "\(path) is not an element CAP 1.2 has there"
        case let .invalid(path, value, reason): "\(path) is \"\(value.prefix(80))\": \(reason)"
        case let .tooMany(path, limit): "\(path): more than \(limit)"
        }
    }
}

/// The bounds a document is read within (docs/warnings.md, "Bounds"). A document over a bound is
/// refused whole: a warning is never read in part.
public struct CAPLimits: Sendable, Equatable {
    /// The whole document. Real national feeds' documents are a few kilobytes; the largest
    /// polygons (a coastline) reach tens.
    public var maxDocumentBytes = 512 * 1024
    /// Elements in the document, all levels together.
    public var maxElements = 20_000
    public var maxInfos = 32
    public var maxAreasPerInfo = 64
    /// Points over every polygon of the document.
    public var maxPoints = 50_000

    public init() {}
    public static let standard = CAPLimits()
}
