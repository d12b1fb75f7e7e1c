import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// Issue 10, item 7: a start after the box was off reports the downtime to the staff, once.
/// Fails on the old node: nothing was appended at start.
@Suite struct DowntimeReportTests {
    /// Runs the node until what its start appended is durable and applied, then stops it.
    static func startAndStop(_ config: NodeConfiguration, _ clock: ManualClock) async throws -> Projections {
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger)
        let running = try NodeThread(node, name: "vigil-test-loop")
        let state: Projections = await withCheckedContinuation { done in
            running.whenSettled { n in done.resume(returning: n.projections) }
        }
        running.requestStop(reason: "test")
        try await ended(running)
        return state
    }

    static func downtimes(_ dir: TemporaryDirectory) throws -> [DowntimeDetected] {
        try storedEvents(dir).compactMap { e -> DowntimeDetected? in
            if case .downtimeDetected(let d) = e.body { d } else { nil }
        }
    }

    @Test func aStartAfterTheBoxWasOffReportsItToStaffOnce() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 1)
        config.projections.ladder.staff = ["staff@shelter.example"]
        config.projections.ladder.siteName = "Shelter North"
        let clock = ManualClock()

        _ = try await Self.startAndStop(config, clock)
        #expect(try Self.downtimes(dir).isEmpty, "a first start is not downtime")
        let stoppedAt = clock.nowMicroseconds()

        // Off for a minute: below notify.downtime_report_after (5 min), nothing.
        clock.advance(byMicroseconds: 60_000_000)
        _ = try await Self.startAndStop(config, clock)
        #expect(try Self.downtimes(dir).isEmpty)

        // Off for two hours: reported, from the last event (the NodeStopped) to the start.
        let lastEvent = clock.nowMicroseconds()
        clock.advance(byMicroseconds: 2 * 3_600_000_000)
        let state = try await Self.startAndStop(config, clock)
        let reported = try Self.downtimes(dir)
        #expect(reported.count == 1)
        #expect(reported.first?.fromUs == lastEvent)
        #expect(reported.first?.toUs == clock.nowMicroseconds())
        #expect(lastEvent >= stoppedAt)
        let staff = state.outbox.entries.values.filter { $0.channel == .staff }
        #expect(staff.count == 1)
        #expect(staff.first?.recipients == ["staff@shelter.example"])
        #expect(staff.first?.text.contains("Shelter North was off from") == true, "\(staff.first?.text ?? "")")

        // A prompt restart after that reports nothing more.
        _ = try await Self.startAndStop(config, clock)
        #expect(try Self.downtimes(dir).count == 1)
    }
}
