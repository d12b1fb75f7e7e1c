/// What a warnings feed serves (docs/warnings.md, "Feeds"): a CAP 1.2 document itself, or an
/// index of them: an Atom feed (RFC 4287) or an RSS 2.0 channel whose entries link to CAP
/// documents. Read with the same bounded parser as a CAP document; entries are links only (a
/// CAP alert embedded in an entry's content is not read: the feeds this box reads link theirs).
public enum CAPFeedDocument: Sendable, Equatable {
    case alert(CAPAlert)
    case index([CAPIndexEntry])
}

/// One entry of an index: where its CAP document is (as written: possibly relative to the
/// index's address) and what the index says of its version (Atom's `updated`, RSS's `pubDate`
/// or `guid`), so that an unchanged entry is not fetched again.
public struct CAPIndexEntry: Sendable, Equatable, Hashable {
    public var link: String
    public var version: String

    public init(link: String, version: String) {
        self.link = link
        self.version = version
    }
}

public enum CAPFeedReader {
    public static let atomNamespace = "http://www.w3.org/2005/Atom"
    /// Entries read from one index; the rest are left for the next poll (a real index holds tens).
    public static let maximumEntries = 500

    public static func read(_ bytes: [UInt8], limits: CAPLimits = .standard) throws(CAPError) -> CAPFeedDocument {
        let root = try XMLTree.parse(bytes, limits: limits)
        switch (root.name, root.namespace) {
        case ("alert", CAPReader.namespace?):
            var points = 0
            return .alert(try CAPReader.alert(root, limits: limits, points: &points))
        case ("feed", atomNamespace?):
            return .index(atom(root))
        case ("rss", nil):
            return .index(rss(root))
        default:
            throw .notCAP12(root: root.name, namespace: root.namespace)
        }
    }

    /// An Atom entry's link: the one typed `application/cap+xml` first, else its `alternate`
    /// (or unnamed) link; its version is `updated`, else `id`.
    static func atom(_ feed: XMLElement) -> [CAPIndexEntry] {
        var entries: [CAPIndexEntry] = []
        for entry in feed.children where entry.name == "entry" && entry.namespace == atomNamespace {
            let links = entry.children.filter { $0.name == "link" && $0.namespace == atomNamespace && !($0.attributes["href"] ?? "").isEmpty }
            let chosen = links.first { $0.attributes["type"]?.lowercased() == "application/cap+xml" }
                ?? links.first { ($0.attributes["rel"] ?? "alternate") == "alternate" }
            guard let href = chosen?.attributes["href"] else { continue }
            let version = text(of: "updated", in: entry, namespace: atomNamespace) ?? text(of: "id", in: entry, namespace: atomNamespace) ?? ""
            entries.append(CAPIndexEntry(link: href.trimmingWhitespace(), version: version))
            if entries.count == maximumEntries { break }
        }
        return entries
    }

    /// An RSS item's `link`; its version is `pubDate`, else `guid`.
    static func rss(_ rss: XMLElement) -> [CAPIndexEntry] {
        var entries: [CAPIndexEntry] = []
        for channel in rss.children where channel.name == "channel" && channel.namespace == nil {
            for item in channel.children where item.name == "item" && item.namespace == nil {
                guard let link = text(of: "link", in: item, namespace: nil) else { continue }
                let version = text(of: "pubDate", in: item, namespace: nil) ?? text(of: "guid", in: item, namespace: nil) ?? ""
                entries.append(CAPIndexEntry(link: link, version: version))
                if entries.count == maximumEntries { return entries }
            }
        }
        return entries
    }

    private static func text(of name: String, in element: XMLElement, namespace: String?) -> String? {
        guard let child = element.children.first(where: { $0.name == name && $0.namespace == namespace }) else { return nil }
        let text = child.text.trimmingWhitespace()
        return text.isEmpty ? nil : String(text.prefix(256))
    }
}
