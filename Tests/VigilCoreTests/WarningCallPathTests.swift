import Testing
import VigilCAP
import VigilCore
import VigilEvents

/// A public warning that sounds here goes to the staff channel, once (docs/warnings.md, "The
/// call path"); what is no longer true is not sent.
struct WarningCallPathTests {
    typealias W = WarningBookTests
    static let staffNumber = "+34600000001"

    static var settings: ProjectionSettings {
        var s = W.settings
        s.ladder.staff = [staffNumber]
        s.ladder.siteName = "Riverside gym"
        return s
    }

    static func warningEntries(_ p: Projections) -> [Outbox.Entry] {
        p.outbox.entries.values.filter { $0.id.hasPrefix("warning/") }.sorted { $0.createdSequence < $1.createdSequence }
    }

    @Test func aWarningThatSoundsIsToldToTheStaffOnceAndNeitherARepeatNorAQuietOneTellsAnyone() throws {
        var stream = EventStream()
        stream.add(W.received(W.document("A-1")), at: W.at(60))
        stream.add(W.received(W.document("B-1", severity: "Minor")), at: W.at(61))
        stream.add(W.received(W.document("C-1", far: true)), at: W.at(62))
        // The feed serves A-1 again with a later `sent` and a later end: a repeat, not news.
        stream.add(W.received(W.document("A-1", sent: "2026-11-30T10:30:00+00:00", expires: "2026-11-30T17:00:00+00:00")), at: W.at(1800))
        let p = Projections(settings: Self.settings).applying(all: stream.inputs)
        let told = Self.warningEntries(p)
        try #require(told.count == 1)
        let entry = told[0]
        #expect(entry.id == "warning/test@example.gov/A-1")
        #expect(entry.channel == .staff && entry.recipients == [Self.staffNumber] && !entry.delivered)
        #expect(entry.text == "Public warning for Riverside gym: Flood A-1 (Extreme, Immediate), until 2026-11-30T16:00:00+00:00. From test@example.gov.")
        #expect(p.outbox.pending.map(\.id).contains(entry.id))
    }

    @Test func aMessageNotYetSentIsWithdrawnWhenItsWarningEndsAndAnUpdateThatSoundsIsToldInstead() throws {
        var stream = EventStream()
        stream.add(W.received(W.document("A-1")), at: W.at(60))
        stream.add(W.received(W.document("A-2", type: "Update", references: "test@example.gov,A-1,2026-11-30T10:00:00+00:00",
                                         sent: "2026-11-30T11:00:00+00:00", expires: "2026-11-30T18:00:00+00:00")), at: W.at(3600))
        var p = Projections(settings: Self.settings).applying(all: stream.inputs)
        #expect(Self.warningEntries(p).map(\.id) == ["warning/test@example.gov/A-2"])
        #expect(Self.warningEntries(p).first?.text.contains("until 2026-11-30T18:00:00+00:00") == true)

        // Sent, then cancelled: a delivered message stays what it was (it was true when sent).
        stream.add(LadderEvents.attempt("warning/test@example.gov/A-2", 1, delivered: true), at: W.at(3605))
        stream.add(W.received(W.document("A-3", type: "Cancel", references: "test@example.gov,A-2,2026-11-30T11:00:00+00:00",
                                         sent: "2026-11-30T12:00:00+00:00")), at: W.at(7200))
        p = Projections(settings: Self.settings).applying(all: stream.inputs)
        #expect(p.warnings.inForceHere.isEmpty)
        #expect(Self.warningEntries(p).map { "\($0.id) \($0.delivered)" } == ["warning/test@example.gov/A-2 true"])

        // Not sent before it expired: withdrawn, never sent late.
        var quiet = EventStream()
        quiet.add(W.received(W.document("D-1")), at: W.at(60))
        quiet.add(LadderEvents.attempt("warning/test@example.gov/D-1", 1, delivered: false, error: "modem busy"), at: W.at(65))
        quiet.add(W.deadline("2026-11-30T16:00:00+00:00"), at: W.at(6 * 3600))
        let ended = Projections(settings: Self.settings).applying(all: quiet.inputs)
        #expect(Self.warningEntries(ended).isEmpty)
        #expect(ended.outbox.pending.isEmpty)
    }

    @Test func withNoStaffChannelNothingIsQueuedAndTheBuzzerStillSounds() {
        var stream = EventStream()
        stream.add(W.received(W.document("A-1")), at: W.at(60))
        let p = Projections(settings: W.settings).applying(all: stream.inputs)
        #expect(Self.warningEntries(p).isEmpty)
        #expect(p.warnings.loudest == .sounds)
    }

    @Test func replayAndCheckpointPlusTailAgreeOnWhatTheStaffAreTold() throws {
        var stream = EventStream()
        stream.add(W.received(W.document("A-1")), at: W.at(60))
        stream.add(W.received(W.document("E-1")), at: W.at(70))
        stream.add(W.received(W.document("A-2", type: "Update", references: "test@example.gov,A-1,2026-11-30T10:00:00+00:00",
                                         sent: "2026-11-30T11:00:00+00:00", expires: "2026-11-30T18:00:00+00:00")), at: W.at(3600))
        stream.add(W.deadline("2026-11-30T16:00:00+00:00"), at: W.at(6 * 3600))
        let inputs = stream.inputs
        let whole = Projections(settings: Self.settings).applying(all: inputs)
        for cut in 1..<inputs.count {
            let checkpoint = try Projections(settings: Self.settings).applying(all: Array(inputs[..<cut])).encoded()
            let resumed = try Projections.decoded(checkpoint).applying(all: Array(inputs[cut...]))
            #expect(resumed.outbox == whole.outbox && resumed.warnings == whole.warnings, "resumed from a checkpoint after \(cut) events")
        }
        #expect(Self.warningEntries(whole).map(\.id) == ["warning/test@example.gov/A-2"])
    }
}
