import Logging
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem

/// What a component may reach of the running node: its clocks and logger, the durable state to
/// read, the events on their way, the scheduler, and `append`. Narrow on purpose (decision 0008):
/// a component given a context cannot touch another component, the log or the configuration, so
/// what it depends on is in its initialiser.
///
/// Loop-confined, like the node: every member is called on the loop thread only. `Node` is the one
/// conformer until the node splits into a Sendable handle and a loop-confined core (0008, step 9).
protocol NodeContext: DescriptorWatch {
    var nodeID: UInt64 { get }
    var clock: any WallClock { get }
    /// Nanoseconds that only move forward (timeouts, durations); the scheduler runs on it.
    var monotonic: any MonotonicClock { get }
    var logger: Logger { get }
    var scheduler: Scheduler { get }
    /// The durable state, as applied so far. Read-only: it moves only with durable events.
    var projections: Projections { get }
    /// Events appended and not yet durable.
    var pending: PendingEvents { get }
    /// The node is stopping: append nothing new that starts work.
    var stopping: Bool { get }
    /// Calls from a start that checked its log first are still being carried into it.
    var isCarrying: Bool { get }
    /// When the monotonic clock reaches a wall-clock time (what the scheduler arms timers with).
    func monotonicDeadline(forWallMicroseconds due: UInt64) -> UInt64
    /// Appends an event; it reaches the projections once durable. Nil when the log refused it.
    @discardableResult
    func append(_ body: EventBody, time: UInt64?, sheddable: Bool) -> UInt64?
    /// Set when the log stopped taking writes and the node runs from memory.
    var fromMemory: RunningFromMemory? { get }
    /// Changes what a watched descriptor is watched for (a socket that has output waiting).
    /// False when the loop cannot; the failure is reported and the node stops.
    @discardableResult
    func changeWatch(_ fd: Int32, _ what: String, events: UInt32) -> Bool
    /// Something the outputs (LEDs, buzzer, the advertising plan) follow from changed outside an
    /// event (a notifier's self-test): bring them in line now.
    func outputsMayHaveChanged()
    /// The projections as they will be once every event appended so far is applied (a copy).
    func projectedState() -> Projections
    /// The node cannot go on safely: it stops and exits non-zero (systemd restarts it).
    func fail(_ error: NodeError)
    /// `target` as a helper thread may hold it, to send work back onto the loop (`LoopBound`).
    func loopBound<Target: AnyObject>(_ target: Target) -> LoopBound<Target>
}

/// The few components that maintain the log itself (checkpoints, retention, the log check,
/// compaction; decision 0008, step 3) get the log too. Everything else appends through `NodeContext.append` only.
protocol LogMaintenanceContext: NodeContext {
    /// The log: a scratch one while a start still checks and opens the card's, then the card's.
    var log: EventLog { get }
    /// A checkpoint was queued (`vigil status` counts them).
    func checkpointWritten()
}

/// The radio intake counts into the node's counters (`vigil status`, metrics): decision 0008's
/// counter sink, as narrow as what it writes.
protocol RadioIntakeContext: NodeContext {
    /// Reports came from the radio.
    func countRadioReports(_ reports: UInt64)
    /// A read of the radio failed.
    func countRadioReadError()
    /// Scan hits were logged (alone or in a batch).
    func countScanHitsLogged(_ hits: UInt64)
}

extension NodeContext {
    /// Appends a critical event (see `append(_:time:sheddable:)`).
    @discardableResult
    func append(_ body: EventBody, time: UInt64?) -> UInt64? {
        append(body, time: time, sheddable: false)
    }

    /// Watches a descriptor for reading (see `watch(_:_:events:handler:)`).
    func watch(_ fd: Int32, _ what: String, handler: @escaping EventLoop.Handler) -> Bool {
        watch(fd, what, events: Epoll.readable, handler: handler)
    }
}

extension Node: NodeContext {
    func watch(_ fd: Int32, _ what: String, events: UInt32, handler: @escaping EventLoop.Handler) -> Bool {
        loop.watch(fd, what, events: events, handler: handler)
    }

    func unwatch(_ fd: Int32, _ what: String) { loop.unwatch(fd, what) }

    func changeWatch(_ fd: Int32, _ what: String, events: UInt32) -> Bool { loop.change(fd, what, events: events) }

    func outputsMayHaveChanged() { reconcileOutputs() }

    func loopBound<Target: AnyObject>(_ target: Target) -> LoopBound<Target> { LoopBound(target, on: loop) }
}

extension Node: RadioIntakeContext {
    func countRadioReports(_ reports: UInt64) { counters.reports &+= reports }
    func countRadioReadError() { counters.radioErrors &+= 1 }
    func countScanHitsLogged(_ hits: UInt64) { counters.scanHitsLogged &+= hits }
}

extension Node: LogMaintenanceContext {
    func checkpointWritten() { counters.checkpoints += 1 }
}
