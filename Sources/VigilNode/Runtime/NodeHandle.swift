import VigilAccess
import VigilCore
import VigilLog
import VigilSystem

/// What a thread other than the loop's holds of a node: the box's page and its API, the service
/// manager's signal handling, the CLI's run command, benchmarks and tests. Checked `Sendable` (no
/// `@unchecked`): it holds the node only as a `LoopBound`, so everything it asks of the node runs
/// on the loop, and otherwise only values and thread-safe parts (the stop request, the snapshot
/// feed, the log as readers beside the loop may use it, a counter).
///
/// Decision 0008, step 9: `Node` is not `Sendable`; once it is handed to the loop
/// (`Node.runOnOwnThread`), this is all any other thread has of it.
///
/// Misuse the compiler cannot see: none here; every member is safe from any thread. Once the
/// node has stopped, what is sent to the loop is never run, so `perform` answers nil after its
/// timeout and `publishSnapshots` does nothing.
public struct NodeHandle: Sendable {
    let node: LoopBound<Node>
    let loop: EventLoop
    let stopRequest: LockedValue<String?>
    /// What the loop publishes for servers (after `publishSnapshots`).
    public let snapshots: SnapshotFeed
    let openLog: LockedValue<EventLog?>
    let malformedCallbacks: LockedValue<UInt64>
    /// The node's identity (`NodeIdentity`): a value, the same for the node's life.
    public let nodeID: UInt64
    let projectionSettings: ProjectionSettings
    let unreachableAfterMicroseconds: UInt64

    /// Runs `work` on the loop, soon, with the node: how a benchmark or a test reads state the
    /// loop owns. Never run once the node has stopped.
    public func onLoop(_ work: @escaping @Sendable (Node) -> Void) {
        node.send(work)
    }

    /// Calls `done` on the loop once everything appended so far, and everything that followed
    /// from it (timers that were due, reconciling), is durable and applied. Tests wait on this,
    /// after injecting input or advancing a manual clock, instead of sleeping.
    public func whenSettled(_ done: @escaping @Sendable (Node) -> Void) {
        node.send { node in node.settledWaiters.append(done) }
    }

    /// Calls `done` on the loop once `holds` is true of the node's state: at once if it is, else
    /// after the batch of durable events that makes it so. Event-driven (the state changes only
    /// when events are applied); tests of things beside the loop (the hub sync) wait on this.
    public func whenState(_ holds: @escaping @Sendable (Node) -> Bool, _ done: @escaping @Sendable (Node) -> Void) {
        node.send { node in
            if holds(node) { done(node) } else { node.stateWaiters.append((holds, done)) }
        }
    }

    /// Asks the loop to stop: it flushes the scan window, logs NodeStopped, waits until everything
    /// is durable, writes a checkpoint and returns from `run()`. Safe from any thread or signal
    /// handler task. The first reason given is the one logged.
    public func requestStop(reason: String) {
        stopRequest.withLock { if $0 == nil { $0 = reason } }
        loop.wake()
    }

    /// A server beside the loop wants snapshots (`snapshots`): the loop publishes one at once and
    /// from then on after each change.
    public func publishSnapshots() {
        snapshots.activate()
        node.send { node in node.publisher.reconcile() }
    }

    /// Judges `command` on the loop exactly as the control socket does and appends the event it
    /// becomes; `accepted` gets the answer on the loop thread once the event is appended (its
    /// sequence and alert id; durable shortly after) or refused. For programs that run a node in
    /// their own process and pace themselves by appends: the benchmarks.
    public func submit(_ command: NodeCommand, accepted: @escaping @Sendable (NodeReply) -> Void) {
        node.send { node in
            switch node.control.answer(command) {
            case .now(let reply): accepted(reply)
            case .whenDurable(let sequence, let alert): accepted(.durable(sequence, alert: alert))
            }
        }
    }

    /// Judges `command` on the loop exactly as the control socket does and returns the answer
    /// once its event is durable (or at once, for a command that changes nothing or is refused):
    /// the box's page and API use this. Nil when the node did not answer within `timeoutSeconds`
    /// (it is stopping, or not running) or the waiting task was cancelled.
    public func perform(_ command: NodeCommand, timeoutSeconds: Double = 10) async -> NodeReply? {
        let once = AnswerOnce()
        node.send { node in node.control.perform(command) { once.resume($0) } }
        let timeout = Task {
            try? await Task.sleep(for: .seconds(timeoutSeconds))
            once.resume(nil)
        }
        defer { timeout.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<NodeReply?, Never>) in once.arm(c) }
        } onCancel: {
            once.resume(nil)
        }
    }

    /// The page refused a callback that could not be genuine without asking the loop: counted
    /// with the callbacks the node refused.
    public func noteMalformedCallback() {
        malformedCallbacks.withLock { $0 &+= 1 }
    }

    /// The view of the node as it was at `moment`, rebuilt from the log (after-incident review:
    /// the page's time travel). Replays on a thread of its own, in a read transaction of its own,
    /// never on the loop; one at a time per process, with at most two waiting (more are refused
    /// with `PastViewBusy`), so a page reloaded in a hurry cannot start many replays.
    public func pastSnapshot(at moment: PastMoment, asked: String) async throws -> NodeSnapshot {
        // The log as other threads may read it: nil while a start is still opening it.
        guard let log = openLog.withLock({ $0 }) else { throw PastViewBusy() }
        let settings = projectionSettings
        let unreachableAfter = unreachableAfterMicroseconds
        let result: Result<NodeSnapshot, any Error>? = await Self.replays.run(maxWaiting: 2) {
            do {
                var past = try Replay.state(log, settings: settings, at: moment)
                past.state.outbox.unreachableAfterMicroseconds = unreachableAfter
                let time: UInt64 = switch moment {
                case .time(let t): t
                case .sequence: past.state.health.lastEventMicroseconds
                }
                return .success(NodeSnapshot(state: past.state, decisions: OutputPolicy.decide(past.state, running: true),
                                             live: nil, timeMicroseconds: time, past: asked))
            } catch {
                return .failure(error)
            }
        }
        guard let result else { throw PastViewBusy() }
        return try result.get()
    }

    private static let replays = Gate(width: 1)
}

/// Past views are being rebuilt already (one at a time, two waiting): try again shortly.
public struct PastViewBusy: Error, CustomStringConvertible {
    public var description: String { "other past views are being rebuilt; try again in a moment" }
}

/// A continuation resumed once, by whichever comes first: the node's answer, a timeout, or
/// cancellation (which may come before the continuation exists).
final class AnswerOnce: Sendable {
    private enum State {
        case waiting
        case armed(CheckedContinuation<NodeReply?, Never>)
        case answered(NodeReply?)
        case done
    }
    private let state = LockedValue<State>(.waiting)

    func arm(_ c: CheckedContinuation<NodeReply?, Never>) {
        let early: NodeReply?? = state.withLock { s in
            switch s {
            case .waiting:
                s = .armed(c)
                return nil
            case .answered(let reply):
                s = .done
                return .some(reply)
            case .armed, .done:
                return nil
            }
        }
        if let early { c.resume(returning: early) }
    }

    func resume(_ reply: NodeReply?) {
        let armed: CheckedContinuation<NodeReply?, Never>? = state.withLock { s in
            switch s {
            case .waiting:
                s = .answered(reply)
                return nil
            case .armed(let c):
                s = .done
                return c
            case .answered, .done:
                return nil
            }
        }
        armed?.resume(returning: reply)
    }
}
