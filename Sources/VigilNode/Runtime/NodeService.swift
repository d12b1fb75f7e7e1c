import Logging
import ServiceLifecycle
import VigilSystem

/// Runs a node under swift-service-lifecycle: SIGTERM and SIGINT become a graceful shutdown,
/// which asks the loop to stop; `run()` returns once the node has flushed, checkpointed and
/// released everything.
///
/// It takes the node (`sending`): whoever made it keeps `handle` for the page and the rest.
/// Misuse: running the service twice; the second run finds no node and throws.
public struct NodeService: Service {
    /// The node until `run()` hands it to its loop: a service is `Sendable` and the node is not,
    /// so it crosses once, moved, from its maker to the loop's thread.
    let node: Handover<Node>
    let handle: NodeHandle
    let duration: UInt64?
    let logger: Logger

    public init(node: sending Node, duration: UInt64?, logger: Logger) {
        handle = node.handle
        self.node = Handover(node)
        self.duration = duration
        self.logger = logger
    }

    public func run() async throws {
        let handover = node
        let duration = self.duration
        // The handlers run on other threads: they hold the handle.
        let handle = self.handle
        try await withGracefulShutdownHandler {
            try await withTaskCancellationHandler {
                // Taken here, where it is moved on to the loop's thread.
                guard let node = handover.take() else { throw NodeError.unsupported("this node service has run already") }
                _ = try await Node.runOnOwnThread(node, duration: duration).get()
            } onCancel: {
                handle.requestStop(reason: "cancelled")
            }
        } onGracefulShutdown: {
            handle.requestStop(reason: "signal")
        }
    }
}
