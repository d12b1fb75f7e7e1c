import Foundation
import Testing
@testable import VigilCAP

/// The warnings in force at the corpus's site as its messages arrive (docs/warnings.md, "Which
/// warnings are in force" and "How loud").
struct CAPWarningsTests {
    static let here = CAPWarningSettings(site: Corpus.site)
    static let minute: Int64 = 60_000_000

    /// Applies `name` a minute after it was sent.
    @discardableResult
    static func take(_ name: String, into warnings: inout CAPWarnings, settings: CAPWarningSettings = here) throws -> CAPWarnings.Outcome {
        let alert = try Corpus.alert(name)
        return warnings.apply(alert, receivedMicroseconds: alert.sent.microseconds + minute, settings: settings)
    }

    @Test func anExtremeImmediateObservedFloodAroundTheSiteSounds() throws {
        var warnings = CAPWarnings()
        let flood = try Corpus.alert("flood-warning.xml")
        #expect(try Self.take("flood-warning.xml", into: &warnings) == .new(flood.key))
        let warning = try #require(warnings.current[flood.key])
        #expect(warning.appliesHere && warning.level == .sounds && warnings.loudest == .sounds)
        #expect(warning.infos.map(\.language) == ["en-AU"], "the document's first language when none is preferred")
        #expect(warning.expiresMicroseconds == CAPTime("2026-11-30T12:00:00+11:00")?.microseconds)
        #expect(warnings.inForceHere.map(\.key) == [flood.key])
    }

    @Test func thePreferredLanguageChoosesTheInfosShown() throws {
        var warnings = CAPWarnings()
        try Self.take("flood-warning.xml", into: &warnings, settings: CAPWarningSettings(site: Corpus.site, languages: ["es"]))
        #expect(warnings.current.values.first?.infos.map(\.language) == ["es-ES"], "\"es\" takes es-ES")
        var english = CAPWarnings()
        try Self.take("flood-warning.xml", into: &english, settings: CAPWarningSettings(site: Corpus.site, languages: ["fr", "en-AU"]))
        #expect(english.current.values.first?.infos.map(\.language) == ["en-AU"], "the first preferred language the document has")
    }

    @Test func anUpdateReplacesTheWarningAndACancelClearsItAndLateCopiesAreNotTakenAgain() throws {
        var warnings = CAPWarnings()
        let flood = try Corpus.alert("flood-warning.xml"), update = try Corpus.alert("flood-update.xml")
        try Self.take("flood-warning.xml", into: &warnings)
        #expect(try Self.take("flood-update.xml", into: &warnings) == .updated(update.key, replacing: [flood.key]))
        #expect(Array(warnings.current.keys) == [update.key])
        #expect(warnings.current[update.key]?.expiresMicroseconds == CAPTime("2026-11-30T15:00:00+11:00")?.microseconds)
        #expect(try Self.take("flood-warning.xml", into: &warnings) == .ignored(.superseded), "a late copy of what was updated")
        #expect(try Self.take("flood-cancel.xml", into: &warnings) == .cancelled([update.key]))
        #expect(warnings.current.isEmpty && warnings.loudest == CAPWarning.Level.none)
        #expect(try Self.take("flood-update.xml", into: &warnings) == .ignored(.superseded), "a late copy of what was cancelled")
        #expect(try Self.take("flood-cancel.xml", into: &warnings) == .ignored(.duplicate))
    }

    @Test func aCancelHeardBeforeItsWarningKeepsTheWarningFromBeingTaken() throws {
        var warnings = CAPWarnings()
        #expect(try Self.take("flood-cancel.xml", into: &warnings) == .cancelled([]))
        #expect(try Self.take("flood-warning.xml", into: &warnings) == .ignored(.superseded))
        #expect(warnings.current.isEmpty)
    }

    @Test(arguments: ["status-test.xml", "status-exercise.xml", "status-system.xml", "status-draft.xml"])
    func aMessageThatIsNotActualIsListedAndNeverSounds(name: String) throws {
        var warnings = CAPWarnings()
        try Self.take(name, into: &warnings)
        #expect(warnings.current.values.map(\.level) == [.listed])
        #expect(warnings.loudest == .listed)
    }

    @Test func aSevereExpectedFireAroundTheSiteSoundsAndOneFarAwayIsKeptButNotShown() throws {
        var warnings = CAPWarnings()
        try Self.take("fire-circle-near.xml", into: &warnings)
        try Self.take("fire-far.xml", into: &warnings)
        let near = try Corpus.alert("fire-circle-near.xml"), far = try Corpus.alert("fire-far.xml")
        #expect(warnings.current[near.key]?.level == .sounds)
        #expect(warnings.current[far.key]?.appliesHere == false && warnings.current[far.key]?.level == CAPWarning.Level.none)
        #expect(warnings.inForceHere.map(\.key) == [near.key])
    }

