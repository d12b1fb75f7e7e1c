import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilSystem
import VigilTestSupport
@testable import VigilNode

/// Issue 27, item 3: calls for help reach an alarm receiving centre over SIA DC-09 — a real one,
/// pysiaalarm (scripts/sia-centre) on loopback, plain and encrypted, with receivers that are down,
/// silent or answer garbage ahead of one that works.
@Suite(.serialized) struct AlarmCentreNodeTests {
    static let key = "0123456789ABCDEF"

    static func configuration(_ dir: TemporaryDirectory, ports: [Int], key: String?) throws -> NodeConfiguration {
        var config = try CallsForHelpNodeTests.configuration(dir)
        var arc = try AlarmCentreSettings(receivers: ports.map { .init(address: "127.0.0.1", port: UInt16($0)) },
                                          identity: .init(account: "1234", receiver: "1", line: "1"))
        if let key { arc.key = try .init(bytes: Array(key.utf8)) }
        arc.testEveryMicroseconds = 0
        arc.replyTimeoutMicroseconds = 2_000_000
        config.alarmCentre = arc
        return config
    }

    /// A port nothing listens on (bound, then closed).
    static func closedPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length); return getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func press(_ node: NodeThread, _ clock: ManualClock, holdMicroseconds: UInt64 = 500_000) async {
        node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: holdMicroseconds) }
        await advance(clock, node, byMicroseconds: holdMicroseconds + 200_000, step: 20_000)
    }

    /// The node's clock is real time (the centre checks each frame's time against its own).
    static func realTimeClock() -> ManualClock {
        ManualClock(startMicroseconds: UInt64(Date().timeIntervalSince1970 * 1_000_000))
    }

    static func arcEntries(_ node: NodeThread) async -> [Outbox.Entry] {
        await onLoop(node) { n in n.projections.outbox.entries.values.filter { $0.channel == .arc }.sorted { $0.createdSequence < $1.createdSequence } }
    }

    @Test("an SOS goes to the centre as Contact ID 120 and its cancel as the restore", arguments: [nil, key])
    func anSOSReachesTheCentreAndItsCancelRestoresIt(key: String?) async throws {
        let centre = try ReceiverProcess(account: "1234", key: key)
        let dir = TemporaryDirectory()
        let config = try Self.configuration(dir, ports: [centre.port], key: key)
        #expect(config.callTree.everyone == [CallsForHelpNodeTests.staff, "arc"], "the default tree: staff, then the centre")
        let clock = Self.realTimeClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        await Self.press(running, clock)
        #expect(await untilChildProcess(running) { n in n.projections.outbox.entries.values.contains { $0.channel == .arc && $0.delivered } })
        let raised = try #require(centre.next("event", timeout: 10), "pysiaalarm got the alarm")
        #expect(raised["message_type"] as? String == "ADM-CID")
        #expect(raised["event_qualifier"] as? String == "1")
        #expect(raised["event_type"] as? String == "120")
        let zone = try #require(raised["ri"] as? String, "the call's number")
        #expect(raised["encrypted"] as? Bool == (key != nil))
        let first = try #require(await Self.arcEntries(running).first)
        #expect(first.lastNotifier == "arc 127.0.0.1:\(centre.port)", "the ACK is recorded as the centre's receipt")
        #expect(first.alarm.map { String(format: "%03d", $0.number) } == zone)
        // Taken here: the centre is not told (it holds its alarm until the restore).
        let code = try #require(await onLoop(running) { $0.projections.calls.open.first?.code })
        let reply = try #require(await running.perform(.takeCall(TakeRequest(call: code, by: "Luis", via: "cli"))))
        #expect(reply.ok)
        await settled(running)
        #expect(await Self.arcEntries(running).count == 1)

        // Cancelled by holding the button (8 s): the restore, same code and zone.
        await Self.press(running, clock, holdMicroseconds: 8_500_000)
        #expect(await onLoop(running) { $0.projections.calls.open.isEmpty })
        #expect(await untilChildProcess(running) { n in n.projections.outbox.pending.allSatisfy { $0.channel != .arc } })
        let restored = try #require(centre.next("event", timeout: 10))
        #expect(restored["event_qualifier"] as? String == "3")
        #expect(restored["event_type"] as? String == "120")
        #expect(restored["ri"] as? String == zone, "the restore names the alarm's zone")
        let status = await onLoop(running) { $0.liveStatus().alarmCentre }
        #expect(status?.acknowledged == 2)
        #expect(status?.problem == nil)
        try await stop(running)
        #expect(centre.stop().status == 0)
        let attempts = try storedEvents(dir).compactMap { e -> OutboxAttempt? in
            if case .outboxAttempt(let a) = e.body, a.notifier.hasPrefix("arc") { a } else { nil }
        }
        #expect(attempts.count == 2 && attempts.allSatisfy(\.delivered), "one receipt per report, nothing sent twice")
    }

    @Test("a receiver that is down, silent, says garbage or DUH hands over to the next", arguments: ["down", "silent", "garbage", "duh", "close"])
    func aFailingReceiverHandsOverToTheNext(mode: String) async throws {
        let bad = mode == "down" ? nil : try ReceiverProcess(account: "1234", key: Self.key, mode: mode)
        let good = try ReceiverProcess(account: "1234", key: Self.key)
        let dir = TemporaryDirectory()
        let badPort = bad?.port ?? Self.closedPort()
        let config = try Self.configuration(dir, ports: [badPort, good.port], key: Self.key)
        let clock = Self.realTimeClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        await Self.press(running, clock)
        if mode == "silent" {
            // The reply timeout (2 s) passes on the node's clock.
            #expect(await untilChildProcess(running) { $0.scheduler.isArmed(AlarmCentreLink.exchangeTimer) && $0.alarmCentre.status.closed == 0 })
            await advance(clock, running, byMicroseconds: 2_100_000, step: 100_000)
        }
        #expect(await untilChildProcess(running) { n in n.projections.outbox.entries.values.contains { $0.channel == .arc && $0.delivered } })
        let entry = try #require(await Self.arcEntries(running).first)
        #expect(entry.lastNotifier == "arc 127.0.0.1:\(good.port)")
        #expect(entry.attempts == 1, "one attempt: the second receiver took it")
        #expect(good.next("event", timeout: 10)?["event_type"] as? String == "120")
        let status = try #require(await onLoop(running) { $0.liveStatus().alarmCentre })
        switch mode {
        case "down": #expect(status.unreachable == 1)
        case "silent": #expect(status.silent == 1)
        case "garbage": #expect(status.garbage == 1)
        case "duh": #expect(status.notUnderstood == 1)
        default: #expect(status.closed == 1)
        }
        #expect(status.acknowledged == 1)
        try await stop(running)
        _ = bad?.stop()
        _ = good.stop()
    }

    @Test func aTestReportGoesAMinuteAfterTheStartAndTheCentresNAKCorrectsTheBoxsTime() async throws {
        let centre = try ReceiverProcess(account: "1234", key: Self.key)
        let dir = TemporaryDirectory()
        var config = try Self.configuration(dir, ports: [centre.port], key: Self.key)
        config.alarmCentre?.testEveryMicroseconds = 3_600_000_000
        let clock = Self.realTimeClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        await advance(clock, running, byMicroseconds: 59_000_000, step: 1_000_000)
        #expect(await onLoop(running) { $0.alarmCentre.status.lastTestMicroseconds } == nil)
        await advance(clock, running, byMicroseconds: 2_000_000, step: 500_000)
        // The node's clock is now a minute ahead of the centre's: the centre NAKs with its own
        // time, and the resend, corrected by it, is acknowledged.
        #expect(await untilChildProcess(running) { $0.alarmCentre.status.lastTestPassed == true })
        #expect(centre.next("event", timeout: 10)?["event_type"] as? String == "602")
        let status = try #require(await onLoop(running) { $0.liveStatus().alarmCentre })
        #expect(status.encrypted)
        #expect((status.clockSkewSeconds ?? 0) < -40, "the centre's NAK said the box is ahead: \(String(describing: status.clockSkewSeconds))")
        #expect(await onLoop(running) { $0.projections.outbox.entries.isEmpty }, "a test is not a message in the log")
        try await stop(running)
        _ = centre.stop()
    }

    @Test func aFailedTestShowsCannotCallForHelpOnAmberUntilOnePasses() async throws {
        let dir = TemporaryDirectory()
        let config = try Self.configuration(dir, ports: [Self.closedPort()], key: nil)
        let clock = Self.realTimeClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        let reply = try #require(await running.perform(.testCalls))
        #expect(reply.ok, "\(reply)")
        #expect(await untilChildProcess(running) { $0.alarmCentre.status.lastTestPassed == false })
        let amber = await onLoop(running) { $0.patterns.decisions[.amber] }
        #expect(amber?.reasons.first?.text.hasPrefix("cannot call for help: the alarm centre has not acknowledged since") == true,
                "\(String(describing: amber))")
        #expect(await onLoop(running) { $0.liveStatus().alarmCentre?.unreachable } == 1)
        // The page says so too, with the centre's state; the public view without what went wrong.
        let paths = try #require(await onLoop(running) { $0.snapshot().callPaths })
        #expect(paths.problem?.hasPrefix("the alarm centre has not acknowledged since") == true, "\(paths)")
        #expect(paths.alarmCentre?.failingSinceMicroseconds != nil && paths.alarmCentre?.lastTestPassed == false)
        #expect(paths.alarmCentre?.lastProblem?.contains("127.0.0.1") == true)
        let open = try #require(await onLoop(running) { $0.snapshot().forPublic().callPaths })
        #expect(open.problem != nil && open.alarmCentre?.lastProblem == nil)
        try await stop(running)

        // Without a centre there is nothing to test, and the CLI hears so.
        let other = TemporaryDirectory()
        let plain = try CallsForHelpNodeTests.configuration(other)
        let bare = try Node(configuration: plain, clock: clock, monotonic: clock, logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let bareRunning = try await start(bare)
        let refused = try #require(await bareRunning.perform(.testCalls))
        #expect(!refused.ok)
        #expect(refused.error?.contains("no alarm receiving centre") == true)
        try await stop(bareRunning)
    }

    @Test func aCentreThatNeverAcknowledgesLeavesTheReportPendingUntilOneDoesAfterARestart() async throws {
        // The only receiver refuses every frame (NAK): the attempt fails, is recorded with why, and
        // the entry stays pending across a restart; a restart with a working centre delivers it.
        let nak = try ReceiverProcess(account: "1234", mode: "nak")
        let dir = TemporaryDirectory()
        var config = try Self.configuration(dir, ports: [nak.port], key: nil)
        let clock = Self.realTimeClock()
        do {
            let board = try SimulatedBoard(monotonic: clock)
            let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
            let running = try await start(node)
            await Self.press(running, clock)
            #expect(await untilChildProcess(running) { n in n.projections.outbox.entries.values.contains { $0.channel == .arc && $0.attempts > 0 } })
            let entry = try #require(await Self.arcEntries(running).first)
            #expect(!entry.delivered)
            #expect(entry.lastError.contains("NAK"), "\(entry.lastError)")
            let status = try #require(await onLoop(running) { $0.liveStatus().alarmCentre })
            #expect(status.negative == 2, "a NAK is answered with one resend")
            #expect(status.problem != nil)
            try await stop(running)
        }
        _ = nak.stop()
        let good = try ReceiverProcess(account: "1234")
        config.alarmCentre?.receivers = [.init(address: "127.0.0.1", port: UInt16(good.port))]
        let board = try SimulatedBoard(monotonic: clock)
        let stopped = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(stopped)
        await advance(clock, running, byMicroseconds: 6_000_000, step: 200_000) // the back-off's first wait
        #expect(await untilChildProcess(running) { n in n.projections.outbox.entries.values.contains { $0.channel == .arc && $0.delivered } })
        #expect(good.next("event", timeout: 10)?["event_type"] as? String == "120")
        try await stop(running)
        _ = good.stop()
    }

    @Test func aCentreDownForAnHourHearsEveryReportOnceAndInOrderWhenItIsBack() async throws {
        // Issue 27, item 8: the only receiver is down (nothing listens on its port) for an hour,
        // during which an SOS is raised and cancelled. Every attempt fails at once and is
        // recorded; when a centre listens on that port again, it hears the alarm, then its
        // restore, each once.
        let port = Self.closedPort()
        let dir = TemporaryDirectory()
        var config = try Self.configuration(dir, ports: [port], key: nil)
        config.alarmCentre?.retryMaxMicroseconds = 30_000_000
        // The node's clock starts an hour behind: after the hour it is about real time again,
        // which the centre checks each frame's time against.
        let clock = ManualClock(startMicroseconds: UInt64(Date().timeIntervalSince1970 * 1_000_000) - 3_600_000_000)
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        await Self.press(running, clock)
        await advance(clock, running, byMicroseconds: 120_000_000, step: 5_000_000)
        let alert = try #require(await onLoop(running) { $0.projections.alerts.active.first?.idText })
        // No shelter key: the cancel of a call for help raised here needs none.
        let cancelled = try #require(await running.perform(.cancelAlert(AlertCancelRequest(id: alert, reason: "false alarm"))))
        #expect(cancelled.ok, "\(cancelled)")
        await advance(clock, running, byMicroseconds: 3_480_000_000, step: 10_000_000)
        let down = await Self.arcEntries(running)
        #expect(down.count == 2, "the alarm and its restore")
        #expect(down.allSatisfy { !$0.delivered }, "\(down.map { ($0.attempts, $0.lastError) })")
        #expect((down.first?.attempts ?? 0) >= 60 && down.last?.attempts == 0,
                "the alarm is retried (every 30 s at most) and the restore waits behind it: \(down.map(\.attempts))")
        #expect(await onLoop(running) { $0.callPathProblem } != nil, "an hour without the centre shows")

        let centre = try ReceiverProcess(account: "1234", port: port)
        defer { _ = centre.stop() }
        #expect(centre.port == port)
        var delivered = false
        for _ in 0..<40 where !delivered {
            await advance(clock, running, byMicroseconds: 5_000_000, step: 1_000_000)
            delivered = await untilChildProcess(running, seconds: 2) { n in
                n.projections.outbox.entries.values.filter { $0.channel == .arc }.allSatisfy(\.delivered)
            }
        }
        #expect(delivered)
        let heard = [centre.next("event", timeout: 10), centre.next("event", timeout: 10)].compactMap { $0 }
        #expect(heard.map { $0["event_qualifier"] as? String } == ["1", "3"], "the alarm, then its restore: \(heard)")
        #expect(heard.allSatisfy { $0["event_type"] as? String == "120" })
        #expect(centre.next("event", timeout: 2) == nil, "each once")
        #expect(Set(await Self.arcEntries(running).map(\.lastNotifier)) == ["arc 127.0.0.1:\(port)"])
        try await stop(running)
    }
}
