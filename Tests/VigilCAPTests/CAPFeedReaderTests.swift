import Foundation
import Testing
@testable import VigilCAP

/// What a warnings feed serves: a CAP document, or an Atom or RSS index linking to them.
struct CAPFeedReaderTests {
    @Test func anAtomIndexGivesEachEntrysCAPLinkAndItsVersion() throws {
        guard case .index(let entries) = try CAPFeedReader.read(try Corpus.bytes("index.atom")) else {
            Issue.record("not read as an index")
            return
        }
        #expect(entries == [CAPIndexEntry(link: "/docs/flood-warning.xml", version: "2026-11-30T06:00:00Z"),
                            CAPIndexEntry(link: "https://warnings.example.gov/fire.xml", version: "2026-11-30T14:00:00Z")])
    }

    @Test func anRSSChannelGivesEachItemsLinkAndItsDateOrGuid() throws {
        guard case .index(let entries) = try CAPFeedReader.read(try Corpus.bytes("index.rss")) else {
            Issue.record("not read as an index")
            return
        }
        #expect(entries == [CAPIndexEntry(link: "https://warnings.example.gov/flood.xml", version: "Mon, 30 Nov 2026 06:00:00 GMT"),
                            CAPIndexEntry(link: "https://warnings.example.gov/fire.xml", version: "fire-1")])
    }

    @Test func aCAPDocumentIsReadAsTheAlertItIs() throws {
        #expect(try CAPFeedReader.read(try Corpus.bytes("flood-cancel.xml")) == .alert(try Corpus.alert("flood-cancel.xml")))
    }

    @Test func anythingElseIsRefusedAndAnIndexIsBounded() throws {
        #expect { _ = try CAPFeedReader.read(Array("<html><body/></html>".utf8)) } throws: { ($0 as? CAPError)?.kind == "not_cap12" }
        #expect { _ = try CAPFeedReader.read(try Corpus.bytes("refused/entity-bomb.xml")) } throws: { ($0 as? CAPError)?.kind == "document_type" }
        let many = String(repeating: "<entry><link href=\"https://x.example/a.xml\"/></entry>", count: 600)
        let feed = Array("<feed xmlns=\"\(CAPFeedReader.atomNamespace)\">\(many)<entry><title>no link</title></entry></feed>".utf8)
        guard case .index(let entries) = try CAPFeedReader.read(feed) else { return }
        #expect(entries.count == CAPFeedReader.maximumEntries)
    }
}