    @Test func aGeocodeOfThePlaceMakesAWarningApplyAndAMinorFutureOneIsOnlyListed() throws {
        var coded = CAPWarnings()
        try Self.take("heat-geocode.xml", into: &coded, settings: CAPWarningSettings(site: Corpus.site, geocodes: [CAPValue(name: "SAME", value: "006037")]))
        #expect(coded.current.values.map(\.level) == [.listed] && coded.current.values.first?.appliesHere == true)
        var uncoded = CAPWarnings()
        try Self.take("heat-geocode.xml", into: &uncoded)
        #expect(uncoded.current.values.first?.appliesHere == false, "its only area is a county code the box does not have")
    }

    @Test func theSameMessageFromTwoFeedsIsOneWarning() throws {
        var warnings = CAPWarnings()
        try Self.take("fire-circle-near.xml", into: &warnings)
        #expect(try Self.take("fire-circle-near.xml", into: &warnings) == .ignored(.duplicate))
        #expect(warnings.current.count == 1)
    }

    @Test func aFeedRepeatingAnAlertWithNewSentTimesKeepsOneWarningAndTheNewest() throws {
        var warnings = CAPWarnings()
        let first = try Corpus.alert("fire-circle-near.xml")
        var again = first
        again.sent = CAPTime(microseconds: first.sent.microseconds + 5 * Self.minute)
        var earlier = first
        earlier.sent = CAPTime(microseconds: first.sent.microseconds - 5 * Self.minute)
        _ = warnings.apply(first, receivedMicroseconds: first.sent.microseconds, settings: Self.here)
        #expect(warnings.apply(again, receivedMicroseconds: again.sent.microseconds, settings: Self.here) == .repeated(again.key, replacing: first.key))
        #expect(warnings.apply(earlier, receivedMicroseconds: again.sent.microseconds, settings: Self.here) == .ignored(.superseded))
        #expect(Array(warnings.current.keys) == [again.key])
    }

    @Test func warningsExpireByTheTimeGivenEvenOnAQuietBox() throws {
        var warnings = CAPWarnings()
        let fire = try Corpus.alert("fire-circle-near.xml")
        try Self.take("fire-circle-near.xml", into: &warnings)
        let expires = try #require(CAPTime("2026-11-30T20:00:00+00:00")).microseconds
        #expect(warnings.nextExpiryMicroseconds == expires)
        #expect(warnings.expire(nowMicroseconds: expires - 1).isEmpty)
        #expect(warnings.expire(nowMicroseconds: expires) == [fire.key])
        #expect(warnings.current.isEmpty && warnings.nextExpiryMicroseconds == nil)
        #expect(try Self.take("fire-circle-near.xml", into: &warnings) == .ignored(.duplicate), "an expired message heard again is not news")
    }

    @Test func aMessageThatExpiredBeforeItWasSentOrBeforeItArrivedIsNotTaken() throws {
        var alert = try Corpus.alert("fire-circle-near.xml")
        var warnings = CAPWarnings()
        let expires = try #require(alert.infos[0].expires)
        #expect(warnings.apply(alert, receivedMicroseconds: expires.microseconds, settings: Self.here) == .ignored(.expiredOnArrival))
        alert.infos[0].expires = CAPTime(microseconds: alert.sent.microseconds - Self.minute)
        alert.identifier += "-B"
        #expect(warnings.apply(alert, receivedMicroseconds: alert.sent.microseconds, settings: Self.here) == .ignored(.expiredBeforeSent))
    }

    @Test func aWarningWithoutAnExpiryLastsADayUnlessEnded() throws {
        var alert = try Corpus.alert("fire-circle-near.xml")
        alert.infos[0].expires = nil
        var warnings = CAPWarnings()
        _ = warnings.apply(alert, receivedMicroseconds: alert.sent.microseconds, settings: Self.here)
        #expect(warnings.nextExpiryMicroseconds == alert.sent.microseconds + CAPWarnings.defaultLifetimeMicroseconds)
    }

    @Test func restrictedPrivateAckAndErrorMessagesAreNotWarnings() throws {
        var warnings = CAPWarnings()
        var alert = try Corpus.alert("fire-circle-near.xml")
        alert.scope = .restricted
        #expect(warnings.apply(alert, receivedMicroseconds: alert.sent.microseconds, settings: Self.here) == .ignored(.notPublic))
        alert.scope = .public
        alert.messageType = .ack
        #expect(warnings.apply(alert, receivedMicroseconds: alert.sent.microseconds, settings: Self.here) == .ignored(.notAWarning))
    }

