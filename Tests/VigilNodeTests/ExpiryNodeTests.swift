import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

// Issue 10: time acts on its own. A quiet box (no advertisers: nothing else arrives) ends an SOS
// at its expiry — AlertExpired logged once, red and buzzer off at once — and replay agrees.

@Suite(.serialized) struct ExpiryNodeTests {
    @Test func anSOSOnAQuietBoxExpiresOnItsOwnAndOutputsFollowAtOnce() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 0)
        config.gestures.longPressNanoseconds = 300_000_000
        config.gestures.debounceNanoseconds = 30_000_000
        config.sosExpiryMicroseconds = 60_000_000
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try NodeThread(node, name: "vigil-test-loop")
        await settled(running)
        running.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
        await advance(clock, running, byMicroseconds: 1_000_000, step: 10_000)
        #expect(await issue10Level(running, .red), "the SOS is raised")
        #expect(await onLoop(running) { $0.projections.alerts.active.count } == 1)

        // Just before the expiry nothing has changed; the timer is armed for it.
        await advance(clock, running, byMicroseconds: 58_000_000, step: 1_000_000)
        #expect(await issue10Level(running, .red))
        #expect(await onLoop(running) { $0.scheduler.isArmed(Expiries.expiryTimer) })
        // Past the expiry, and on for ten minutes with nothing else happening.
        await advance(clock, running, byMicroseconds: 2_000_000, step: 100_000)
        #expect(!(await issue10Level(running, .red)), "red goes off at the expiry")
        #expect(!(await issue10Level(running, .buzzer)), "the buzzer stops at the expiry")
        #expect(await onLoop(running) { $0.projections.alerts.active.isEmpty })
        let off = clock.nowMicroseconds()
        await advance(clock, running, byMicroseconds: 600_000_000, step: 10_000_000)
        #expect(await onLoop(running) { !$0.scheduler.isArmed(Expiries.expiryTimer) })
        #expect(await onLoop(running) { n in
            ((n.board as? SimulatedBoard)?.transitions ?? []).filter { $0.line == .red && $0.timeMicroseconds >= off }.isEmpty
        }, "red stays off")
        running.requestStop(reason: "test")
        let stopped = try await ended(running)
        let stoppedBoard = try #require(stopped.board as? SimulatedBoard)

        let events = try storedEvents(dir)
        let raised = events.compactMap { e -> Alert? in if case .alertRaised(let a) = e.body { a } else { nil } }
        let expired = events.compactMap { e -> (Event, AlertExpired)? in if case .alertExpired(let x) = e.body { (e, x) } else { nil } }
        try #require(raised.count == 1)
        #expect(expired.count == 1, "AlertExpired is logged once")
        #expect(expired.first?.1.id == raised[0].id)
        #expect(expired.first?.1.expiresAtUs == raised[0].expiresAtUs)
        #expect((expired.first?.0.timeMicroseconds ?? 0) >= raised[0].expiresAtUs)
        #expect((expired.first?.0.timeMicroseconds ?? .max) < raised[0].expiresAtUs + 1_000_000, "at that moment")
        // Red went off no later than the first step after the expiry.
        let redOff = stoppedBoard.transitions.last { $0.line == .red && !$0.on }
        #expect(redOff.map { $0.timeMicroseconds <= raised[0].expiresAtUs + 200_000 } == true)

        // Replay from sequence 0 gives the same state: the alert ended by the event.
        var replayed = Projections(settings: config.projections)
        for e in events { replayed.apply(e) }
        #expect(replayed.alerts.active.isEmpty)
        #expect(replayed.alerts.alerts[raised[0].id.text]?.expired == true)
    }
}
