import Foundation
import Logging
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode
// The tests' one temporary directory helper, visible to every file of this module.
@_exported import VigilTestSupport

let quietLogger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

func testConfiguration(_ dir: TemporaryDirectory, advertisers: Int = 12) -> NodeConfiguration {
    var c = NodeConfiguration()
    c.dataDirectory = dir.path
    c.simulation.advertisers = advertisers
    c.simulation.minIntervalMicroseconds = 50_000
    c.simulation.maxIntervalMicroseconds = 150_000
    c.scanWindowMicroseconds = 300_000
    c.commitWindowMicroseconds = 1_000
    c.initialMapBytes = 4 << 20
    return c
}

// Node tests run on one `ManualClock` (the node's wall and monotonic clock, and the simulated
// board's and radio's): they inject input or advance the clock, then wait for the node to settle.
// Nothing sleeps; only the log writer works in real time, and settling waits for it by event.

/// Starts `node` on its own thread with no stop-after-duration timer (its clock is manual, so
/// that timer would fire only when advanced) and returns once its start is durable. The node is
/// the loop's from here (`sending`): the test holds what this returns, and has the node back from
/// `stop`, as every program that runs one does (decision 0008).
func start(_ node: sending Node) async throws -> NodeThread {
    let running = try NodeThread(node, name: "vigil-test-loop")
    await settled(running)
    return running
}

/// Asks the node to stop, waits until it has (NodeStopped durable, checkpoint written) and hands
/// it back, its state to read; throws the failure it stopped on.
@discardableResult
func stop(_ running: NodeThread) async throws -> sending Node {
    running.handle.requestStop(reason: "test")
    return try await ended(running)
}

/// Runs `node` while its manual clock moves `duration` forward in steps of `step`, settling
/// after each, then stops it and hands it back: what `run(duration:)` does in real time,
/// without the waiting.
@discardableResult
func run(_ node: sending Node, on clock: ManualClock, forMicroseconds duration: UInt64, step: UInt64 = 50_000) async throws -> sending Node {
    let running = try await start(node)
    await advance(clock, running, byMicroseconds: duration, step: step)
    return try await stop(running)
}

/// Moves `clock` forward by `total` microseconds in steps of at most `step`, letting the node
/// settle after each, as real time would pass for it: timers, radio reports and button edges
/// come at their times.
func advance(_ clock: ManualClock, _ node: NodeThread, byMicroseconds total: UInt64, step: UInt64 = 50_000) async {
    var left = total
    while left > 0 {
        let d = min(step, left)
        clock.advance(byMicroseconds: d)
        await settled(node)
        left -= d
    }
}

/// Returns once the running node is quiet: everything appended is durable and applied, no
/// timer is due, and one more turn of its loop changed nothing. Event-driven
/// (`NodeHandle.whenSettled`): it waits only as long as the log writer takes to commit.
func settled(_ node: NodeThread) async {
    await settled(node.handle)
}

/// `settled`, for a test that holds only the handle.
func settled(_ handle: NodeHandle) async {
    var last: NodeCounters?
    while true {
        let (counters, timerDue) = await withCheckedContinuation { (c: CheckedContinuation<(NodeCounters, Bool), Never>) in
            handle.whenSettled { n in
                let now = n.scheduler.now
                c.resume(returning: (n.counters, n.scheduler.deadlines.values.contains { $0 <= now }))
            }
        }
        if counters == last && !timerDue { return }
        last = counters
    }
}

/// Reads the node's state on its loop, which owns it.
func onLoop<T: Sendable>(_ node: NodeThread, _ read: @escaping @Sendable (Node) -> T) async -> T {
    await withCheckedContinuation { c in node.handle.onLoop { c.resume(returning: read($0)) } }
}

/// Only for tests that wait for a real child process (a notifier command): polls the node's
/// state on its loop until `condition` holds; false if it has not after `seconds` of real time.
/// The bound stops a stuck test, it is never an assertion on timing. No sleeping: each poll is
/// a turn of the loop.
func untilChildProcess(_ node: NodeThread, seconds: Double = 20, _ condition: @escaping @Sendable (Node) -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if await onLoop(node, condition) { return true }
        await Task.yield()
    }
    return false
}

/// What tests ask of a running node, through its handle (they hold the `NodeThread`).
extension NodeThread {
    var nodeID: UInt64 { handle.nodeID }
    func onLoop(_ work: @escaping @Sendable (Node) -> Void) { handle.onLoop(work) }
    func whenSettled(_ done: @escaping @Sendable (Node) -> Void) { handle.whenSettled(done) }
    func whenState(_ holds: @escaping @Sendable (Node) -> Bool, _ done: @escaping @Sendable (Node) -> Void) { handle.whenState(holds, done) }
    func requestStop(reason: String) { handle.requestStop(reason: reason) }
    func perform(_ command: NodeCommand, timeoutSeconds: Double = 10) async -> NodeReply? {
        await handle.perform(command, timeoutSeconds: timeoutSeconds)
    }
    func submit(_ command: NodeCommand, accepted: @escaping @Sendable (NodeReply) -> Void) { handle.submit(command, accepted: accepted) }
}

/// Reads every decodable event of a data directory.
func storedEvents(_ dir: TemporaryDirectory) throws -> [Event] {
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

/// Every event body in the log of `dir`, in order (read-only, the node stopped or running).
func loggedEvents(_ dir: TemporaryDirectory) throws -> [EventBody] {
    let log = try EventLog.openReadOnly(directory: dir.path)
    var bodies: [EventBody] = []
    try log.read { txn in
        try txn.forEach(from: 0) { result in
            if case .event(let e) = Replay.input(result) { bodies.append(e.body) }
            return true
        }
    }
    return bodies
}

/// Waits until the node has stopped (asked by the test through the handle, or by itself) and
/// hands it back; throws the failure it stopped on.
@discardableResult
func ended(_ running: NodeThread) async throws -> sending Node {
    guard let stopped = await running.stopped() else { throw NodeError.unsupported("the node was handed back already") }
    return try stopped.get()
}
