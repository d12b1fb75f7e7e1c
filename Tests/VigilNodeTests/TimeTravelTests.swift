import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// `Replay.state(at:)`, behind `vigil status --at` (issue 13, item 4).
@Suite struct TimeTravelTests {
    @Test func aPastMomentIsTheLogsPrefixReplayedFromTheCheckpointWhenItCoversIt() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let node = try Node(configuration: testConfiguration(dir, advertisers: 6), clock: clock, monotonic: clock, logger: quietLogger)
        try await run(node, on: clock, forMicroseconds: 3_000_000)
        let log = try EventLog.openReadOnly(directory: dir.path)
        let settings = testConfiguration(dir).projections
        let now = try Replay.currentState(log, settings: settings)
        let checkpoint = try #require(try Replay.checkpoint(in: log))
        #expect(checkpoint.appliedThrough == now.appliedThrough, "a clean stop checkpoints everything")

        // The whole log, by sequence or by time: from the checkpoint, and the current state.
        let whole = try Replay.state(log, settings: settings, at: .sequence(now.appliedThrough))
        #expect(whole.fromCheckpoint && whole.applied == 0)
        #expect(try whole.state.encoded() == now.encoded())
        let byTime = try Replay.state(log, settings: settings, at: .time(now.health.lastEventMicroseconds))
        #expect(byTime.fromCheckpoint && byTime.throughSequence == now.appliedThrough)

        // A moment inside the log: rebuilt from its start, exactly the prefix's state.
        let middle = now.appliedThrough / 2
        let past = try Replay.state(log, settings: settings, at: .sequence(middle))
        #expect(!past.fromCheckpoint && past.throughSequence == middle && past.applied == Int(middle))
        var expected = Projections(settings: settings)
        expected.devices.pruneAfterMicroseconds = checkpoint.devices.pruneAfterMicroseconds
        expected.devices.pruneIntervalMicroseconds = checkpoint.devices.pruneIntervalMicroseconds
        try log.read { txn in
            try txn.forEach(from: 0) { result in
                guard case .success(let view) = result, view.sequence <= middle else { return false }
                Replay.apply(result, to: &expected)
                return true
            }
        }
        #expect(try past.state.encoded() == expected.encoded())
        // By time: every event up to the first logged after it.
        let events = try storedEvents(dir)
        let cut = events[Int(middle) - 1].timeMicroseconds
        let atTime = try Replay.state(log, settings: settings, at: .time(cut))
        #expect(atTime.throughSequence == events.prefix { $0.timeMicroseconds <= cut }.last?.sequence)
        #expect(atTime.throughSequence >= middle, "events of the same microsecond come with it")
    }
}
