import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilSystem
@testable import VigilNode

/// Issue 27, item 6: the box proves it can reach people. A test message goes through the notifier
/// to each of `calls.test_to` a minute after the start and on `vigil calls test`; one the notifier
/// does not deliver shows amber ("cannot call for help: …") until a test passes.
@Suite(.serialized) struct NotifierSelfTestTests {
    static let phone = "+34600111222"
    static let hook = "https://staff.example/hook"

    /// A notifier that records each message, and fails (exit 1) for the webhook while `DIR/broken` exists.
    static func notifier(_ dir: TemporaryDirectory) throws -> String {
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let script = dir.path + "/notify.sh"
        try """
        #!/bin/sh
        message=$(cat)
        printf '%s\\n' "$message" >> "\(dir.path)/received"
        case $message in *staff.example*) [ -e "\(dir.path)/broken" ] && { echo "HTTP 502 from staff.example" >&2; exit 1; } ;; esac
        exit 0
        """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        return script
    }

    static func amber(_ node: NodeThread) async -> [String] {
        await onLoop(node) { $0.patterns.decisions[.amber]?.reasons.map(\.text) ?? [] }
    }

    /// Waits for the running test to end (its notifier children are real processes).
    static func testEnded(_ node: NodeThread, _ clock: ManualClock, after previous: UInt64?) async -> NotifierTestStatus {
        for _ in 0..<200 {
            let status = await onLoop(node) { $0.notifierTest.status }
            if let t = status.lastTestMicroseconds, t != previous { return status }
            clock.advance(byMicroseconds: 1_000)
            _ = await untilChildProcess(node, seconds: 0.05) { _ in false }
            await settled(node)
        }
        return await onLoop(node) { $0.notifierTest.status }
    }

    @Test func aTestMessageThatDoesNotGoOutShowsAmberUntilATestPasses() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 1)
        config.notifier.command = try Self.notifier(dir)
        config.callTestRecipients = [Self.phone, Self.hook]
        config.projections.ladder.siteName = "Shelter North"
        FileManager.default.createFile(atPath: dir.path + "/broken", contents: nil)
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        #expect(await onLoop(running) { $0.notifierTest.status.lastTestMicroseconds } == nil, "no test before the first minute")

        // A minute after the start: the first test. The webhook's notifier fails.
        await advance(clock, running, byMicroseconds: 60_000_000, step: 1_000_000)
        let failed = await Self.testEnded(running, clock, after: nil)
        #expect(failed.lastTestPassed == false)
        #expect(failed.lastProblem?.contains("\(Self.hook): exit status 1: HTTP 502 from staff.example") == true, "\(String(describing: failed.lastProblem))")
        let amber = await Self.amber(running)
        #expect(amber.contains { $0.hasPrefix("cannot call for help: a test message has not gone out since") && $0.contains(Self.hook) }, "\(amber)")
        let live = await onLoop(running) { $0.liveStatus() }
        #expect(live.notifierTest?.problem != nil && live.callPathProblem?.contains("test message") == true)

        let received = (try? String(contentsOfFile: dir.path + "/received", encoding: .utf8)) ?? ""
        let messages = received.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(messages.map { $0["recipients"] as? [String] ?? [] } == [[Self.phone], [Self.hook]], "one at a time, in order")
        #expect(messages.allSatisfy { $0["channel"] as? String == "test" && ($0["text"] as? String)?.hasPrefix("TEST from Vigil at Shelter North") == true })
        #expect(Set(messages.compactMap { $0["id"] as? String }).count == 2, "each message its own id (the notifiers' ledgers key on it)")

        // Mended, and tested at once (`vigil calls test`): amber clears.
        try FileManager.default.removeItem(atPath: dir.path + "/broken")
        let reply = try #require(await running.perform(.testCalls))
        #expect(reply.ok, "\(reply)")
        let passed = await Self.testEnded(running, clock, after: failed.lastTestMicroseconds)
        #expect(passed.lastTestPassed == true && passed.problem == nil)
        #expect(await Self.amber(running).allSatisfy { !$0.hasPrefix("cannot call for help") })
        try await stop(running)
        #expect(try storedEvents(dir).allSatisfy { if case .outboxAttempt = $0.body { false } else { true } },
                "tests are not deliveries: nothing in the outbox, nothing in the log")
    }

    @Test func withNothingToTestVigilCallsTestSaysSo() async throws {
        let dir = TemporaryDirectory()
        let config = testConfiguration(dir, advertisers: 1)
        let clock = ManualClock()
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)
        let reply = try #require(await running.perform(.testCalls))
        #expect(!reply.ok && reply.error?.contains("calls.test_to") == true, "\(reply)")
        try await stop(running)
    }
}
