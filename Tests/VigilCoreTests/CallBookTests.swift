import Testing
@testable import VigilCore
import VigilEvents

/// Calls for help walking the call tree (issue 27): messages to people at once, tier by tier
/// while nobody takes the call, "STILL UNANSWERED" rounds, takers, cancels and expiries told to
/// everyone told, and replay giving the same calls.
struct CallBookTests {
    static let second = LadderHarness.second
    static let minute = LadderHarness.minute
    static let here: UInt64 = 0xA1
    static let staff = ["+34600111222", "+34600333444"]
    static let manager = "+34600555666"

    /// A tree of two tiers: the staff at once, the manager 5 minutes later; 3 passes, 10 minutes
    /// apart.
    static func state(tree: CallTree? = nil) -> Projections {
        var settings = ProjectionSettings()
        settings.ladder.siteName = "Shelter North"
        settings.ladder.siteLocation = "-33.86,151.21"
        settings.ladder.staff = staff
        settings.callTree = tree ?? CallTree(tiers: [CallTree.Tier(afterMicroseconds: 0, recipients: staff),
                                                    CallTree.Tier(afterMicroseconds: 5 * minute, recipients: [manager])],
                                             rounds: 3, repeatAfterMicroseconds: 10 * minute, configured: true)
        return Projections(settings: settings)
    }

    /// The node's CallClock done by hand: every due step appended at its due time, one by one.
    static func runCalls(_ h: inout LadderHarness, until time: UInt64) {
        var guardCount = 0
        while let d = h.state.calls.nextDeadline, d.dueMicroseconds <= time, guardCount < 100 {
            guardCount += 1
            h.run(until: d.dueMicroseconds)
            var deadline = CallDeadline()
            deadline.call = d.call
            deadline.tier = d.tier
            deadline.round = d.round
            deadline.dueUs = d.dueMicroseconds
            let stale = h.state.calls.staleDeadlines
            h.append(.callDeadline(deadline))
            #expect(h.state.calls.staleDeadlines == stale, "the clock's own deadline was stale")
        }
        h.run(until: time)
    }

    static func raisedSOS(counter: UInt32 = 1, expiresIn: UInt64 = 3_600 * second, at now: UInt64) -> EventBody {
        var a = alert(origin: here, counter: counter, kind: .sos)
        a.expiresAtUs = now + expiresIn
        return .alertRaised(a)
    }

    static func callEntries(_ h: LadderHarness) -> [Outbox.Entry] {
        h.outbox.entries.values.filter { $0.channel == .call }.sorted { ($0.createdSequence, $0.id) < ($1.createdSequence, $1.id) }
    }

    @Test func anSOSRaisedHereTellsTheFirstTierAtOnceWithWhatWhereAndHowToAnswer() throws {
        var h = LadderHarness(state: Self.state())
        h.append(Self.raisedSOS(at: h.now))
        let entries = Self.callEntries(h)
        #expect(entries.map(\.recipients) == [[Self.staff[0]], [Self.staff[1]]])
        let call = try #require(h.state.calls.open.first)
        let text = entries[0].text
        #expect(text.contains("SOS a1:1"))
        #expect(text.contains("Shelter North (-33.86,151.21)"))
        #expect(text.contains("raised at this box"))
        #expect(text.contains("since 1970-01-11 00:00 UTC"))
        #expect(text.contains("Reply TAKE or \(call.code)"))
        #expect(call.code.count == 5 && call.code.hasPrefix("T"))
        #expect(call.told == Self.staff)
    }

    @Test func theTreeWalksTierByTierThenStartsAgainMarkedStillUnansweredABoundedNumberOfTimes() {
        var h = LadderHarness(state: Self.state())
        let start = h.now
        h.append(Self.raisedSOS(at: start))
        Self.runCalls(&h, until: start + 4 * Self.minute)
        #expect(Self.callEntries(h).count == 2, "the manager waits 5 minutes")
        Self.runCalls(&h, until: start + 5 * Self.minute)
        #expect(Self.callEntries(h).last?.recipients == [Self.manager])
        #expect(Self.callEntries(h).last?.createdMicroseconds == start + 5 * Self.minute)
        // 10 minutes after the last tier started, the top again.
        Self.runCalls(&h, until: start + 15 * Self.minute)
        let second = Self.callEntries(h).filter { $0.text.hasPrefix("STILL UNANSWERED (pass 2 of 3)") }
        #expect(second.map(\.recipients) == [[Self.staff[0]], [Self.staff[1]]])
        Self.runCalls(&h, until: start + 10 * 60 * Self.minute)
        // 3 passes of 3 messages, and then nothing more.
        #expect(Self.callEntries(h).count == 9)
        #expect(h.state.calls.nextDeadline == nil)
        #expect(h.state.calls.open.first?.round == 2)
    }

