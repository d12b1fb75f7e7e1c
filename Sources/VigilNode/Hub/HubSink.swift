import VigilEvents

/// How a hub worker, beside the loop, has the loop append what it learned (decision 0008): the
/// workers hold this, never the node. Every call runs on the loop, in `HubUplink`, in order.
struct HubSink: Sendable {
    private let uplink: LoopBound<HubUplink>
    /// The set of workers it belongs to (`HubUplink.generation`): what an older set hands in is
    /// dropped.
    let generation: UInt64

    init(_ uplink: LoopBound<HubUplink>, generation: UInt64) {
        self.uplink = uplink
        self.generation = generation
    }

    /// Appends `bodies` in order, stopping at the first the log refuses (`HubUplink.append(forWorker:)`).
    func append(_ bodies: [EventBody]) {
        let generation = self.generation
        uplink.send { $0.append(forWorker: bodies, generation: generation) }
    }

    /// Appends a key file's exposures and outcome; whether all were taken, and the refusals so
    /// far (`HubUplink.append(forKeyFiles:)`).
    func appendKeyFileEvents(_ bodies: [EventBody]) async -> (accepted: Bool, refusals: UInt64) {
        let generation = self.generation
        return await uplink.ask({ $0.append(forKeyFiles: bodies, generation: generation) }, orIfGone: (false, 0))
    }
}
