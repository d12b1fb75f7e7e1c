import Foundation
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

/// A public warning the hub relays arrives in a `HubReceived` and is judged as the box's own
/// feeds' are (docs/warnings.md "The hub relays"); only the hub itself (origin 0) relays them.
struct RelayedWarningTests {
    typealias W = WarningBookTests

    static func relayed(_ document: [UInt8], position: UInt64, origin: UInt64 = 0) -> EventBody {
        guard case .warningReceived(let w) = W.received(document) else { return .hubReceived(HubReceived()) }
        let (kind, payload) = EventCodec.encode(.warningReceived(w))
        var r = HubReceived()
        r.hub = "https://hub.example:8443"
        r.position = position
        r.originNode = origin
        r.kind = kind
        r.payload = Data(payload)
        return .hubReceived(r)
    }

    @Test func aWarningFromTheHubIsInForceAndOneABoxPutOnTheFeedIsNot() throws {
        var stream = EventStream()
        stream.add(Self.relayed(W.document("A-1"), position: 1), at: W.at(60))
        stream.add(Self.relayed(W.document("Z-1"), position: 2, origin: 0x1234), at: W.at(61))
        let p = Projections(settings: WarningCallPathTests.settings).applying(all: stream.inputs)
        #expect(p.warnings.inForceHere.map(\.key.identifier) == ["A-1"])
        #expect(p.warnings.loudest == .sounds)
        #expect(WarningCallPathTests.warningEntries(p).map(\.id) == ["warning/test@example.gov/A-1"], "the staff are told as for any warning")
        // The same message from the box's own feed later is the same warning, not a second one.
        stream.add(W.received(W.document("A-1")), at: W.at(70))
        let both = Projections(settings: WarningCallPathTests.settings).applying(all: stream.inputs)
        #expect(both.warnings.inForceHere.map(\.key.identifier) == ["A-1"])
        #expect(WarningCallPathTests.warningEntries(both).count == 1)
    }

    /// The hub's copy is under the hub's signature rule, the box's own poll under its own: a
    /// relayed Cancel (or one claiming to be staff's) does not end what the box's feed brought.
    @Test func aRelayedCancelDoesNotEndWhatTheBoxsOwnFeedBrought() throws {
        var stream = EventStream()
        stream.add(W.received(W.document("A-1")), at: W.at(60))
        let cancel = W.document("A-9", type: "Cancel", references: "test@example.gov,A-1,2026-11-30T10:00:00+00:00", sent: "2026-11-30T10:05:00+00:00")
        guard case .hubReceived(var r) = Self.relayed(cancel, position: 1) else { return }
        var w = try #require({ if case .warningReceived(let w)? = try? EventCodec.decode(kind: r.kind, payload: [UInt8](r.payload), sequence: 1) { w } else { nil } }())
        w.byStaff = true
        r.payload = Data(EventCodec.encode(.warningReceived(w)).payload)
        stream.add(.hubReceived(r), at: W.at(400))
        let p = Projections(settings: WarningCallPathTests.settings).applying(all: stream.inputs)
        #expect(p.warnings.inForceHere.map(\.key.identifier) == ["A-1"])
    }

    /// A feed gone mad does not text the staff a message a minute: six an hour at most.
    @Test func atMostSixWarningMessagesAnHourReachTheStaff() {
        var stream = EventStream()
        for n in 1...10 { stream.add(Self.relayed(W.document("M-\(n)"), position: UInt64(n)), at: W.at(Double(60 + n))) }
        var p = Projections(settings: WarningCallPathTests.settings).applying(all: stream.inputs)
        #expect(p.warnings.inForceHere.count == 10 && p.warnings.loudest == .sounds, "every one sounds")
        #expect(WarningCallPathTests.warningEntries(p).count == 6)
        stream.add(Self.relayed(W.document("M-11", sent: "2026-11-30T11:30:00+00:00"), position: 11), at: W.at(3_700))
        p = Projections(settings: WarningCallPathTests.settings).applying(all: stream.inputs)
        #expect(WarningCallPathTests.warningEntries(p).count == 7, "an hour on, the next is told")
    }
}