    @Test func takingStopsTheTreeAndTellsEveryoneToldWhoTookIt() throws {
        var h = LadderHarness(state: Self.state())
        let start = h.now
        h.append(Self.raisedSOS(at: start))
        Self.runCalls(&h, until: start + 6 * Self.minute)
        var t = AlertTaken()
        t.id = AlertID(origin: Self.here, counter: 1)
        t.by = "Luis"
        t.via = .sms
        h.append(.alertTaken(t))
        let call = try #require(h.state.calls.open.first)
        #expect(call.taken?.by == "Luis")
        #expect(h.state.calls.nextDeadline == nil, "nothing escalates once taken")
        let taken = Self.callEntries(h).filter { $0.id.contains("/taken/") }
        #expect(Set(taken.flatMap(\.recipients)) == Set(Self.staff + [Self.manager]))
        #expect(taken.allSatisfy { $0.text.hasPrefix("TAKEN:") && $0.text.contains("Taken by Luis (by SMS)") })
        // A second taking changes nothing: the first is who took it.
        t.by = "Marta"
        h.append(.alertTaken(t))
        #expect(h.state.calls.open.first?.taken?.by == "Luis")
        #expect(Self.callEntries(h).filter { $0.id.contains("/taken/") }.count == 3)
        // The red light says it: the dip of "answered".
        let red = OutputPolicy.decide(h.state, running: true)[.red]
        #expect(red?.pattern == OutputPolicy.acknowledgedPulse)
        #expect(red?.reasons.contains { $0.text.contains("taken by Luis") } == true)
    }

    @Test func aCancelTellsEveryoneToldAndEndsTheCall() {
        var h = LadderHarness(state: Self.state())
        h.append(Self.raisedSOS(at: h.now))
        var c = AlertCancelled()
        c.id = AlertID(origin: Self.here, counter: 1)
        c.reason = "false alarm"
        h.append(.alertCancelled(c))
        let ends = Self.callEntries(h).filter { $0.id.contains("/end/") }
        #expect(ends.flatMap(\.recipients) == Self.staff)
        #expect(ends.allSatisfy { $0.text.hasPrefix("CANCELLED:") && $0.text.contains("false alarm") })
        #expect(h.state.calls.open.isEmpty)
        #expect(h.state.calls.nextDeadline == nil)
    }

    @Test func anExpiryTellsEveryoneTold() {
        var h = LadderHarness(state: Self.state())
        h.append(Self.raisedSOS(expiresIn: 60 * Self.second, at: h.now))
        h.run(until: h.now + 61 * Self.second)
        var x = AlertExpired()
        x.id = AlertID(origin: Self.here, counter: 1)
        x.expiresAtUs = h.now - Self.second
        h.append(.alertExpired(x))
        #expect(Self.callEntries(h).filter { $0.text.hasPrefix("ENDED:") }.count == 2)
        #expect(h.state.calls.open.isEmpty)
    }

    @Test func aCallHeardFromAnotherBoxIsACallHereTooAndItsAcknowledgementTakesIt() throws {
        var h = LadderHarness(state: Self.state())
        var a = alert(origin: 0xB2, counter: 7, kind: .medical, hops: 2, location: (-338_600_000, 1_512_100_000), text: "fall")
        a.expiresAtUs = h.now + 3_600 * Self.second
        h.append(.alertReceived(a))
        let call = try #require(h.state.calls.open.first)
        #expect(call.kind == .medical)
        #expect(call.summary.contains("from box b2, 2 hops away"))
        #expect(call.summary.contains("location -33.86,151.21"))
        // A person at another box pressed its button: the call is taken.
        var ack = AlertAcknowledged()
        ack.id = AlertID(origin: 0xB2, counter: 7)
        ack.heardFrom = 0xC3
        h.append(.alertAcknowledged(ack))
        #expect(h.state.calls.open.first?.taken?.by == "a person at box c3")
    }

    @Test func anotherBoxsWordNeverStopsThisBoxsOwnCall() {
        var h = LadderHarness(state: Self.state())
        // Acknowledgements heard before the SOS exists (a stolen box guessing the next counters).
        var early = AlertAcknowledged()
        early.id = AlertID(origin: Self.here, counter: 1)
        early.heardFrom = 0xC3
        h.append(.alertAcknowledged(early))
        h.append(Self.raisedSOS(at: h.now))
        #expect(h.state.calls.open.first?.taken == nil, "an acknowledgement from before the call takes nothing")
        // Another box acknowledges it, and another box's taking arrives from the hub's feed.
        var ack = AlertAcknowledged()
        ack.id = AlertID(origin: Self.here, counter: 1)
        ack.heardFrom = 0xC3
        h.append(.alertAcknowledged(ack))
        var t = AlertTaken()
        t.id = AlertID(origin: Self.here, counter: 1)
        t.by = "Luis"
        t.via = .page
        t.heardFrom = 0xC3
        h.append(.alertTaken(t))
        #expect(h.state.calls.open.first?.taken == nil)
        #expect(h.state.calls.nextDeadline != nil, "the tree still walks")
        // A coordinator at the hub (the feed's own answer) does take it.
        var coordinator = AlertAcknowledged()
        coordinator.id = AlertID(origin: Self.here, counter: 1)
        coordinator.heardFrom = UInt64.max
        h.append(.alertAcknowledged(coordinator))
        #expect(h.state.calls.open.first?.taken?.by == "a coordinator at the hub")
    }

