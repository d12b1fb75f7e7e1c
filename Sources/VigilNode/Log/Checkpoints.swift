import VigilCore
import VigilEvents

/// Checkpoints of the projections: every `checkpoint_every` durable events and every
/// `checkpoint_interval`, and at stop. A checkpoint holds only durable events, and the writer
/// stores it in a later transaction than any of them, so checkpoint + tail always equals a full
/// replay (docs/log.md "Checkpoints").
final class Checkpoints: NodeComponent {
    unowned let context: any LogMaintenanceContext
    /// `checkpoint_interval` and `checkpoint_every`.
    let intervalMicroseconds: UInt64
    let everyEvents: Int
    private var eventsSinceCheckpoint = 0
    static let timer = Scheduler.Timer("checkpoint")

    init(context: any LogMaintenanceContext, intervalMicroseconds: UInt64, everyEvents: Int) {
        self.context = context
        self.intervalMicroseconds = intervalMicroseconds
        self.everyEvents = everyEvents
    }

    func start() throws(NodeError) {
        context.scheduler.register(Self.timer) { [unowned self] in
            if eventsSinceCheckpoint > 0 { write() }
            armTimer()
        }
        armTimer()
    }

    private func armTimer() {
        context.scheduler.schedule(Self.timer, afterNanoseconds: intervalMicroseconds &* 1_000)
    }

    func applied(_ event: Event) { eventsSinceCheckpoint += 1 }

    func reconcile() {
        if eventsSinceCheckpoint >= everyEvents { write() }
    }

    /// Queues the current state as the checkpoint. A failure is logged: the next one covers it,
    /// and until then a restart replays a longer tail.
    func write() {
        // Running from memory, the state holds events the log does not: never a checkpoint of it.
        guard context.fromMemory == nil else { return }
        do {
            try context.log.writeCheckpoint(name: Projections.checkpointName, throughSequence: context.projections.appliedThrough,
                                         state: context.projections.encoded())
            eventsSinceCheckpoint = 0
            context.checkpointWritten()
        } catch {
            context.logger.error("checkpoint failed", metadata: ["error": "\(error)"])
        }
    }
}
