import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

@Suite(.serialized) struct AlarmTests {
    func fastGestures(_ c: inout NodeConfiguration) {
        c.gestures.longPressNanoseconds = 300_000_000
        c.gestures.debounceNanoseconds = 30_000_000
    }

    @Test func aLongPressRaisesAnSOSThatIsDurableBeforeTheRedLEDComesOn() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 1)
        fastGestures(&config)
        config.gestures.cancelHoldNanoseconds = 800_000_000
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        // A short press (nothing happens: no alarm sounds), a long press with bounce, then a
        // second press held past the cancel hold: it re-affirms the SOS at the long press and
        // cancels it only at the deliberate hold (issue 10's decision).
        // All presses are queued up front; the board delivers each edge at its time.
        node.onLoop { n in
            let sim = n.board as? SimulatedBoard
            try? sim?.press(holdMicroseconds: 100_000)
            try? sim?.press(holdMicroseconds: 500_000, bounces: 3, afterMicroseconds: 300_000)
            try? sim?.press(holdMicroseconds: 900_000, afterMicroseconds: 1_200_000)
        }
        let stopped = try await run(node, on: clock, forMicroseconds: 2_800_000, step: 10_000)
        let stoppedBoard = try #require(stopped.board as? SimulatedBoard)

        let events = try storedEvents(dir)
        let raised = events.compactMap { e -> (Event, Alert)? in if case .alertRaised(let a) = e.body { (e, a) } else { nil } }
        let cancelled = events.compactMap { e -> (Event, AlertCancelled)? in if case .alertCancelled(let c) = e.body { (e, c) } else { nil } }
        try #require(raised.count == 1, "one SOS, despite the bounces and the short press")
        #expect(events.filter { if case .buttonInput = $0.body { true } else { false } }.count == 2 + 8 + 2,
                "every edge is logged, bounces included")
        #expect(raised[0].1.kind == .sos)
        #expect(raised[0].1.id.origin == stopped.nodeID)
        let reaffirmed = events.compactMap { e -> AlertReaffirmed? in if case .alertReaffirmed(let r) = e.body { r } else { nil } }
        #expect(reaffirmed.map(\.id) == [raised[0].1.id], "the second long press re-affirmed, it did not cancel")
        #expect(cancelled.count == 1)
        #expect(cancelled.first?.1.id == raised[0].1.id)
        #expect(events.filter { if case .alarmAcknowledged = $0.body { true } else { false } }.isEmpty)

        // Red went on after the SOS event's time (it was durable first) and off after the cancel.
        let red = stoppedBoard.transitions.filter { $0.line == .red }
        #expect(red.map(\.on) == [true, false])
        #expect(red[0].timeMicroseconds >= raised[0].0.timeMicroseconds)
        #expect(red[1].timeMicroseconds >= (cancelled.first?.0.timeMicroseconds ?? .max))
        // Amber blinked while the button was held, before the SOS.
        let amberOn = stoppedBoard.transitions.filter { $0.line == .amber && $0.on }
        #expect(amberOn.first.map { $0.timeMicroseconds <= raised[0].0.timeMicroseconds } == true)
        // The SOS is waiting in the outbox for the radio to broadcast it.
        #expect(stopped.projections.outbox.pending.contains { $0.channel == .broadcast })
    }

    @Test func aShortPressSilencesASoundingSOSButNotItsLight() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 1)
        fastGestures(&config)
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        node.onLoop { n in
            let sim = n.board as? SimulatedBoard
            try? sim?.press(holdMicroseconds: 400_000)
            try? sim?.press(holdMicroseconds: 80_000, afterMicroseconds: 900_000)
        }
        let stopped = try await run(node, on: clock, forMicroseconds: 1_600_000, step: 10_000)
        let stoppedBoard = try #require(stopped.board as? SimulatedBoard)
        let events = try storedEvents(dir)
        #expect(events.contains { if case .alarmAcknowledged = $0.body { true } else { false } })
        #expect(stopped.projections.alarms.silenced.count == 1)
        let buzzer = stoppedBoard.transitions.filter { $0.line == .buzzer }
        #expect(buzzer.first?.on == true, "the SOS tone sounded")
        #expect(buzzer.last?.on == false)
        // Red stayed on until the node stopped.
        #expect(stoppedBoard.transitions.filter { $0.line == .red }.map(\.on) == [true, false])
    }

    @Test func theLadderRunsOnAManualClockAndEveryStepIsLoggedOnce() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 1)
        config.notifier.retryBaseMicroseconds = 1_000_000
        let clock = ManualClock()
        try enrol(dir, config: config, interval: 60_000_000, step: 10_000_000, at: clock.nowMicroseconds())
        // The 60 s interval and three 10 s steps pass, and as long again after them (240 s, as
        // the 1.2 s run at 200x this test used to make), one second at a time.
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger)
        let stopped = try await run(node, on: clock, forMicroseconds: 240_000_000, step: 1_000_000)

        let events = try storedEvents(dir)
        let steps = events.compactMap { e -> LadderStep? in if case .deadlineReached(let d) = e.body { d.step } else { nil } }
        #expect(steps == [.prompt, .text, .alarm, .notify])
        // No notifier is configured: nothing is claimed delivered (issue 10); every message was
        // tried and stays pending, and the box says it can tell nobody.
        let attempts = events.compactMap { e -> OutboxAttempt? in if case .outboxAttempt(let a) = e.body { a } else { nil } }
        #expect(attempts.allSatisfy { !$0.delivered && $0.notifier == "none" })
        #expect(Set(attempts.map(\.entry)).isSuperset(of: ["room-1/1/prompt", "room-1/1/notify"]))
        #expect(OutputPolicy.decide(stopped.projections, running: true)[.amber]?.reasons.contains { $0.text.contains("no way to tell anyone") } == true)
        #expect(stopped.projections.escalations.residents["room-1"]?.ladderStep == .notify)
    }

    @Test func aFailingNotifierIsRetriedWithBackoffUntilItSucceeds() async throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        // Fails twice (a modem that is busy), then accepts; it records what it was given.
        let script = dir.path + "/notify.sh"
        try """
        #!/bin/sh
        n=$(cat "\(dir.path)/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "\(dir.path)/count"
        cat >> "\(dir.path)/received"
        [ $n -ge 3 ] || { echo "modem busy" >&2; exit 1; }
        """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        var config = testConfiguration(dir, advertisers: 1)
        config.notifier.command = script
        config.notifier.retryBaseMicroseconds = 1_000_000
        let clock = ManualClock()
        try enrol(dir, config: config, interval: 60_000_000, step: 3_600_000_000, at: clock.nowMicroseconds())
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger)
        let running = try await start(node)
        // The prompt falls due after the 60 s interval; each retry after its back-off (1 s, 2 s, ...).
        // The notifier is a real process: after each step, wait until the one started (if any)
        // has exited and its attempt is durable. Its timeout (30 s) is on the manual clock, which
        // stands still meanwhile, so it never cuts the script short.
        for _ in 0..<200 {
            clock.advance(byMicroseconds: 500_000)
            await settled(running)
            #expect(await untilChildProcess(running) { !$0.scheduler.isArmed(Deliveries.timeoutTimer) })
            await settled(running)
            if await onLoop(running, { $0.projections.outbox.entries["room-1/1/prompt"]?.delivered == true }) { break }
        }
        try await stop(running)

        let attempts = try storedEvents(dir).compactMap { e -> OutboxAttempt? in if case .outboxAttempt(let a) = e.body { a } else { nil } }
        #expect(attempts.map(\.attempt) == [1, 2, 3])
        #expect(attempts.map(\.delivered) == [false, false, true])
        #expect(attempts.first?.error.contains("modem busy") == true)
        #expect(attempts.allSatisfy { $0.notifier == "command" && $0.entry == "room-1/1/prompt" })
        let received = try String(contentsOfFile: dir.path + "/received", encoding: .utf8)
        let lines = received.split(separator: "\n")
        #expect(lines.count == 3)
        let message = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(message["id"] as? String == "room-1/1/prompt")
        #expect((message["text"] as? String)?.contains("Are you OK") == true)
    }

    @Test func aNotifierThatHangsIsKilledAtItsTimeout() async throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let script = dir.path + "/hang.sh"
        try "#!/bin/sh\nexec sleep 30\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        var config = testConfiguration(dir, advertisers: 1)
        config.notifier.command = script
        config.notifier.timeoutMicroseconds = 200_000
        config.notifier.retryBaseMicroseconds = 60_000_000
        let clock = ManualClock()
        try enrol(dir, config: config, interval: 60_000_000, step: 3_600_000_000, at: clock.nowMicroseconds())
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger)
        let running = try await start(node)
        // The prompt falls due: the notifier starts, and hangs.
        await advance(clock, running, byMicroseconds: 60_000_000, step: 1_000_000)
        #expect(await onLoop(running) { $0.scheduler.isArmed(Deliveries.timeoutTimer) }, "the notifier is running")
        // Its 200 ms timeout passes on the manual clock: it is killed, and the attempt recorded
        // once the real process has exited.
        await advance(clock, running, byMicroseconds: 200_000)
        #expect(await untilChildProcess(running) { $0.projections.outbox.entries["room-1/1/prompt"]?.attempts == 1 })
        try await stop(running)
        let attempts = try storedEvents(dir).compactMap { e -> OutboxAttempt? in if case .outboxAttempt(let a) = e.body { a } else { nil } }
        #expect(attempts.first?.delivered == false)
        #expect(attempts.first?.error.contains("timed out") == true)
    }

    /// Enrols room-1 directly in the log (no node running), at `time` on the test's clock.
    func enrol(_ dir: TemporaryDirectory, config: NodeConfiguration, interval: UInt64, step: UInt64, at time: UInt64) throws {
        let log = try EventLog.open(config.log)
        var r = Resident()
        r.id = "room-1"
        r.mode = .time
        r.intervalUs = interval
        r.confirmUs = step
        r.textToAlarmUs = step
        r.alarmToNotifyUs = step
        var c = Contact()
        c.name = "Luis"
        c.address = "+34600000000"
        r.contacts = [c]
        r.ownAddress = "+34600000999" // the prompt goes to the resident's own phone
        let (kind, payload) = EventCodec.encode(.residentEnrolled(r))
        try log.append(LogRecord(kind: kind, timeMicroseconds: time, payload: payload), priority: .critical)
        log.close()
    }
}
