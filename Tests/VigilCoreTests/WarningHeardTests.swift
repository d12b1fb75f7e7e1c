import Foundation
import Testing
import VigilCAP
import VigilCore
import VigilEvents

/// Public warnings heard on the air (docs/signed-frames.md "Public warning frame"): a neighbour's
/// word of a warning is announced here until its last frame ends, unless the box holds the same
/// warning itself, and a flood from one box cannot fill the book.
struct WarningHeardTests {
    typealias W = WarningBookTests
    typealias C = WarningCallPathTests

    /// A1's name on the air: what a neighbour holding the same warning sends.
    static var a1Digest: UInt64 {
        WarningBook.airDigest(CAPReference(sender: "test@example.gov", identifier: "A-1", sent: CAPTime(microseconds: 0)))
    }

    static func heard(signer: UInt32 = 0xB0B, digest: UInt64 = 0x12_3456_789A, sounds: Bool = true, headline: String = "Dam release: leave the river flats",
                      until secondsAfterTen: Double) -> EventBody {
        var h = WarningHeard()
        h.signer = signer
        h.digest = digest
        h.sounds = sounds
        h.headline = headline
        h.expiresUs = UInt64(W.at(secondsAfterTen) * 1e6)
        h.signedAtUs = UInt64(W.at(secondsAfterTen - 1_800) * 1e6)
        h.heardFrom = 0xC0FFEE
        return .warningHeard(h)
    }

    @Test func aNeighboursWarningSoundsHereTellsTheStaffAndEndsWithItsLastFrame() throws {
        var stream = EventStream()
        stream.add(Self.heard(until: 1_860), at: W.at(60))
        var p = Projections(settings: C.settings).applying(all: stream.inputs)
        let here = try #require(p.warnings.inForceHere.first)
        #expect(p.warnings.loudest == .sounds && here.level == .sounds)
        #expect(OutputPolicy.warningText(here).hasPrefix("Dam release: leave the river flats from box b0b nearby (its word, unverified), until"))
        #expect(p.warnings.source(of: here.key)?.feed == "the air: box b0b")
        #expect(OutputPolicy.soundingWarnings(p).count == 1)
        let told = C.warningEntries(p)
        #expect(told.count == 1)
        #expect(told.first?.text.hasPrefix("Public warning for Riverside gym: Dam release: leave the river flats, until") == true)
        #expect(p.warnings.nextDeadlineMicroseconds == UInt64(W.at(1_860) * 1e6))

        // The neighbour signs anew: a later frame keeps it; then the frames stop and it ends.
        stream.add(Self.heard(until: 2_460), at: W.at(660))
        stream.add(W.deadline("2026-11-30T10:31:00+00:00"), at: W.at(1_860))
        p = Projections(settings: C.settings).applying(all: stream.inputs)
        #expect(p.warnings.loudest == .sounds)
        #expect(C.warningEntries(p).count == 1, "one message, not one per frame")
        stream.add(W.deadline("2026-11-30T10:41:00+00:00"), at: W.at(2_460))
        p = Projections(settings: C.settings).applying(all: stream.inputs)
        #expect(p.warnings.inForceHere.isEmpty && p.warnings.loudest == CAPWarning.Level.none && p.warnings.heard.isEmpty)
        #expect(C.warningEntries(p).isEmpty, "not sent before it ended: withdrawn, never sent late")
    }

    @Test func aWarningTheBoxHoldsItselfIsAnnouncedOnceAsItsOwnAndTwoNeighboursOfOneWarningAreOne() throws {
        var stream = EventStream()
        stream.add(W.received(W.document("A-1")), at: W.at(60))
        stream.add(Self.heard(signer: 0xB0B, digest: Self.a1Digest, until: 1_860), at: W.at(61))
        stream.add(Self.heard(signer: 0xC0C, digest: 0x77, sounds: false, headline: "Boil water", until: 1_860), at: W.at(62))
        stream.add(Self.heard(signer: 0xD0D, digest: 0x77, sounds: true, headline: "Boil water", until: 1_800), at: W.at(63))
        let p = Projections(settings: C.settings).applying(all: stream.inputs)
        #expect(p.warnings.inForceHere.map { $0.infos.first?.headline ?? "" } == ["Flood A-1", "Boil water"])
        #expect(p.warnings.inForceHere.map(\.level) == [.sounds, .sounds], "the loudest word of a warning counts")
        #expect(p.warnings.heard.count == 3)
    }

    @Test func aWarningCancelledHereIsNotRevivedByANeighbourWhoseFeedLags() {
        var stream = EventStream()
        stream.add(W.received(W.document("A-1")), at: W.at(60))
        stream.add(W.received(W.document("A-9", type: "Cancel", references: "test@example.gov,A-1,2026-11-30T10:00:00+00:00",
                                         sent: "2026-11-30T10:05:00+00:00")), at: W.at(300))
        stream.add(Self.heard(signer: 0xB0B, digest: Self.a1Digest, until: 1_860), at: W.at(310))
        let p = Projections(settings: C.settings).applying(all: stream.inputs)
        #expect(p.warnings.inForceHere.isEmpty && p.warnings.loudest == CAPWarning.Level.none)
        #expect(p.warnings.heard.count == 1, "kept (it may be for another warning of the same name), not announced")
    }

