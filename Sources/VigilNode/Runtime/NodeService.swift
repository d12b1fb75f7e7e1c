import Logging
import ServiceLifecycle
import VigilSystem

/// Runs a node under swift-service-lifecycle: SIGTERM and SIGINT become a graceful shutdown,
/// which asks the loop to stop; `run()` returns once the node has flushed, checkpointed and
/// released everything.
public struct NodeService: Service {
    let node: Node
    let duration: UInt64?
    let logger: Logger

    public init(node: Node, duration: UInt64?, logger: Logger) {
        self.node = node
        self.duration = duration
        self.logger = logger
    }

    public func run() async throws {
        let node = self.node
        let duration = self.duration
        // The handlers run on other threads: they hold the handle, not the node.
        let handle = node.handle
        try await withGracefulShutdownHandler {
            try await withTaskCancellationHandler {
                try await node.runOnOwnThread(duration: duration)
            } onCancel: {
                handle.requestStop(reason: "cancelled")
            }
        } onGracefulShutdown: {
            handle.requestStop(reason: "signal")
        }
    }
}

extension Node {
    /// Runs the loop on a thread of its own — it blocks in epoll_wait, which must never happen on
    /// Swift's cooperative pool — and returns once the node has stopped.
    public func runOnOwnThread(duration: UInt64?) async throws(NodeError) {
        let result: Result<Void, NodeError> = await withCheckedContinuation { continuation in
            do throws(SystemError) {
                _ = try OSThread(name: "vigil-loop") {
                    do throws(NodeError) {
                        try self.run(duration: duration)
                        continuation.resume(returning: .success(()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            } catch {
                continuation.resume(returning: .failure(.system(error)))
            }
        }
        try result.get()
    }
}