    @Test func callsFromOtherBoxesAreBoundedPerBox() {
        var h = LadderHarness(state: Self.state())
        for counter in 1...10 {
            var a = alert(origin: 0xB2, counter: UInt32(counter), kind: .sos)
            a.expiresAtUs = 0
            h.append(.alertReceived(a))
        }
        #expect(h.state.calls.open.count == CallBook.maximumOpenPerRemoteBox)
        #expect(h.state.calls.refusedRemoteCalls == 6)
        #expect(h.state.alerts.active.count == 10, "the rest stay alerts")
    }

    @Test func warningsAreNotCallsForHelp() {
        var h = LadderHarness(state: Self.state())
        var a = alert(origin: 0xB2, counter: 1, kind: .flood)
        a.expiresAtUs = h.now + 3_600 * Self.second
        h.append(.alertReceived(a))
        #expect(h.state.calls.calls.isEmpty)
        #expect(Self.callEntries(h).isEmpty)
    }

    @Test func aResidentsAlarmStepIsACallEndedByTheirCheckIn() throws {
        var h = LadderHarness(state: Self.state())
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", name: "Ana", interval: 10 * Self.minute,
                                                            confirm: 5 * Self.minute, textToAlarm: 5 * Self.minute,
                                                            alarmToNotify: 5 * Self.minute)))
        Self.runCalls(&h, until: h.now + 19 * Self.minute)
        #expect(h.state.calls.calls.isEmpty, "prompt and text are not yet a call")
        Self.runCalls(&h, until: h.now + 2 * Self.minute)
        let call = try #require(h.state.calls.open.first)
        #expect(call.kind == .resident)
        #expect(call.summary.hasPrefix("ALARM: Ana has not answered"))
        h.append(checkIn("r1"))
        #expect(h.state.calls.open.isEmpty)
        #expect(Self.callEntries(h).filter { $0.text.hasPrefix("RESOLVED:") }.count == 2)
    }

    @Test func aTreeWithNobodyShowsOnAmberThatNobodyCanBeTold() {
        var h = LadderHarness(state: Self.state(tree: CallTree()))
        h.append(Self.raisedSOS(at: h.now))
        #expect(Self.callEntries(h).isEmpty)
        #expect(h.state.calls.nobodyToTell.count == 1)
        let amber = OutputPolicy.decide(h.state, running: true)[.amber]
        #expect(amber?.pattern == OutputPolicy.unreachableBlink)
        #expect(amber?.reasons.first?.text.contains("has nobody to tell") == true)
    }

    @Test func aReplyTakesTheLastCallSentToThatNumberOrTheOneItsCodeNames() throws {
        var h = LadderHarness(state: Self.state())
        h.append(Self.raisedSOS(counter: 1, at: h.now))
        h.run(until: h.now + Self.minute)
        h.append(Self.raisedSOS(counter: 2, at: h.now))
        let first = try #require(h.state.calls.calls[CallBook.id(alert: "a1:1")])
        let second = try #require(h.state.calls.calls[CallBook.id(alert: "a1:2")])
        // Two calls told: without a code it is ambiguous (the newest first, for the question).
        #expect(h.state.calls.callsForReply(from: Self.staff[0], code: nil, writtenAt: h.now).map(\.id) == [second.id, first.id])
        #expect(h.state.calls.callForReply(from: Self.staff[0], code: nil, writtenAt: h.now) == nil)
        #expect(h.state.calls.callForReply(from: Self.staff[0], code: first.code.lowercased(), writtenAt: h.now)?.id == first.id)
        // Written before the second call was told: only the first can be meant.
        #expect(h.state.calls.callForReply(from: Self.staff[0], code: nil, writtenAt: h.now - 1)?.id == first.id)
        #expect(h.state.calls.callForReply(from: "+34699999999", code: nil, writtenAt: h.now) == nil, "a number never told takes nothing")
        #expect(h.state.calls.callForReply(from: Self.manager, code: first.code, writtenAt: h.now) == nil, "the manager was not told yet")
    }

    @Test func shortCodesOfOpenCallsDiffer() {
        var h = LadderHarness(state: Self.state())
        for counter in 1...200 { h.append(Self.raisedSOS(counter: UInt32(counter), at: h.now)) }
        let codes = h.state.calls.open.map(\.code)
        #expect(Set(codes).count == codes.count)
    }

    @Test func replayAndCheckpointGiveTheSameCallsTiersAndTakers() throws {
        var h = LadderHarness(state: Self.state())
        let start = h.now
        h.append(Self.raisedSOS(at: start))
        Self.runCalls(&h, until: start + 16 * Self.minute)
        var t = AlertTaken()
        t.id = AlertID(origin: Self.here, counter: 1)
        t.by = "Luis"
        t.via = .page
        h.append(.alertTaken(t))
        var fresh = Self.state()
        for e in h.log { fresh.apply(e) }
        #expect(try fresh.encoded() == h.state.encoded())
        let restored = try Projections.decoded(h.state.encoded())
        #expect(restored.calls == h.state.calls)
    }
}
