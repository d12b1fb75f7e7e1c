import Foundation

/// A message as EchoAlert's phones exchange them over GATT (seed 000): a JSON object with an
/// `id`, a `category` (`sos` among them) and the `content` text, written to the message
/// characteristic and notified from it. Other fields a phone adds (its sync status, a time) are
/// ignored. Everything in it is unauthenticated: anyone in radio range can write one.
public struct PhoneMessage: Codable, Equatable, Sendable {
    public var id: String
    public var category: String
    public var content: String

    public static let maximumIDLength = 128
    public static let maximumCategoryLength = 32
    public static let maximumContentLength = 2_000

    public init(id: String, category: String, content: String) {
        self.id = id
        self.category = category
        self.content = content
    }

    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        case notJSON
        case missing(String)
        case tooLong(String)

        public var description: String {
            switch self {
            case .notJSON: "not a JSON object with id, category and content"
            case .missing(let field): "no \(field)"
            case .tooLong(let field): "\(field) too long"
            }
        }
    }

    private struct Wire: Decodable {
        // Phones send ids as text (a UUID) or as numbers; either is kept as text.
        var id: IDValue?
        var category: String?
        var content: String?
    }

    private enum IDValue: Decodable {
        case text(String)
        case number(Int64)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) { self = .text(text); return }
            self = .number(try container.decode(Int64.self))
        }
        var text: String { switch self { case .text(let t): t; case .number(let n): String(n) } }
    }

    /// Parses a message; the category is lowercased and trimmed ("SOS" and "sos" are one).
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> PhoneMessage {
        let wire: Wire
        do { wire = try JSONDecoder().decode(Wire.self, from: Data(bytes)) } catch { throw .notJSON }
        guard let id = wire.id?.text, !id.isEmpty else { throw .missing("id") }
        guard let category = wire.category?.trimmingCharacters(in: .whitespaces).lowercased(), !category.isEmpty else { throw .missing("category") }
        guard let content = wire.content else { throw .missing("content") }
        guard id.utf8.count <= maximumIDLength else { throw .tooLong("id") }
        guard category.utf8.count <= maximumCategoryLength else { throw .tooLong("category") }
        guard content.utf8.count <= maximumContentLength else { throw .tooLong("content") }
        return PhoneMessage(id: id, category: category, content: content)
    }

    /// The JSON a phone expects (keys sorted, so equal messages are equal bytes).
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { Array($0) } ?? []
    }
}
