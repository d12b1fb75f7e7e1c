import Foundation
import Testing
import VigilCAP
import VigilCore
import VigilEvents

/// The public warnings projection driven by the log (docs/warnings.md): CAP documents as the
/// feeds served them, read again on replay.
struct WarningBookTests {
    static let site = CAPPoint(latitude: 0.5, longitude: 0.5)
    /// The feed the test's events come from (`received`).
    static let origin = CAPOrigin(feed: "https://feed.example.gov/cap")
    static var settings: ProjectionSettings {
        var s = ProjectionSettings()
        s.warnings = CAPWarningSettings(site: site, languages: ["en"])
        return s
    }

    /// A CAP 1.2 document around (0.5, 0.5) unless `far`.
    static func document(_ identifier: String, type: String = "Alert", references: String? = nil, sent: String = "2026-11-30T10:00:00+00:00",
                         expires: String? = "2026-11-30T16:00:00+00:00", severity: String = "Extreme", far: Bool = false) -> [UInt8] {
        let polygon = far ? "10,10 10,11 11,11 11,10 10,10" : "0,0 0,1 1,1 1,0 0,0"
        let info = type == "Cancel" ? "" : """
            <info><category>Met</category><event>Flood</event><urgency>Immediate</urgency><severity>\(severity)</severity>
            <certainty>Observed</certainty>\(expires.map { "<expires>\($0)</expires>" } ?? "")<headline>Flood \(identifier)</headline>
            <area><areaDesc>Test area</areaDesc><polygon>\(polygon)</polygon></area></info>
            """
        return Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>\(identifier)</identifier><sender>test@example.gov</sender>
            <sent>\(sent)</sent><status>Actual</status><msgType>\(type)</msgType><scope>Public</scope>
            \(references.map { "<references>\($0)</references>" } ?? "")\(info)</alert>
            """.utf8)
    }

    static func received(_ document: [UInt8], feed: String = "https://feed.example.gov/cap") -> EventBody {
        var w = WarningReceived()
        w.feed = feed
        w.document = Data(document)
        return .warningReceived(w)
    }

    static func deadline(_ time: String) -> EventBody {
        var d = WarningDeadline()
        d.dueUs = UInt64(CAPTime(time)?.microseconds ?? 0)
        return .warningDeadline(d)
    }

    /// Time in these tests is 2026 (the documents'): seconds after 10:00 UTC on the day.
    static func at(_ secondsAfterTen: Double) -> Double { Double(CAPTime("2026-11-30T10:00:00+00:00")?.microseconds ?? 0) / 1e6 + secondsAfterTen }

    static var history: EventStream {
        var s = EventStream()
        s.add(received(document("A-1")), at: at(60))
        s.add(received(document("B-1", severity: "Minor")), at: at(61))
        s.add(received(document("C-1", far: true)), at: at(62))
        s.add(received(document("A-2", type: "Update", references: "test@example.gov,A-1,2026-11-30T10:00:00+00:00",
                                 sent: "2026-11-30T11:00:00+00:00", expires: "2026-11-30T18:00:00+00:00")), at: at(3600))
        s.add(received(Array("<not-cap/>".utf8)), at: at(3601))
        s.add(deadline("2026-11-30T16:00:00+00:00"), at: at(6 * 3600))
        return s
    }

    @Test func aWarningInTheLogIsInForceAndEndsWithItsDeadline() throws {
        var stream = EventStream()
        stream.add(Self.received(Self.document("A-1")), at: Self.at(60))
        var p = Projections(settings: Self.settings).applying(all: stream.inputs)
        #expect(p.warnings.loudest == .sounds)
        #expect(p.warnings.inForceHere.map(\.key.identifier) == ["A-1"])
        #expect(p.warnings.sources.values.map(\.feed) == ["https://feed.example.gov/cap"])
        #expect(p.warnings.nextDeadlineMicroseconds == UInt64(CAPTime("2026-11-30T16:00:00+00:00")?.microseconds ?? 0))
        stream.add(Self.deadline("2026-11-30T16:00:00+00:00"), at: Self.at(6 * 3600))
        p = Projections(settings: Self.settings).applying(all: stream.inputs)
        #expect(p.warnings.inForceHere.isEmpty && p.warnings.loudest == CAPWarning.Level.none && p.warnings.sources.isEmpty)
    }

    @Test func anUpdateReplacesAndAnUnreadableDocumentIsCountedNotApplied() {
        let p = Projections(settings: Self.settings).applying(all: Self.history.inputs)
        // B-1 and C-1 ended at 16:00; A-2, the update, runs to 18:00.
        #expect(p.warnings.inForceHere.map(\.key.identifier) == ["A-2"])
        #expect(p.warnings.warnings.current.count == 1)
        let before = Projections(settings: Self.settings).applying(all: Array(Self.history.inputs.dropLast()))
        #expect(before.warnings.inForceHere.map(\.key.identifier) == ["A-2", "B-1"], "the loudest first; C-1 is far away")
        #expect(before.warnings.warnings.current.count == 3)
        #expect(p.warnings.unreadable == 1)
        #expect(p.health.count(of: .warningReceived) == 5)
    }

    @Test func theNodeLogsOnlyMessagesThatChangeTheWarnings() throws {
        let p = Projections(settings: Self.settings).applying(all: Self.history.inputs)
        let again = try CAPReader.read(Self.document("B-1", severity: "Minor"))
        #expect(!p.warnings.wouldTake(again, atMicroseconds: micros(Self.at(4000)), origin: Self.origin), "a copy of a warning that ended")
        let late = try CAPReader.read(Self.document("A-1"))
        #expect(!p.warnings.wouldTake(late, atMicroseconds: micros(Self.at(4000)), origin: Self.origin), "a late copy of what was updated")
        let cancel = try CAPReader.read(Self.document("A-3", type: "Cancel", references: "test@example.gov,A-2,2026-11-30T11:00:00+00:00",
                                                      sent: "2026-11-30T12:00:00+00:00"))
        #expect(p.warnings.wouldTake(cancel, atMicroseconds: micros(Self.at(7200)), origin: Self.origin))
        #expect(p.warnings.whyNot(cancel, atMicroseconds: micros(Self.at(7200)), origin: CAPOrigin(feed: "https://prankster.example/cap"))
                    == "it cancels nothing in force here", "another feed cannot cancel this feed's warning")
        #expect(p.warnings.wouldTake(cancel, atMicroseconds: micros(Self.at(7200)), origin: CAPOrigin(feed: "vigil warning import", staff: true)),
                "staff can")
    }

    @Test func aRepeatWithNothingNewIsNotLoggedButOneThatMovesTheEndIs() throws {
        var stream = EventStream()
        stream.add(Self.received(Self.document("R-1")), at: Self.at(60))
        let p = Projections(settings: Self.settings).applying(all: stream.inputs)
        let same = try CAPReader.read(Self.document("R-1", sent: "2026-11-30T10:05:00+00:00"))
        #expect(p.warnings.whyNot(same, atMicroseconds: micros(Self.at(400)), origin: Self.origin) == "a repeat of a warning in force, with nothing new")
        let longer = try CAPReader.read(Self.document("R-1", sent: "2026-11-30T10:05:00+00:00", expires: "2026-11-30T20:00:00+00:00"))
        #expect(p.warnings.wouldTake(longer, atMicroseconds: micros(Self.at(400)), origin: Self.origin), "a repeat that moves the end is news to the box")
        #expect(!p.warnings.wouldTake(longer, atMicroseconds: micros(Self.at(400)), origin: CAPOrigin(feed: "https://prankster.example/cap")),
                "another feed's copy with the same sender and identifier changes nothing")
        // An update naming the first copy ends the repeat logged since (same sender and identifier).
        stream.add(Self.received(Self.document("R-1", sent: "2026-11-30T10:05:00+00:00", expires: "2026-11-30T20:00:00+00:00")), at: Self.at(400))
        stream.add(Self.received(Self.document("R-2", type: "Update", references: "test@example.gov,R-1,2026-11-30T10:00:00+00:00",
                                               sent: "2026-11-30T10:10:00+00:00")), at: Self.at(700))
        let after = Projections(settings: Self.settings).applying(all: stream.inputs)
        #expect(after.warnings.inForceHere.map(\.key.identifier) == ["R-2"])
    }

    /// A warning with no stated end lasts a day from its `sent`; a feed repeating it keeps it in
    /// force: the repeat is logged once the one in force has less than half the life left.
    @Test func aRepeatThatKeepsAWarningWithoutAnEndAliveIsLoggedTwiceADay() throws {
        var stream = EventStream()
        stream.add(Self.received(Self.document("D-1", expires: nil)), at: Self.at(60))
        let p = Projections(settings: Self.settings).applying(all: stream.inputs)
        let hour: Double = 3600
        func repeated(after hours: Double) throws -> CAPAlert {
            try CAPReader.read(Self.document("D-1", sent: "\(CAPTime(microseconds: Int64(Self.at(hours * hour) * 1e6)))", expires: nil))
        }
        #expect(!p.warnings.wouldTake(try repeated(after: 1), atMicroseconds: micros(Self.at(hour)), origin: Self.origin))
        #expect(p.warnings.wouldTake(try repeated(after: 13), atMicroseconds: micros(Self.at(13 * hour)), origin: Self.origin))
    }

    /// Replay equality: the same log gives the same warnings, and a checkpoint taken anywhere
    /// plus the rest of the log gives the same state as the whole log.
    @Test func replayAndCheckpointPlusTailGiveTheSameWarnings() throws {
        let inputs = Self.history.inputs
        let full = Projections(settings: Self.settings).applying(all: inputs)
        #expect(full == Projections(settings: Self.settings).applying(all: inputs))
        for cut in 0...inputs.count {
            let checkpoint = try Projections(settings: Self.settings).applying(all: Array(inputs[..<cut])).encoded()
            let resumed = try Projections.decoded(checkpoint).applying(all: Array(inputs[cut...]))
            #expect(resumed.warnings == full.warnings, "resumed from a checkpoint after \(cut) events")
        }
    }

    @Test func aSummaryNamesTheWarningOrWhyItCannotBeRead() {
        guard case .warningReceived(let w) = Self.received(Self.document("A-1")) else { return }
        #expect(WarningBook.summary(w) == "public warning A-1 from test@example.gov: Alert, Actual Extreme/Immediate/Observed: Flood A-1 (feed https://feed.example.gov/cap)")
        guard case .warningReceived(let bad) = Self.received(Array("<x/>".utf8)) else { return }
        #expect(WarningBook.summary(bad).hasPrefix("an unreadable CAP document of 4 bytes (feed https://feed.example.gov/cap): the root is x"))
    }
}
