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
        let result: Result<Void, NodeError> = await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, NodeError>, Never>) in
                    do throws(SystemError) {
                        // The loop owns a thread of its own: it blocks in epoll_wait, which must not
                        // happen on the cooperative pool.
                        _ = try OSThread(name: "vigil-loop") {
                            do throws(NodeError) {
                                try node.run(duration: duration)
                                continuation.resume(returning: .success(()))
                            } catch {
                                continuation.resume(returning: .failure(error))
                            }
                        }
                    } catch {
                        continuation.resume(returning: .failure(.system(error)))
                    }
                }
            } onCancel: {
                node.requestStop(reason: "cancelled")
            }
        } onGracefulShutdown: {
            node.requestStop(reason: "signal")
        }
        try result.get()
    }
}
