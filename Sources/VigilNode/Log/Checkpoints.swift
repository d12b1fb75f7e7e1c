import VigilCore
import VigilEvents

/// Checkpoints of the projections: every `checkpoint_every` durable events and every
/// `checkpoint_interval`, and at stop. A checkpoint holds only durable events, and the writer
/// stores it in a later transaction than any of them, so checkpoint + tail always equals a full
/// replay (docs/log.md "Checkpoints").
final class Checkpoints: NodeComponent {
    unowned let node: Node
    private var eventsSinceCheckpoint = 0
    static let timer = Scheduler.Timer("checkpoint")

    init(node: Node) { self.node = node }

    func start() throws(NodeError) {
        node.scheduler.register(Self.timer) { [unowned self] in
            if eventsSinceCheckpoint > 0 { write() }
            armTimer()
        }
        armTimer()
    }

    private func armTimer() {
        node.scheduler.schedule(Self.timer, afterNanoseconds: node.configuration.checkpointIntervalMicroseconds &* 1_000)
    }

    func applied(_ event: Event) { eventsSinceCheckpoint += 1 }

    func reconcile() {
        if eventsSinceCheckpoint >= node.configuration.checkpointEveryEvents { write() }
    }

    /// Queues the current state as the checkpoint. A failure is logged: the next one covers it,
    /// and until then a restart replays a longer tail.
    func write() {
        // Running from memory, the state holds events the log does not: never a checkpoint of it.
        guard node.fromMemory == nil else { return }
        do {
            try node.log.writeCheckpoint(name: Projections.checkpointName, throughSequence: node.projections.appliedThrough,
                                         state: node.projections.encoded())
            eventsSinceCheckpoint = 0
            node.counters.checkpoints += 1
        } catch {
            node.logger.error("checkpoint failed", metadata: ["error": "\(error)"])
        }
    }
}
