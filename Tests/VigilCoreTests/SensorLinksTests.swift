import Foundation
import Testing
import VigilCore
import VigilEvents

/// Residents' heart-rate sensors as projections see them, and what their readings do to a
/// pulse-mode resident's ladder.
@Suite struct SensorLinksTests {
    let sensor: UInt64 = 0xC3_11_22_33_44_55
    let origin: UInt64 = 1_800_000_000_000_000
    var sequence: UInt64 = 0

    mutating func event(_ body: EventBody, at seconds: UInt64) -> Event {
        sequence += 1
        return Event(sequence: sequence, timeMicroseconds: origin + seconds * 1_000_000, body: body)
    }

    func resident(_ id: String = "r1", sensor: UInt64, mode: CheckInMode = .pulse, interval seconds: UInt64 = 600) -> Resident {
        var r = Resident()
        r.id = id
        r.mode = mode
        r.intervalUs = seconds * 1_000_000
        r.heartRateSensor = sensor
        r.heartRateSensorType = .addressRandom
        return r
    }

    func link(_ open: Bool, _ peer: UInt64, resident: String = "r1", reason: String = "") -> EventBody {
        var change = LinkChanged()
        change.peer = peer
        change.peerType = .addressRandom
        change.open = open
        change.role = .sensor
        change.resident = resident
        change.reason = reason
        return .linkChanged(change)
    }

    /// A reading as the box logs it: the value and the measurement's flags byte (0x06: contact
    /// supported and detected; 0x04: supported, not detected; 0x00: no contact sensing).
    func reading(_ bpm: Double, flags: UInt32, resident: String = "r1") -> EventBody {
        var c = CheckIn()
        c.resident = resident
        c.source = .checkInHeartRate
        c.value = bpm
        c.heartRateFlags = flags
        return .checkIn(c)
    }

    @Test mutating func aSensorIsLinkedAndItsLastReadingKeptAsTheLogSays() throws {
        var p = Projections()
        p.apply(event(.residentEnrolled(resident(sensor: sensor)), at: 0))
        var s = try #require(p.sensors.byResident["r1"])
        #expect(s.peer == sensor && s.random && !s.linked && s.readings == 0)

        p.apply(event(link(true, sensor), at: 1))
        p.apply(event(reading(72, flags: 0x06), at: 2))
        s = try #require(p.sensors.byResident["r1"])
        #expect(s.linked && s.linkChangedMicroseconds == origin + 1_000_000)
        #expect(s.readings == 1 && s.lastBeatsPerMinute == 72 && s.lastFlags == 0x06 && s.lastPositive && s.lastContact == "contact")

        p.apply(event(reading(70, flags: 0x04), at: 3))
        s = try #require(p.sensors.byResident["r1"])
        #expect(s.readings == 2 && !s.lastPositive && s.lastContact == "no contact")

        p.apply(event(link(false, sensor, reason: "the sensor disconnected"), at: 4))
        s = try #require(p.sensors.byResident["r1"])
        #expect(!s.linked && s.closeReason == "the sensor disconnected" && s.readings == 2)
        // A sensor's link is not a chat: no conversation appears for it.
        #expect(p.conversations.byPeer.isEmpty)
    }

    @Test mutating func aLinkOfAnotherSensorOrResidentChangesNothing() throws {
        var p = Projections()
        p.apply(event(.residentEnrolled(resident(sensor: sensor)), at: 0))
        p.apply(event(link(true, 0xC3_99_99_99_99_99), at: 1))
        p.apply(event(link(true, sensor, resident: "r2"), at: 1))
        // The same 48 bits as a public address: another device.
        guard case .linkChanged(var publicOne) = link(true, sensor) else { return }
        publicOne.peerType = .addressPublic
        p.apply(event(.linkChanged(publicOne), at: 1))
        #expect(p.sensors.byResident["r1"]?.linked == false)
        #expect(p.sensors.byResident["r2"] == nil)
    }

