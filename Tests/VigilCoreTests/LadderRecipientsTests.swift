import Testing
import VigilCore
import VigilEvents

private let minute = LadderHarness.minute
private let hour = LadderHarness.hour

/// Issue 10, items 3 and 4: who the ladder's messages go to, and what they say about where.
@Suite("Ladder recipients and where")
struct LadderRecipientsTests {
    static let staff = ["+34 600 000 111", "staff@shelter.example"]

    static func settings(site: Bool = true) -> ProjectionSettings {
        var s = ProjectionSettings()
        s.ladder.staff = staff
        if site {
            s.ladder.siteName = "Shelter North"
            s.ladder.siteLocation = "40.4168,-3.7038"
        }
        return s
    }

    static func enrolled(ownAddress: String = "+34 600 000 222", room: String = "12B", settings: ProjectionSettings = settings()) -> LadderHarness {
        var h = LadderHarness(state: Projections(settings: settings))
        var r = LadderEvents.resident("r1", name: "Dora")
        r.ownAddress = ownAddress
        r.room = room
        h.append(LadderEvents.enrolled(r))
        return h
    }

    /// Item 3: the second step texts the resident (own address) and the staff; contacts hear
    /// nothing until the last step. Fails on the old code: the text went to the contacts.
    @Test func theSecondStepGoesToTheResidentAndStaffNotContacts() {
        var h = Self.enrolled()
        let t0 = h.now
        h.run(until: t0 + 4 * hour + 20 * minute)
        #expect(h.step("r1") == .text)
        let text = h.outbox.entries["r1/1/text"]
        #expect(text?.channel == .resident)
        #expect(text?.recipients == ["+34 600 000 222"])
        let staff = h.outbox.entries["r1/1/staff"]
        #expect(staff?.channel == .staff)
        #expect(staff?.recipients == Self.staff)
        // No contact address has been given anything yet.
        let contacts = Set(LadderEvents.contacts.map(\.address))
        #expect(h.outbox.entries.values.allSatisfy { Set($0.recipients).isDisjoint(with: contacts) })

        h.run(until: t0 + 4 * hour + 30 * minute)
        #expect(h.step("r1") == .notify)
        #expect(h.outbox.entries["r1/1/notify"]?.channel == .contacts)
        #expect(h.outbox.entries["r1/1/notify"]?.recipients == LadderEvents.contacts.map(\.address))
    }

    /// Issue 27: a text to the resident's id reached nobody (yet could be called delivered).
    @Test func withoutAnOwnAddressTheResidentGetsNoTextOnlyTheStaffDo() {
        var h = Self.enrolled(ownAddress: "")
        h.run(until: h.now + 4 * hour + 20 * minute)
        #expect(h.outbox.entries["r1/1/prompt"] == nil)
        #expect(h.outbox.entries["r1/1/text"] == nil)
        #expect(h.outbox.entries["r1/1/staff"] != nil)
    }

    /// "Has checked in and is OK" goes to whoever was told something was wrong.
    @Test func okGoesToWhoeverWasTold() {
        var atText = Self.enrolled()
        atText.run(until: atText.now + 4 * hour + 21 * minute)
        atText.append(.checkIn({ var c = CheckIn(); c.resident = "r1"; c.source = .checkInCli; return c }()))
        #expect(atText.outbox.entries["r1/1/ok-staff"]?.recipients == Self.staff)
        #expect(atText.outbox.entries["r1/1/ok"] == nil)

        var atNotify = Self.enrolled()
        atNotify.run(until: atNotify.now + 5 * hour)
        atNotify.append(.checkIn({ var c = CheckIn(); c.resident = "r1"; c.source = .checkInCli; return c }()))
        #expect(atNotify.outbox.entries["r1/1/ok-staff"]?.recipients == Self.staff)
        #expect(atNotify.outbox.entries["r1/1/ok"]?.recipients == LadderEvents.contacts.map(\.address))
    }

    /// Item 4: messages to contacts and staff carry the site, its location, the room and the
    /// time the ladder started. Fails on the old code: they named only the resident.
    @Test func emergencyMessagesSayWhereAndWhen() {
        var h = Self.enrolled()
        let t0 = h.now // 1970-01-11 00:00 UTC; the prompt comes at 04:00
        h.run(until: t0 + 4 * hour + 30 * minute)
        for id in ["r1/1/staff", "r1/1/notify"] {
            let text = h.outbox.entries[id]?.text ?? ""
            #expect(text.contains("Shelter North"), "\(id): \(text)")
            #expect(text.contains("40.4168,-3.7038"), "\(id): \(text)")
            #expect(text.contains("room 12B"), "\(id): \(text)")
            #expect(text.contains("ladder started 1970-01-11 04:00 UTC"), "\(id): \(text)")
        }
        #expect(h.resident("r1")?.ladderStartMicroseconds == t0 + 4 * hour)
    }

    @Test func theLadderStartIsInTheResidentsZoneWhenKnown() throws {
        var settings = Self.settings()
        settings.ladder.zones["Europe/Madrid"] = try TimeZoneRulesTests.madrid()
        var h = LadderHarness(state: Projections(settings: settings))
        var r = LadderEvents.resident("r1")
        r.timeZone = "Europe/Madrid"
        h.append(LadderEvents.enrolled(r))
        h.run(until: h.now + 4 * hour + 30 * minute)
        let text = h.outbox.entries["r1/1/notify"]?.text ?? ""
        #expect(text.contains("ladder started 1970-01-11 05:00 Europe/Madrid (UTC+01:00)"), "\(text)")
    }

    /// The settings travel with the checkpoint: checkpoint + tail equals replay.
    @Test func checkpointAndTailEqualReplay() throws {
        var h = Self.enrolled()
        h.run(until: h.now + 4 * hour + 20 * minute)
        var restarted = try h.restartedFromCheckpoint()
        #expect(restarted.state.escalations.context == h.state.escalations.context)
        restarted.run(until: h.now + 2 * hour)
        var fresh = Projections(settings: Self.settings())
        for e in restarted.log { fresh.apply(e) }
        #expect(try fresh.encoded() == restarted.state.encoded())
    }

    /// Item 7: a DowntimeDetected puts one message to the staff in the outbox. Fails on the old
    /// code: the event changed nothing.
    @Test func downtimeIsReportedToStaff() {
        var h = LadderHarness(state: Projections(settings: Self.settings()))
        var d = DowntimeDetected()
        d.fromUs = LadderHarness.origin - 2 * hour
        d.toUs = LadderHarness.origin
        let event = h.append(.downtimeDetected(d))
        let entries = h.outbox.entries.values.filter { $0.channel == .staff }
        #expect(entries.count == 1)
        #expect(entries.first?.id == "downtime/\(event.sequence)")
        #expect(entries.first?.recipients == Self.staff)
        let text = entries.first?.text ?? ""
        #expect(text.contains("Shelter North"))
        #expect(text.contains("from 1970-01-10 22:00 UTC to 1970-01-11 00:00 UTC (120 min)"), "\(text)")
        // Without a staff channel there is nobody to tell; the event is still in the log.
        var none = LadderHarness()
        none.append(.downtimeDetected(d))
        #expect(none.outbox.entries.isEmpty)
    }
}
