import VigilSystem

/// A node whose loop has returned, handed back to whoever ran it: its state to read (a test's
/// assertions), and the failure it stopped on, if it had to.
public struct StoppedNode {
    public let node: Node
    public let failure: NodeError?

    /// The node, or the failure it stopped on.
    public func get() throws(NodeError) -> Node {
        if let failure { throw failure }
        return node
    }
}

extension Node {
    /// Runs `node`'s loop on a thread of its own — it blocks in epoll_wait, which must never
    /// happen on Swift's cooperative pool — and returns once the node has stopped, handing the
    /// node back. It takes the node (`sending`): until then the caller has only `node.handle`,
    /// taken before, as every other thread does.
    public static func runOnOwnThread(_ node: sending Node, duration: UInt64?) async -> sending StoppedNode {
        let handover = Handover(node)
        return await withCheckedContinuation { (continuation: CheckedContinuation<StoppedNode, Never>) in
            do throws(SystemError) {
                // Detached: the node comes back through the continuation, the thread ends by itself.
                try OSThread(name: "vigil-loop") {
                    guard let node = handover.take() else { return }
                    do throws(NodeError) {
                        try node.run(duration: duration)
                        continuation.resume(returning: StoppedNode(node: node, failure: nil))
                    } catch {
                        continuation.resume(returning: StoppedNode(node: node, failure: error))
                    }
                }.detach()
            } catch {
                // No thread: the node never left; it comes back with the reason.
                if let node = handover.take() { continuation.resume(returning: StoppedNode(node: node, failure: .system(error))) }
            }
        }
    }
}

/// A node running on a thread of its own, started and returned from at once: the node is moved
/// to the thread, the caller keeps `handle`, and `join` (blocking: the benchmarks) or `stopped`
/// (awaiting: tests, a benchmark's boxes) hands the node back once it has stopped.
///
/// Misuse: waiting before asking the node to stop (`handle.requestStop`) or before it stops by
/// itself waits for as long as the node runs.
public final class NodeThread: Sendable {
    public let handle: NodeHandle
    private let thread: OSThread
    private let stopped = Handover<StoppedNode>()
    private let joined = LockedValue(false)
    /// Whether the node has stopped, and who awaits that (`stopped()`).
    private let ending = LockedValue<(ended: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    /// Starts `node` on a thread named `name`; `finished` is called on that thread once the
    /// node has stopped, with the failure it stopped on, if any.
    public init(_ node: sending Node, name: String, duration: UInt64? = nil,
                finished: @escaping @Sendable (NodeError?) -> Void = { _ in }) throws(SystemError) {
        handle = node.handle
        let moved = Handover(node)
        let stopped = self.stopped
        let ending = self.ending
        thread = try OSThread(name: name) {
            guard let node = moved.take() else { return }
            var failure: NodeError?
            do throws(NodeError) {
                try node.run(duration: duration)
            } catch {
                failure = error
            }
            stopped.put(StoppedNode(node: node, failure: failure))
            finished(failure)
            // Last: a waiter's `join` then waits only for this closure to return.
            let waiting = ending.withLock { e in
                e.ended = true
                defer { e.waiting = [] }
                return e.waiting
            }
            for w in waiting { w.resume() }
        }
    }

    /// Dropped without `join` (a benchmark or test that failed on its way): the node is asked to
    /// stop and its thread is let go, so nothing runs on for ever under a directory being removed.
    deinit {
        guard joined.withLock({ was in defer { was = true }; return !was }) else { return }
        handle.requestStop(reason: "its thread's owner let it go")
        thread.detach()
    }

    /// Awaits the node's stop, then hands the stopped node back (`join`, which by then waits
    /// only for the thread's last statements).
    public func stopped() async -> sending StoppedNode? {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ended = ending.withLock { e in
                if !e.ended { e.waiting.append(c) }
                return e.ended
            }
            if ended { c.resume() }
        }
        return join()
    }

    /// Waits for the node's thread to end and hands the stopped node back; nil after the first
    /// call.
    public func join() -> sending StoppedNode? {
        guard joined.withLock({ was in defer { was = true }; return !was }) else { return nil }
        thread.join()
        return stopped.take()
    }
}
