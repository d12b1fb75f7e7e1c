import VigilCore
import VigilLog

/// Bringing the projections back at start: the checkpoint, the settings that are configuration
/// rather than history, and the log's tail after the checkpoint.
extension Node {
    func restore() throws(LogError) {
        if let restored = try Replay.checkpoint(in: log) {
            projections = restored
        }
        projections.devices.setPruneAfter(configuration.projections.devicePruneAfterMicroseconds)
        projections.outbox.retryBaseMicroseconds = configuration.notifier.retryBaseMicroseconds
        projections.outbox.retryMaxMicroseconds = configuration.notifier.retryMaxMicroseconds
        refreshLadderContext()
        projections.calls.tree = configuration.callTree
        projections.outbox.unreachableAfterMicroseconds = configuration.notifyUnreachableAfterMicroseconds
        let from = projections.appliedThrough
        let replayed = try Replay.catchUp(&projections, from: log)
        refreshLadderContext()
        logger.info("restored projections", metadata: [
            "checkpoint": "\(from)", "replayed": "\(replayed)", "applied_through": "\(projections.appliedThrough)",
        ])
    }

    /// The ladder's settings from the configuration, with the rules of the zones residents use
    /// (settings, not history: LadderContext says why). At start and when a zone is new.
    func refreshLadderContext() {
        projections.escalations.context = TimeZoneFiles.context(configuration.projections.ladder,
                                                                keeping: projections.escalations.context, for: projections.escalations)
    }
}
