import Testing
import VigilBoard
import VigilSystem
@testable import VigilNode

/// Failures of the loop's own machinery are never swallowed: they stop the node, which exits
/// non-zero so systemd restarts it from what is on disk.
@Suite struct FailurePathTests {
    @Test func anEpollFailureOnTheRunningLoopStopsTheNodeWithAnError() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        var config = testConfiguration(dir, advertisers: 0)
        config.dataDirectory = dir.path
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger,
                            board: try SimulatedBoard(monotonic: clock))
        let running = try NodeThread(node, name: "vigil-test-loop")
        // Watching a descriptor that does not exist fails in epoll_ctl, on the loop.
        running.onLoop { n in n.loop.watch(-1, "a descriptor that does not exist") { _ in } }
        await #expect {
            try await ended(running)
        } throws: { error in
            guard let e = error as? NodeError, case .system(let s) = e else { return false }
            return s.description.contains("a descriptor that does not exist")
        }
    }
}