    @Test mutating func aNewSensorStartsFromNothingAndRemovingItForgetsIt() throws {
        var p = Projections()
        p.apply(event(.residentEnrolled(resident(sensor: sensor)), at: 0))
        p.apply(event(link(true, sensor), at: 1))
        p.apply(event(reading(72, flags: 0x06), at: 2))
        // Another setting changed, the same sensor: its state stays.
        var renamed = resident(sensor: sensor)
        renamed.name = "Ana"
        p.apply(event(.residentUpdated(renamed), at: 3))
        #expect(p.sensors.byResident["r1"]?.linked == true && p.sensors.byResident["r1"]?.readings == 1)
        #expect(p.escalations.residents["r1"]?.heartRateSensor == sensor && p.escalations.residents["r1"]?.heartRateSensorRandom == true)
        // Another sensor: a new entry.
        p.apply(event(.residentUpdated(resident(sensor: 0xC3_00_00_00_00_01)), at: 4))
        let s = try #require(p.sensors.byResident["r1"])
        #expect(s.peer == 0xC3_00_00_00_00_01 && !s.linked && s.readings == 0)
        // No sensor (0), then no resident.
        p.apply(event(.residentUpdated(resident(sensor: 0)), at: 5))
        #expect(p.sensors.byResident["r1"] == nil)
        p.apply(event(.residentUpdated(resident(sensor: sensor)), at: 6))
        var removed = ResidentRemoved()
        removed.id = "r1"
        p.apply(event(.residentRemoved(removed), at: 7))
        #expect(p.sensors.byResident.isEmpty)
    }

    /// Issue 14: readings with contact postpone a pulse-mode resident's ladder; readings without
    /// contact, and a sensor that went silent, do not.
    @Test mutating func readingsWithContactPostponeThePulseLadderAndOthersDoNot() throws {
        var p = Projections()
        p.apply(event(.residentEnrolled(resident(sensor: sensor, interval: 600)), at: 0))
        p.apply(event(link(true, sensor), at: 1))
        func due(_ p: Projections) throws -> UInt64 {
            let r = try #require(p.escalations.residents["r1"])
            return try #require(p.escalations.nextDeadline(for: r)).dueMicroseconds
        }
        #expect(try due(p) == origin + 600_000_000)

        p.apply(event(reading(72, flags: 0x06), at: 100))
        #expect(try due(p) == origin + 700_000_000, "contact detected: a sign of life")
        p.apply(event(reading(0x48, flags: 0x00), at: 200))
        #expect(try due(p) == origin + 800_000_000, "a sensor that cannot sense contact: its pulse counts")

        p.apply(event(reading(72, flags: 0x04), at: 300))
        #expect(try due(p) == origin + 800_000_000, "no skin contact: not a pulse")
        p.apply(event(reading(400, flags: 0x06), at: 310))
        #expect(try due(p) == origin + 800_000_000, "implausible: not a pulse")
        // The link closing is not a sign of life either.
        p.apply(event(link(false, sensor, reason: "the sensor disconnected"), at: 320))
        #expect(try due(p) == origin + 800_000_000)
        #expect(p.sensors.byResident["r1"]?.lastPositive == false)
    }

    @Test mutating func inTimeModeAReadingIsRecordedButTheResidentMustAnswer() throws {
        var p = Projections()
        p.apply(event(.residentEnrolled(resident(sensor: sensor, mode: .time, interval: 600)), at: 0))
        p.apply(event(reading(72, flags: 0x06), at: 100))
        let r = try #require(p.escalations.residents["r1"])
        #expect(p.escalations.nextDeadline(for: r)?.dueMicroseconds == origin + 600_000_000)
        #expect(p.sensors.byResident["r1"]?.readings == 1)
    }

    @Test mutating func theCheckpointHoldsTheSensorsAndReplayGivesTheSame() throws {
        var events: [Event] = []
        events.append(event(.residentEnrolled(resident(sensor: sensor)), at: 0))
        events.append(event(link(true, sensor), at: 1))
        events.append(event(reading(72, flags: 0x06), at: 2))
        events.append(event(reading(.nan, flags: 0x06), at: 3)) // never a NaN in the JSON
        events.append(event(link(false, sensor, reason: "gone"), at: 4))
        var live = Projections()
        for e in events.prefix(3) { live.apply(e) }
        var restored = try Projections.decoded(try live.encoded())
        for e in events.dropFirst(3) { live.apply(e); restored.apply(e) }
        var replayed = Projections()
        for e in events { replayed.apply(e) }
        #expect(try live.encoded() == replayed.encoded())
        #expect(try restored.encoded() == replayed.encoded())
        #expect(replayed.sensors.byResident["r1"]?.lastBeatsPerMinute == 0)
    }
}
