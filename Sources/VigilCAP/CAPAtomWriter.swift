/// An Atom (RFC 4287) index of CAP documents, as public alert aggregators and `CAPFeedReader`
/// read one: each entry links to its document (`rel="alternate"`, `application/cap+xml`), and
/// its `updated` changes whenever the document does, so a reader fetches only what changed.
public enum CAPAtomWriter {
    public struct Entry: Sendable, Equatable {
        /// A permanent IRI for the entry (the CAP message's identity).
        public var id: String
        public var title: String
        public var updated: CAPTime
        /// The document's address: relative to the index's, or absolute.
        public var link: String

        public init(id: String, title: String, updated: CAPTime, link: String) {
            self.id = id
            self.title = title
            self.updated = updated
            self.link = link
        }
    }

    /// The index. `updated` is the newest entry's (or `emptyUpdated` when there is none: Atom
    /// requires one, and a fixed value keeps an empty feed's bytes, and so its ETag, stable).
    public static func write(id: String, title: String, author: String, selfLink: String?, entries: [Entry],
                             emptyUpdated: CAPTime) -> [UInt8] {
        var x = XMLText()
        x.raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n")
        x.element("id", id, indent: 1)
        x.element("title", title, indent: 1)
        x.element("updated", rfc3339(entries.map(\.updated).max() ?? emptyUpdated), indent: 1)
        x.raw("  <author>\n")
        x.element("name", author, indent: 2)
        x.raw("  </author>\n")
        if let selfLink {
            x.raw("  <link rel=\"self\" type=\"application/atom+xml\" href=\"")
            x.escaped(selfLink)
            x.raw("\"/>\n")
        }
        for e in entries {
            x.raw("  <entry>\n")
            x.element("id", e.id, indent: 2)
            x.element("title", e.title, indent: 2)
            x.element("updated", rfc3339(e.updated), indent: 2)
            x.raw("    <link rel=\"alternate\" type=\"application/cap+xml\" href=\"")
            x.escaped(e.link)
            x.raw("\"/>\n  </entry>\n")
        }
        x.raw("</feed>\n")
        return x.bytes
    }

    /// Atom's date-time: RFC 3339 in UTC with "Z" (Atom allows it; CAP does not).
    static func rfc3339(_ time: CAPTime) -> String {
        String(CAPTime(microseconds: time.microseconds, offsetMinutes: 0).description.dropLast(6)) + "Z"
    }
}
