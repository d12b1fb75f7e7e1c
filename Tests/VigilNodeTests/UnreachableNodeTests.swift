import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

// Issue 10 item 5: without notify.command nothing is recorded as delivered; messages stay
// pending, are retried, and amber says "no way to tell anyone".

@Suite(.serialized) struct UnreachableNodeTests {
    /// Fails before issue 10: the prompt was recorded delivered (notifier "log").
    @Test func withoutANotifierMessagesStayPendingAndAmberSaysSo() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let (node, _) = try issue10Node(dir, clock: clock) { c in
            c.notifier.command = nil
            c.notifier.retryBaseMicroseconds = 1_000_000
        }
        let running = try NodeThread(node, name: "vigil-test-loop")
        await settled(running)
        running.onLoop { n in
            var r = Resident()
            r.id = "room-1"
            r.mode = .time
            r.intervalUs = 60_000_000
            r.confirmUs = 3_600_000_000
            r.textToAlarmUs = 3_600_000_000
            r.alarmToNotifyUs = 3_600_000_000
            var c = Contact()
            c.name = "Luis"
            c.address = "+34600000000"
            r.contacts = [c]
            r.ownAddress = "+34600000999"
            n.append(.residentEnrolled(r))
        }
        await advance(clock, running, byMicroseconds: 70_000_000, step: 500_000)
        let prompt = await onLoop(running) { $0.projections.outbox.entries["room-1/1/prompt"] }
        #expect(prompt?.delivered == false, "nobody was told: not delivered")
        #expect(prompt?.lastNotifier == "none")
        #expect((prompt?.attempts ?? 0) >= 2, "retried with the outbox's back-off")
        // The resident answers; the prompt message is still stuck, and amber says so.
        running.onLoop { n in
            var c = CheckIn()
            c.resident = "room-1"
            c.source = .checkInButton
            n.append(.checkIn(c))
        }
        await advance(clock, running, byMicroseconds: 100_000, step: 10_000)
        let amber = await onLoop(running) { OutputPolicy.decide($0.projections, running: true)[.amber] }
        #expect(amber?.pattern == OutputPolicy.unreachableBlink)
        #expect(amber?.reasons.first?.text.contains("room-1/1/prompt") == true)
        running.requestStop(reason: "test")
        let stopped = try await ended(running)
        let stoppedBoard = try #require(stopped.board as? SimulatedBoard)

        let attempts = try storedEvents(dir).compactMap { e -> OutboxAttempt? in if case .outboxAttempt(let a) = e.body { a } else { nil } }
        #expect(!attempts.isEmpty)
        #expect(attempts.allSatisfy { !$0.delivered && $0.notifier == "none" && $0.error.contains("notify.command") })
        #expect(stoppedBoard.transitions.contains { $0.line == .amber && $0.on })
    }
}