    @Test func aBoxRewordingANeighboursWarningIsShownBesideItAndHeardWarningsHaveTheirOwnStaffBudget() throws {
        var stream = EventStream()
        stream.add(Self.heard(signer: 0xB0B, digest: 0x77, headline: "Evacuate the river flats now", until: 1_860), at: W.at(60))
        stream.add(Self.heard(signer: 0xBAD, digest: 0x77, headline: "All clear, this is a test", until: 1_900), at: W.at(61))
        var p = Projections(settings: C.settings).applying(all: stream.inputs)
        #expect(Set(p.warnings.inForceHere.compactMap { $0.infos.first?.headline }) == ["Evacuate the river flats now", "All clear, this is a test"])
        #expect(C.warningEntries(p).count == 2)
        // A third made-up warning within the hour tells no one; the box's own warning still does.
        stream.add(Self.heard(signer: 0xBAD, digest: 0x78, headline: "Another", until: 1_900), at: W.at(62))
        stream.add(W.received(W.document("A-1")), at: W.at(63))
        p = Projections(settings: C.settings).applying(all: stream.inputs)
        #expect(C.warningEntries(p).map(\.id).filter { !$0.hasPrefix("warning/vigil air/") } == ["warning/test@example.gov/A-1"])
        #expect(C.warningEntries(p).count == 3)
        #expect(OutputPolicy.soundingWarnings(p).count == 4, "every one still sounds")
    }

    @Test func oneBoxKeepsAtMostFourWarningsAndTheBookAtMostItsLimit() {
        var stream = EventStream()
        for i in 0..<10 { stream.add(Self.heard(signer: 0xBAD, digest: UInt64(i), until: 1_000 + Double(i)), at: W.at(60 + Double(i))) }
        var p = Projections(settings: W.settings).applying(all: stream.inputs)
        #expect(p.warnings.heard.map(\.digest) == [6, 7, 8, 9], "its newest replace its soonest to end")
        for box in 0..<40 {
            for i in 0..<2 { stream.add(Self.heard(signer: UInt32(box + 1), digest: UInt64(i), until: 1_800), at: W.at(100)) }
        }
        p = Projections(settings: W.settings).applying(all: stream.inputs)
        #expect(p.warnings.heard.count == WarningBook.heardLimit)
        #expect(p.warnings.heardDropped == 84 - UInt64(WarningBook.heardLimit))
    }

    @Test func theNodeLogsNewsAndRenewalsButNotEveryAdvert() throws {
        var stream = EventStream()
        stream.add(Self.heard(until: 1_860), at: W.at(60))
        let book = Projections(settings: W.settings).applying(all: stream.inputs).warnings
        func frame(_ until: Double, sounds: Bool = true, headline: String = "Dam release: leave the river flats") -> WarningHeard {
            guard case .warningHeard(let h) = Self.heard(sounds: sounds, headline: headline, until: until) else { return WarningHeard() }
            return h
        }
        let now = UInt64(W.at(70) * 1e6)
        #expect(!book.wouldLog(frame(1_860), atMicroseconds: now), "the same frame again")
        #expect(!book.wouldLog(frame(2_000), atMicroseconds: now), "a little longer")
        #expect(book.wouldLog(frame(2_460), atMicroseconds: now), "ten minutes longer")
        #expect(book.wouldLog(frame(1_860, sounds: false), atMicroseconds: now))
        #expect(book.wouldLog(frame(1_860, headline: "Dam release: all clear soon"), atMicroseconds: now))
        #expect(!book.wouldLog(frame(50), atMicroseconds: now), "expired")
    }

    @Test func replayAndCheckpointPlusTailAgreeWithHeardWarnings() throws {
        var stream = EventStream()
        stream.add(W.received(W.document("A-1")), at: W.at(60))
        stream.add(Self.heard(until: 1_860), at: W.at(61))
        stream.add(Self.heard(signer: 0xC0C, digest: Self.a1Digest, until: 1_860), at: W.at(62))
        stream.add(Self.heard(until: 2_460), at: W.at(661))
        stream.add(W.deadline("2026-11-30T10:31:00+00:00"), at: W.at(1_860))
        let inputs = stream.inputs
        let full = Projections(settings: C.settings).applying(all: inputs)
        for cut in 0...inputs.count {
            let checkpoint = try Projections(settings: C.settings).applying(all: Array(inputs[..<cut])).encoded()
            let resumed = try Projections.decoded(checkpoint).applying(all: Array(inputs[cut...]))
            #expect(resumed == full, "resumed from a checkpoint after \(cut) events")
        }
    }
}
