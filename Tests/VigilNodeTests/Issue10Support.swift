import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

// Helpers of the issue-10 node tests (named apart from the other test files' helpers).

/// Every decodable event in a data directory.
func issue10Events(_ dir: TemporaryDirectory) throws -> [Event] {
    let log = try EventLog.openReadOnly(directory: dir.path)
    var events: [Event] = []
    try log.read { txn in
        try txn.forEach(from: 0) { result in
            if case .event(let e) = Replay.input(result) { events.append(e) }
            return true
        }
    }
    return events
}

func issue10OnLoop<T: Sendable>(_ node: Node, _ read: @escaping @Sendable (Node) -> T) async -> T {
    await withCheckedContinuation { c in node.onLoop { c.resume(returning: read($0)) } }
}

/// Waits until what was appended, and what followed, is durable and no timer is overdue.
func issue10Settled(_ node: Node) async {
    var last: NodeCounters?
    while true {
        let (counters, due) = await withCheckedContinuation { (c: CheckedContinuation<(NodeCounters, Bool), Never>) in
            node.whenSettled { n in
                let now = n.scheduler.now
                c.resume(returning: (n.counters, n.scheduler.deadlines.values.contains { $0 <= now }))
            }
        }
        if counters == last && !due { return }
        last = counters
    }
}

/// Moves the manual clock on in steps, letting the node settle after each (no real waiting).
func issue10Advance(_ clock: ManualClock, _ node: Node, byMicroseconds total: UInt64, step: UInt64) async {
    var left = total
    while left > 0 {
        let d = min(step, left)
        clock.advance(byMicroseconds: d)
        await issue10Settled(node)
        left -= d
    }
}

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
func issue10Level(_ node: Node, _ line: OutputLine) async -> Bool {
    await issue10OnLoop(node) { ($0.board as? SimulatedBoard)?.level(line) == true }
}

/// Presses the simulated button (edges delivered at their times as the clock advances).
func issue10Press(_ node: Node, holdMicroseconds: UInt64) {
    node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: holdMicroseconds) }
}
