import Testing
@testable import VigilCore
import VigilEvents

/// Calls for help and the box's troubles as the alarm receiving centre hears them (issue 27,
/// item 3): one alarm per call, never repeated by a later round nor told of a taking, restored
/// at the call's end; troubles raised once and restored once.
struct AlarmCentreCallTests {
    static let minute = LadderHarness.minute
    static let staff = ["+34600111222"]

    /// Staff at once, the centre 2 minutes later; 3 rounds, 5 minutes apart.
    static func state() -> Projections {
        CallBookTests.state(tree: CallTree(tiers: [CallTree.Tier(afterMicroseconds: 0, recipients: staff),
                                                   CallTree.Tier(afterMicroseconds: 2 * minute, recipients: ["arc"])],
                                           rounds: 3, repeatAfterMicroseconds: 5 * minute, configured: true))
    }

    static func arcEntries(_ h: LadderHarness) -> [Outbox.Entry] {
        h.outbox.entries.values.filter { $0.channel == .arc }.sorted { ($0.createdSequence, $0.id) < ($1.createdSequence, $1.id) }
    }

    @Test func theCentreHearsACallOnceAtItsTierAndNotAgainInLaterRounds() throws {
        var h = LadderHarness(state: Self.state())
        h.append(CallBookTests.raisedSOS(at: h.now))
        #expect(Self.arcEntries(h).isEmpty, "the centre's tier starts 2 minutes in")
        CallBookTests.runCalls(&h, until: h.now + 2 * Self.minute)
        let first = Self.arcEntries(h)
        #expect(first.count == 1)
        #expect(first.first?.recipients == ["arc"])
        let number = try #require(h.state.calls.open.first?.number)
        #expect((1...999).contains(number))
        #expect(first.first?.alarm == AlarmSignal(.sos, number: number))
        // Two more rounds: the staff are told again, the centre (which holds its alarm) is not.
        CallBookTests.runCalls(&h, until: h.now + 30 * Self.minute)
        #expect(h.state.calls.open.first?.round == 2)
        #expect(Self.arcEntries(h).count == 1)
    }

    @Test func aTakingIsNotToldToTheCentreButTheEndIsItsRestore() throws {
        var h = LadderHarness(state: Self.state())
        h.append(CallBookTests.raisedSOS(at: h.now))
        CallBookTests.runCalls(&h, until: h.now + 2 * Self.minute)
        let call = try #require(h.state.calls.open.first)
        var t = AlertTaken()
        t.id = AlertID(origin: CallBookTests.here, counter: 1)
        t.by = "Luis"
        t.via = .cli
        h.append(.alertTaken(t))
        #expect(Self.arcEntries(h).count == 1, "no message to the centre for a taking")
        var c = AlertCancelled()
        c.id = AlertID(origin: CallBookTests.here, counter: 1)
        h.append(.alertCancelled(c))
        let entries = Self.arcEntries(h)
        #expect(entries.count == 2)
        #expect(entries.last?.alarm == AlarmSignal(.sos, restore: true, number: call.number))
    }

    @Test func aCallEndedBeforeTheCentresTierIsNeverRestoredThere() {
        var h = LadderHarness(state: Self.state())
        h.append(CallBookTests.raisedSOS(at: h.now))
        var c = AlertCancelled()
        c.id = AlertID(origin: CallBookTests.here, counter: 1)
        h.append(.alertCancelled(c))
        #expect(Self.arcEntries(h).isEmpty)
    }

    @Test func eachCallHasItsOwnNumberForTheCentre() {
        var h = LadderHarness(state: CallBookTests.state(tree: .standard(staff: Self.staff, arc: true)))
        h.append(CallBookTests.raisedSOS(counter: 1, at: h.now))
        h.append(CallBookTests.raisedSOS(counter: 2, at: h.now))
        // The default tree's second tier (the centre) starts at once, by the call clock's deadline.
        CallBookTests.runCalls(&h, until: h.now)
        let numbers = Self.arcEntries(h).compactMap(\.alarm?.number)
        #expect(numbers.count == 2 && Set(numbers).count == 2 && numbers.allSatisfy { (1...999).contains($0) }, "\(numbers)")
        #expect(Set(h.state.calls.open.map(\.number)) == Set(numbers))
    }

    @Test func aCallsCodeAndNumberComeFromItsIDAndTimeNotItsSequence() {
        // A call opened before the log was open is carried into it with a new sequence
        // (decision 0002): the code its messages gave and the number the centre heard stay.
        var early = LadderHarness(state: CallBookTests.state(tree: .standard(staff: Self.staff, arc: true)))
        early.append(CallBookTests.raisedSOS(counter: 7, at: early.now))
        var later = LadderHarness(state: CallBookTests.state(tree: .standard(staff: Self.staff, arc: true)))
        for _ in 0..<5 { later.append(.nodeStarted(NodeStarted())) }
        later.append(CallBookTests.raisedSOS(counter: 7, at: early.now))
        let a = early.state.calls.open.first, b = later.state.calls.open.first
        #expect(a != nil && a?.startedSequence != b?.startedSequence)
        #expect(a?.code == b?.code && a?.number == b?.number)
    }

    @Test func radioTroubleIsRaisedOnceAndRestoredOnceAndTheBoxsOwnStopIsNone() {
        var h = LadderHarness(state: CallBookTests.state(tree: .standard(staff: Self.staff, arc: true)))
        var stopping = RadioStateChanged()
        stopping.state = .off
        stopping.reason = NodeHealth.radioStopReason
        h.append(.radioStateChanged(stopping))
        #expect(Self.arcEntries(h).isEmpty, "a stop of the box is not a trouble")
        h.append(radio(.off))
        h.append(radio(.unknown))
        h.append(radio(.on))
        h.append(radio(.on))
        #expect(Self.arcEntries(h).compactMap(\.alarm) == [AlarmSignal(.radioLost), AlarmSignal(.radioLost, restore: true)])
    }

    @Test func aSalvagedLogIsReportedEachTimeAndTroublesNeedACentreInTheTree() {
        var h = LadderHarness(state: CallBookTests.state(tree: .standard(staff: Self.staff, arc: true)))
        h.append(.logSalvaged(LogSalvaged()))
        h.append(.logSalvaged(LogSalvaged()))
        #expect(Self.arcEntries(h).compactMap(\.alarm) == [AlarmSignal(.logDamaged), AlarmSignal(.logDamaged)])
        var without = LadderHarness(state: CallBookTests.state(tree: .standard(staff: Self.staff, arc: false)))
        without.append(radio(.off))
        without.append(.logSalvaged(LogSalvaged()))
        #expect(without.outbox.entries.isEmpty)
    }

    @Test func replayGivesTheSameCentreMessagesAndTroubles() throws {
        var h = LadderHarness(state: Self.state())
        h.append(CallBookTests.raisedSOS(at: h.now))
        h.append(radio(.off))
        CallBookTests.runCalls(&h, until: h.now + 3 * Self.minute)
        let decoded = try Projections.decoded(try h.state.encoded())
        #expect(decoded.calls == h.state.calls)
        #expect(decoded.outbox.entries == h.state.outbox.entries)
        #expect(decoded.calls.raisedTroubles == [.radioLost])
    }
}