    @Test func aFeedEndsOnlyWhatItBroughtAndStaffMayEndAny() throws {
        let national = CAPOrigin(feed: "https://national.example.gov/cap.atom")
        let prankster = CAPOrigin(feed: "https://prankster.example/cap.atom")
        let fire = try Corpus.alert("fire-circle-near.xml")
        var cancel = try Corpus.alert("flood-cancel.xml")
        cancel.sender = fire.sender
        cancel.references = [CAPReference(sender: fire.sender, identifier: fire.identifier, sent: CAPTime(microseconds: 0))]
        var warnings = CAPWarnings()
        _ = warnings.apply(fire, receivedMicroseconds: fire.sent.microseconds, settings: Self.here, origin: national)
        #expect(warnings.apply(cancel, receivedMicroseconds: fire.sent.microseconds, settings: Self.here, origin: prankster) == .cancelled([]),
                "another feed's cancel naming the sender and identifier, with any sent")
        var louder = fire
        louder.sent = CAPTime(microseconds: fire.sent.microseconds + Self.minute)
        louder.infos[0].severity = .minor
        #expect(warnings.apply(louder, receivedMicroseconds: fire.sent.microseconds, settings: Self.here, origin: prankster) == .ignored(.duplicate),
                "another feed's repeat does not replace it")
        var otherSender = cancel
        otherSender.identifier += "-2"
        otherSender.sender = "prankster@example"
        #expect(warnings.apply(otherSender, receivedMicroseconds: fire.sent.microseconds, settings: Self.here, origin: national) == .cancelled([]),
                "a reference to another sender's message is not followed")
        #expect(warnings.current[fire.key]?.level == .sounds)
        var byStaff = cancel
        byStaff.identifier += "-staff"
        #expect(warnings.apply(byStaff, receivedMicroseconds: fire.sent.microseconds, settings: Self.here,
                               origin: CAPOrigin(feed: "vigil warning import", staff: true)) == .cancelled([fire.key]))
        #expect(warnings.apply(fire, receivedMicroseconds: fire.sent.microseconds, settings: Self.here, origin: prankster) == .ignored(.superseded),
                "cancelled by staff: no feed's copy is taken again")
    }

    @Test func aWarningThatWouldSoundIsNeverRefusedForRoomAndNoneLastsMoreThanAWeek() throws {
        let fire = try Corpus.alert("fire-circle-near.xml"), far = try Corpus.alert("fire-far.xml")
        var warnings = CAPWarnings()
        for i in 0..<CAPWarnings.currentLimit {
            var quiet = far
            quiet.identifier = "FAR-\(i)"
            #expect(warnings.apply(quiet, receivedMicroseconds: far.sent.microseconds, settings: Self.here) == .new(quiet.key))
        }
        #expect(warnings.apply(fire, receivedMicroseconds: fire.sent.microseconds, settings: Self.here) == .new(fire.key))
        #expect(warnings.current.count == CAPWarnings.currentLimit && warnings.current[fire.key] != nil, "the oldest quiet one gave way")
        var forever = fire
        forever.identifier = "FOREVER"
        forever.infos[0].expires = CAPTime("9999-12-31T23:59:59+00:00")
        _ = warnings.apply(forever, receivedMicroseconds: fire.sent.microseconds, settings: Self.here)
        #expect(warnings.current[forever.key]?.expiresMicroseconds == fire.sent.microseconds + CAPWarning.maximumLifetimeMicroseconds)
    }

    /// The state is a value: the same messages in the same order give the same state, and it
    /// survives a checkpoint (JSON) unchanged.
    @Test func theSameMessagesGiveTheSameStateAndItSurvivesACheckpoint() throws {
        func run() throws -> CAPWarnings {
            var warnings = CAPWarnings()
            for name in Corpus.documents { try Self.take(name, into: &warnings) }
            _ = warnings.expire(nowMicroseconds: try #require(CAPTime("2026-11-30T13:00:00+11:00")).microseconds)
            return warnings
        }
        let a = try run(), b = try run()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(try encoder.encode(a) == encoder.encode(b), "equal states, equal bytes (the order a checkpoint is written in)")
        #expect(!a.current.isEmpty && !a.ended.isEmpty)
        let restored = try JSONDecoder().decode(CAPWarnings.self, from: JSONEncoder().encode(a))
        #expect(restored == a)
    }
}
