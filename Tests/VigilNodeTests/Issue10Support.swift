import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

// Helpers of the issue-10 node tests; the shared ones (storedEvents, settled, advance, onLoop)
// are in Support.swift.

/// A node on `clock` (wall and monotonic) with fast gestures, running on its own thread.
func issue10Node(_ dir: TemporaryDirectory, clock: ManualClock, advertisers: Int = 0,
                 configure: (inout NodeConfiguration) -> Void = { _ in }) throws -> (Node, SimulatedBoard) {
    var config = testConfiguration(dir, advertisers: advertisers)
    config.gestures.debounceNanoseconds = 30_000_000
    configure(&config)
    let board = try SimulatedBoard(monotonic: clock)
    let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
    return (node, board)
}

/// A line's level now, read on the loop (which drives the board).
func issue10Level(_ node: NodeThread, _ line: OutputLine) async -> Bool {
    await onLoop(node) { ($0.board as? SimulatedBoard)?.level(line) == true }
}

/// Presses the simulated button (edges delivered at their times as the clock advances).
func issue10Press(_ node: NodeThread, holdMicroseconds: UInt64) {
    node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: holdMicroseconds) }
}
