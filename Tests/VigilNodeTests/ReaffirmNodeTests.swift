import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

// Issue 10 item 6: a second long press re-affirms this box's SOS (never cancels it); cancelling
// at the box takes a deliberate hold, with its own amber feedback while held.

@Suite(.serialized) struct ReaffirmNodeTests {
    func configure(_ c: inout NodeConfiguration) {
        c.gestures.longPressNanoseconds = 2_000_000_000
        c.gestures.cancelHoldNanoseconds = 8_000_000_000
        c.sosExpiryMicroseconds = 3_600_000_000
    }

    /// Fails before issue 10: the second long press cancelled the SOS.
    @Test func aSecondLongPressReaffirmsAndOnlyAHoldCancels() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let (node, _) = try issue10Node(dir, clock: clock, configure: configure)
        let running = try NodeThread(node, name: "vigil-test-loop")
        await settled(running)

        issue10Press(running, holdMicroseconds: 2_500_000) // raises
        await advance(clock, running, byMicroseconds: 3_000_000, step: 50_000)
        let first = await onLoop(running) { $0.projections.alerts.active.first { $0.raisedHere } }
        let sos = try #require(first)
        #expect(await issue10Level(running, .red))

        await advance(clock, running, byMicroseconds: 60_000_000, step: 1_000_000)
        issue10Press(running, holdMicroseconds: 2_500_000) // re-affirms
        await advance(clock, running, byMicroseconds: 3_000_000, step: 50_000)
        let after = await onLoop(running) { $0.projections.alerts.alerts[sos.idText] }
        #expect(after?.cancelled == false, "a second long press never cancels")
        #expect((after?.expiresAtMicroseconds ?? 0) > sos.expiresAtMicroseconds, "the expiry is renewed")
        #expect(await issue10Level(running, .red))
        #expect(await onLoop(running) { $0.projections.alarms.reaffirmedWhileHeld } == false, "released: no feedback")

        issue10Press(running, holdMicroseconds: 8_500_000) // re-affirms at 2 s, cancels at 8 s
        await advance(clock, running, byMicroseconds: 4_000_000, step: 50_000)
        // Held past the long press with the SOS active: "keep holding to cancel".
        let amber = await onLoop(running) { OutputPolicy.decide($0.projections, running: true)[.amber] }
        #expect(amber?.pattern == OutputPolicy.cancelHoldBlink)
        #expect(amber?.reasons.first?.text.contains("keep holding to cancel") == true)
        await advance(clock, running, byMicroseconds: 6_000_000, step: 50_000)
        #expect(await onLoop(running) { $0.projections.alerts.alerts[sos.idText]?.cancelled } == true)
        #expect(!(await issue10Level(running, .red)))
        #expect(await onLoop(running) { OutputPolicy.decide($0.projections, running: true)[.amber]?.pattern } != OutputPolicy.cancelHoldBlink)
        running.requestStop(reason: "test")
        let stopped = try await ended(running)
        let stoppedBoard = try #require(stopped.board as? SimulatedBoard)

        let events = try storedEvents(dir)
        let reaffirmed = events.compactMap { e -> AlertReaffirmed? in if case .alertReaffirmed(let r) = e.body { r } else { nil } }
        #expect(reaffirmed.count == 2, "the second press and the hold each re-affirmed once")
        #expect(reaffirmed.allSatisfy { $0.id.text == sos.idText && $0.by == "button" })
        let cancelled = events.compactMap { e -> AlertCancelled? in if case .alertCancelled(let c) = e.body { c } else { nil } }
        #expect(cancelled.map(\.id.text) == [sos.idText])
        #expect(events.filter { if case .alertRaised = $0.body { true } else { false } }.count == 1)
        // The amber line showed the cancel-hold pattern (mostly on, quick dips) during the hold.
        #expect(stoppedBoard.transitions.contains { $0.line == .amber && $0.on })
    }

    @Test func holdingTheFirstPressOnDoesNotCancelTheSOSItRaised() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let (node, _) = try issue10Node(dir, clock: clock, configure: configure)
        let running = try NodeThread(node, name: "vigil-test-loop")
        await settled(running)
        issue10Press(running, holdMicroseconds: 12_000_000) // a frightened person holding on
        await advance(clock, running, byMicroseconds: 13_000_000, step: 50_000)
        #expect(await onLoop(running) { $0.projections.alerts.active.filter(\.raisedHere).count } == 1)
        #expect(await issue10Level(running, .red))
        running.requestStop(reason: "test")
        try await ended(running)
        #expect(try storedEvents(dir).allSatisfy { if case .alertCancelled = $0.body { false } else { true } })
    }

    /// A short press while a call for help from another box is waiting answers it over the air
    /// (AlertAcknowledged), even though its chirp sounds: only this box's own alarms are silenced.
    @Test func aShortPressAnswersAReceivedCallRatherThanSilencingIt() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let (node, _) = try issue10Node(dir, clock: clock, configure: configure)
        let running = try NodeThread(node, name: "vigil-test-loop")
        await settled(running)
        running.onLoop { n in
            var a = Alert()
            a.id = AlertID(origin: 0xFACE, counter: 3)
            a.kind = .sos
            a.severity = .critical
            a.expiresAtUs = n.clock.nowMicroseconds() + 600_000_000
            a.hops = 1
            n.append(.alertReceived(a))
        }
        await advance(clock, running, byMicroseconds: 100_000, step: 10_000)
        #expect(await onLoop(running) { OutputPolicy.decide($0.projections, running: true)[.buzzer]?.pattern } == OutputPolicy.callChirp)
        issue10Press(running, holdMicroseconds: 200_000)
        await advance(clock, running, byMicroseconds: 500_000, step: 10_000)
        #expect(await onLoop(running) { $0.projections.alerts.awaitingAcknowledgement.isEmpty }, "answered")
        #expect(await onLoop(running) { OutputPolicy.decide($0.projections, running: true)[.buzzer]?.pattern } == .off)
        running.requestStop(reason: "test")
        try await ended(running)
        let events = try storedEvents(dir)
        #expect(events.contains { if case .alertAcknowledged = $0.body { true } else { false } })
        #expect(!events.contains { if case .alarmAcknowledged = $0.body { true } else { false } }, "not merely silenced")
    }
}
