import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// Issue 27: a press brings a person. A node set up as a new user would (a notifier command that
/// records what it gets, `notify.staff`, a site name) tells its staff of an SOS at once; a
/// person takes it, and everyone told learns who. Tried on the old node: "0 pending, 0 delivered".
@Suite(.serialized) struct CallsForHelpNodeTests {
    static let staff = "+34600111222"

    /// A notifier that appends each message it gets (one JSON line) to `received`, and exits 0.
    static func recordingNotifier(_ dir: TemporaryDirectory) throws -> String {
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let script = dir.path + "/notify.sh"
        try "#!/bin/sh\ncat >> \"\(dir.path)/received\"\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        return script
    }

    static func received(_ dir: TemporaryDirectory) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: dir.path + "/received", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    static func configuration(_ dir: TemporaryDirectory) throws -> NodeConfiguration {
        var config = testConfiguration(dir, advertisers: 1)
        config.gestures.longPressNanoseconds = 300_000_000
        config.gestures.debounceNanoseconds = 30_000_000
        config.notifier.command = try recordingNotifier(dir)
        config.projections.ladder.staff = [staff]
        config.projections.ladder.siteName = "Shelter North"
        return config
    }

    /// Waits until every pending call message has been handed to the notifier and recorded.
    static func deliverAll(_ node: Node, _ clock: ManualClock) async {
        for _ in 0..<50 {
            clock.advance(byMicroseconds: 100_000)
            await settled(node)
            _ = await untilChildProcess(node) { !$0.scheduler.isArmed(Deliveries.timeoutTimer) }
            await settled(node)
            if await onLoop(node, { $0.projections.outbox.pending.allSatisfy { $0.channel != .call } }) { return }
        }
    }

    @Test func aPressTellsTheStaffAtOnceAndATakingTellsThemWhoIsOnTheWay() async throws {
        let dir = TemporaryDirectory()
        let config = try Self.configuration(dir)
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let task = await start(node)
        node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
        await advance(clock, node, byMicroseconds: 700_000, step: 10_000)
        await Self.deliverAll(node, clock)

        let first = Self.received(dir)
        #expect(first.count == 1)
        #expect(first.first?["recipients"] as? [String] == [Self.staff])
        #expect(first.first?["channel"] as? String == "call")
        let text = first.first?["text"] as? String ?? ""
        #expect(text.contains("SOS") && text.contains("Shelter North") && text.contains("raised at this box"), "\(text)")
        let code = try #require(await onLoop(node) { $0.projections.calls.open.first?.code })
        #expect(text.contains("Reply TAKE or \(code)"))

        // Staff take it by its short code (as the CLI and the page do).
        let reply = try #require(await node.perform(.takeCall(TakeRequest(call: code, by: "Luis", via: "cli"))))
        #expect(reply.ok, "\(reply)")
        await Self.deliverAll(node, clock)
        let messages = Self.received(dir)
        #expect(messages.count == 2)
        #expect((messages.last?["text"] as? String)?.contains("Taken by Luis") == true)
        // Taken twice: refused, with who has it.
        let again = try #require(await node.perform(.takeCall(TakeRequest(call: code, by: "Marta", via: "cli"))))
        #expect(!again.ok)
        #expect(again.error?.contains("already taken by Luis") == true)
        try await stop(node, task)

        let takings = try storedEvents(dir).compactMap { e -> AlertTaken? in if case .alertTaken(let t) = e.body { t } else { nil } }
        #expect(takings.map(\.by) == ["Luis"])
        #expect(takings.first?.via == .cli)
    }

    @Test func aBoxWithNoStaffSaysOnAmberThatNobodyCanBeTold() async throws {
        let dir = TemporaryDirectory()
        var config = try Self.configuration(dir)
        config.projections.ladder.staff = []
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let task = await start(node)
        node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
        await advance(clock, node, byMicroseconds: 700_000, step: 10_000)
        let amber = await onLoop(node) { $0.patterns.decisions[.amber]?.reasons.map(\.text) ?? [] }
        try await stop(node, task)
        #expect(Self.received(dir).isEmpty, "nobody was handed a message")
        #expect(amber.contains { $0.contains("has nobody to tell") }, "\(amber)")
    }
}
