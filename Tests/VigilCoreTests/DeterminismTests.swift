import Testing
import VigilCore
import VigilEvents

@Suite("Deterministic replay")
struct DeterminismTests {
    /// A day in a shelter, compressed: every kind of event, devices coming and going (so pruning
    /// happens), duplicate and cancelled alerts, check-ins with awkward doubles, and two events
    /// that could not be decoded.
    static var history: [ProjectionInput] {
        var stream = EventStream()
        stream.add(nodeStarted(id: 0xB1A5), at: 1_000)
        stream.add(radio(.on), at: 1_000.5)
        for minute in 0..<30 {
            let t = 1_001 + Double(minute) * 60
            for device in 0..<6 where (device + minute) % 4 != 0 {
                let address = UInt64(0xC0_00_00_00_00_00) | UInt64(device * 7919 + minute / 10)
                stream.add(scanHit(address: address, type: device % 2 == 0 ? .addressRandom : .addressPublic,
                                   rssi: [Int32(-50 - device), Int32(-60 - minute % 7), -71],
                                   firstOffset: 1.5, lastOffset: 0.25, txPower: device == 3 ? -4 : nil,
                                   name: device == 1 ? "HR Strap \(minute % 3)" : ""), at: t)
            }
            if minute % 5 == 0 {
                stream.add(checkIn("R-\(minute % 3)", source: .checkInHeartRate, value: 0.1 * Double(minute) + 60.3), at: t + 1)
            }
            if minute % 7 == 0 {
                stream.add(.alertReceived(alert(origin: 0xAB, counter: UInt32(minute), kind: .roadHazard,
                                                expiresAt: t + 600, hops: 2, text: "hazard \(minute)")), at: t + 2)
                stream.add(.alertReceived(alert(origin: 0xAB, counter: UInt32(minute), hops: 1)), at: t + 3) // duplicate
            }
            if minute == 12 { stream.add(cancellation(origin: 0xAB, counter: 7), at: t + 4) }
            if minute == 20 { stream.add(cancellation(origin: 0xEE, counter: 1), at: t + 4) }
            if minute % 9 == 0 { stream.add(button(line: UInt32(minute % 2)), at: t + 5) }
        }
        stream.add(.alertRaised(alert(origin: 0xB1A5, counter: 1, kind: .medical, location: (-338_688_970, 1_512_092_950),
                                      text: "Room 12 \"east\" wing — ü")), at: 2_900)
        stream.add(checkIn("R-∞", source: .checkInCli, value: 1e-7), at: 2_901)
        stream.add(radio(.off, adapter: "hci1"), at: 2_950)
        stream.add(.nodeStopped(NodeStopped()), at: 3_000)

        var inputs = stream.inputs
        let next = stream.nextSequence
        inputs.insert(.undecodable(EventDecodingError(sequence: next, reason: .unknownKind(200))), at: 40)
        inputs.insert(.undecodable(EventDecodingError(sequence: next + 1, reason: .malformed(kind: 1, detail: "x"))), at: 90)
        return inputs
    }

    static func replay(_ inputs: some Sequence<ProjectionInput>, from start: Projections = Projections()) -> Projections {
        var state = start
        for input in inputs { state.apply(input) }
        return state
    }

    @Test func historyExercisesEveryProjection() {
        let state = Self.replay(Self.history)
        #expect(state.devices.pruned > 0)
        #expect(!state.devices.devices.isEmpty)
        #expect(state.alerts.duplicatesDropped > 0)
        #expect(state.alerts.alerts.values.contains { $0.cancelled })
        #expect(state.alerts.cancellationsForUnknown == 1)
        #expect(state.checkIns.residents.count == 4)
        #expect(state.health.undecodable == 2)
        #expect(state.appliedThrough == Self.history.count.asUInt64)
    }

    @Test func replayingTheSameEventsGivesIdenticalBytes() throws {
        let first = try Self.replay(Self.history).encoded()
        let second = try Self.replay(Self.history).encoded()
        #expect(first == second)
        #expect(first.count > 1_000)
    }

    @Test func decodedStateEqualsTheOriginalAndReencodesIdentically() throws {
        let state = Self.replay(Self.history)
        let bytes = try state.encoded()
        let decoded = try Projections.decoded(bytes)
        #expect(decoded == state)
        // The decoded dictionaries were filled in a different order: sorted encoding hides that.
        #expect(try decoded.encoded() == bytes)
    }

    @Test func checkpointPlusTailEqualsFullReplay() throws {
        let inputs = Self.history
        let full = Self.replay(inputs)
        let fullBytes = try full.encoded()
        for cut in stride(from: 0, through: inputs.count, by: 7) {
            let checkpoint = try Self.replay(inputs[..<cut]).encoded()
            let resumed = Self.replay(inputs[cut...], from: try Projections.decoded(checkpoint))
            #expect(resumed == full, "resumed from a checkpoint after \(cut) inputs")
            #expect(try resumed.encoded() == fullBytes, "resumed from a checkpoint after \(cut) inputs")
        }
    }

    @Test func settingsArePartOfTheState() throws {
        var settings = ProjectionSettings()
        settings.devicePruneAfterMicroseconds = micros(120)
        let state = Self.replay(Self.history, from: Projections(settings: settings))
        let decoded = try Projections.decoded(try state.encoded())
        #expect(decoded.devices.pruneAfterMicroseconds == micros(120))
        // A different setting gives a different, but equally deterministic, state.
        #expect(state != Self.replay(Self.history))
    }

    @Test func nonFiniteCheckInValuesStillEncode() throws {
        var stream = EventStream()
        stream.add(checkIn("R-1", source: .checkInCli, value: .nan), at: 1)
        stream.add(checkIn("R-2", source: .checkInCli, value: .infinity), at: 2)
        let state = Self.replay(stream.inputs)
        // JSON has no NaN or infinity: such values are dropped, the check-ins still count.
        let bytes = try state.encoded()
        let decoded = try Projections.decoded(bytes)
        #expect(decoded.checkIns.residents.count == 2)
        #expect(decoded.checkIns.residents["R-1"]?.value == nil)
        #expect(decoded == state)
    }
}

private extension Int {
    var asUInt64: UInt64 { UInt64(self) }
}
