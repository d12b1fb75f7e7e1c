import Foundation
import Testing
import VigilTestSupport
@testable import VigilCAP

struct CAPWriterTests {
    @Test func everyCorpusDocumentWrittenAgainIsReadBackTheSame() throws {
        for name in Corpus.documents {
            let alert = try Corpus.alert(name)
            #expect(try CAPReader.read(CAPWriter.write(alert)) == alert, "\(name)")
        }
    }

    @Test func whatTheWriterWritesValidatesAgainstTheCAP12Schema() throws {
        let documents = try Corpus.documents.map { (name: $0, bytes: CAPWriter.write(try Corpus.alert($0))) }
            + [(name: "hostile.xml", bytes: CAPWriter.write(Self.hostile()))]
        let (output, paths) = try CAPSchema.validate(documents: documents)
        for path in paths { #expect(output.contains("\(path) validates"), "\(output)") }
    }

    @Test func textCannotCloseAnElementOrAddOneAndWhatXMLCannotHoldIsDropped() throws {
        let back = try CAPReader.read(CAPWriter.write(Self.hostile()))
        let info = try #require(back.infos.first)
        #expect(info.headline == "Flood</headline><status>Test</status> & ]]> \"quoted\" 'too'")
        #expect(info.description == "bell and escape dropped[2J, lines\nkept\r\nas written", "a carriage return survives as a reference")
        #expect(back.status == .actual && back.infos.count == 1)
        #expect(info.parameters == [CAPValue(name: "a<b", value: "c&d")])
    }

    @Test func utcIsWrittenAsCAPRequiresAndOtherOffsetsAsKept() throws {
        #expect(CAPTime(microseconds: 1_796_000_000_000_000).capText == "2026-11-30T00:53:20-00:00")
        #expect(try #require(CAPTime("2026-11-30T06:00:00+11:00")).capText == "2026-11-30T06:00:00+11:00")
    }

    @Test(arguments: [(151.2093, "151.2093"), (-33.8688, "-33.8688"), (0.0000001, "0.0000001"), (-0.0000001, "-0.0000001"),
                      (-0.5, "-0.5"), (5.0, "5"), (-0.0, "0"), (0.000001, "0.000001"), (1.2345e-7, "0.00000012345"),
                      (1e16, "10000000000000000"), (-33.12345678901234, "-33.12345678901234"), (Double.nan, "0")])
    func numbersAreWrittenAsTheShortestDecimalWithoutAnExponent(value: Double, text: String) {
        #expect(CAPNumber.text(value) == text)
        if value.isFinite { #expect(Double(text) == value, "reads back as the same number") }
    }

    @Test func anAtomIndexOfWrittenDocumentsIsReadAsTheBoxReadsAFeed() throws {
        let sent = try #require(CAPTime("2026-11-30T06:00:00+11:00"))
        let later = CAPTime(microseconds: sent.microseconds + 60_000_000, offsetMinutes: 660)
        let bytes = CAPAtomWriter.write(id: "urn:vigil:box:ab12", title: "Shelter \"North\" & co", author: "Vigil <box>",
                                        selfLink: "https://box.local/cap.atom",
                                        entries: [.init(id: "urn:vigil:1", title: "SOS", updated: sent, link: "cap/a&b.xml"),
                                                  .init(id: "urn:vigil:2", title: "Fire", updated: later, link: "cap/2.xml")],
                                        emptyUpdated: CAPTime(microseconds: 0))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("<updated>2026-11-29T19:01:00Z</updated>\n  <author>"), "the feed's updated is its newest entry's")
        #expect(try CAPFeedReader.read(bytes) == .index([.init(link: "cap/a&b.xml", version: "2026-11-29T19:00:00Z"),
                                                         .init(link: "cap/2.xml", version: "2026-11-29T19:01:00Z")]))
        let empty = CAPAtomWriter.write(id: "urn:x", title: "t", author: "a", selfLink: nil, entries: [], emptyUpdated: CAPTime(microseconds: 0))
        #expect(String(decoding: empty, as: UTF8.self).contains("<updated>1970-01-01T00:00:00Z</updated>"))
        #expect(try CAPFeedReader.read(empty) == .index([]))
    }

    @Test func everyKindOfVigilAlertIsWrittenAsTheTableSaysAndValidates() throws {
        let writer = CAPOut.Writer(sender: "vigil-box-ab12", name: "Vigil at Town Hall")
        let site = CAPOut.Place(name: "Town Hall", point: Corpus.site)
        let kinds = ["sos", "medical", "fire", "flood", "evacuate", "road-hazard", "area-hazard", "info", "unknown-kind"]
        let alerts = kinds.enumerated().map { i, kind in
            CAPOut.Alert(id: "AB12:\(i + 1)", kind: kind, severity: ["critical", "warning", "info", "unspecified"][i % 4],
                         raisedMicroseconds: 1_796_000_000_000_000 + UInt64(i) * 1_000_000, expiresMicroseconds: i == 0 ? 0 : 1_796_003_600_000_000,
                         place: i % 2 == 0 ? site : nil, observed: i % 2 == 0, cancelledMicroseconds: i == 2 ? 1_796_000_600_000_000 : nil)
        }
        let documents = CAPOut.documents(alerts, writer: writer)
        #expect(documents.count == kinds.count)
        #expect(documents.first?.messageType == .cancel, "newest first: the fire's cancel is the latest")
        let byID = Dictionary(uniqueKeysWithValues: documents.map { ($0.identifier, $0) })
        let sos = try #require(byID["vigil-ab12-1"])
        #expect(sos.sent.capText == "2026-11-30T00:53:20-00:00" && sos.status == .actual && sos.scope == .public)
        #expect(sos.infos[0].categories == [.rescue] && sos.infos[0].event == "Call for help" && sos.infos[0].severity == .extreme)
        #expect(sos.infos[0].certainty == .observed && sos.infos[0].expires == nil && sos.infos[0].headline == "Call for help at Town Hall")
        #expect(sos.infos[0].areas == [CAPArea(description: "Town Hall", circles: [CAPCircle(center: Corpus.site, radiusKilometres: 0.5)])])
        let medical = try #require(byID["vigil-ab12-2"])
        #expect(medical.infos[0].certainty == .likely && medical.infos[0].areas[0].circles.isEmpty)
        #expect(medical.infos[0].areas[0].description == "A shelter of the Vigil network (box AB12)")
        let cancel = try #require(byID["vigil-ab12-3-cancel"])
        #expect(cancel.references == [CAPReference(sender: "vigil-box-ab12", identifier: "vigil-ab12-3", sent: CAPTime(microseconds: 1_796_000_002_000_000))])
        #expect(byID["vigil-ab12-5"]?.infos[0].responseTypes == [.evacuate])
        #expect(byID["vigil-ab12-9"]?.infos[0].categories == [.other] && byID["vigil-ab12-9"]?.infos[0].severity == .extreme)

        let written = documents.map { (name: "\($0.identifier).xml", bytes: CAPWriter.write($0)) }
        for (_, bytes) in written { #expect(try CAPReader.read(bytes) == documents.first { CAPWriter.write($0) == bytes }) }
        let (output, paths) = try CAPSchema.validate(documents: written)
        for path in paths { #expect(output.contains("\(path) validates"), "\(output)") }
        let index = CAPOut.index(documents, writer: writer, id: "urn:vigil:box:ab12", selfLink: nil)
        guard case .index(let entries) = try CAPFeedReader.read(index) else { Issue.record("not an index"); return }
        #expect(entries.map(\.link) == documents.map(CAPOut.link))
    }

    /// An alert whose texts try to break out of their elements.
    static func hostile() -> CAPAlert {
        let sent = CAPTime(microseconds: 1_796_000_000_000_000)
        let info = CAPInfo(language: "en-AU", categories: [.met], event: "Flood", responseTypes: [.shelter], urgency: .immediate,
                           severity: .extreme, certainty: .observed, audience: nil, eventCodes: [], effective: nil, onset: nil,
                           expires: CAPTime(microseconds: sent.microseconds + 3_600_000_000), senderName: "A & B",
                           headline: "Flood</headline><status>Test</status> & ]]> \"quoted\" 'too'",
                           description: "bell\u{07} and escape\u{1B} dropped\u{1B}[2J, lines\nkept\r\nas written\u{FFFE}",
                           instruction: nil, web: nil, contact: nil, parameters: [CAPValue(name: "a<b", value: "c&d")], resources: [],
                           areas: [CAPArea(description: "Near <the> shelter", polygons: [],
                                           circles: [CAPCircle(center: CAPPoint(latitude: -33.8688, longitude: 151.2093), radiusKilometres: 0.5)],
                                           geocodes: [], altitude: nil, ceiling: nil)])
        return CAPAlert(identifier: "vigil-ab12-1", sender: "vigil-ab12@vigil.invalid", sent: sent, status: .actual, messageType: .alert,
                        scope: .public, source: nil, restriction: nil, addresses: nil, codes: [], note: nil, references: [],
                        incidents: nil, infos: [info], hasSignature: false)
    }
}
