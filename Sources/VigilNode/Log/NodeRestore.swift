import Logging
import VigilCore
import VigilLog

/// Bringing the projections back at start: the checkpoint, the settings that are configuration
/// rather than history, and the log's tail after the checkpoint.
extension Node {
    func restore() throws(LogError) {
        projections = try Self.restoredProjections(from: log, configuration: configuration, logger: logger)
    }

    /// The projections of `log`: its checkpoint, the settings, and the tail after the checkpoint.
    /// Any thread (a start that checks its log first restores on a worker, `LogOpening`).
    static func restoredProjections(from log: EventLog, configuration: NodeConfiguration, logger: Logger) throws(LogError) -> Projections {
        var projections = try Replay.checkpoint(in: log) ?? Projections(settings: configuration.projections)
        configure(&projections, configuration)
        let from = projections.appliedThrough
        let replayed = try Replay.catchUp(&projections, from: log)
        refreshLadderContext(&projections, configuration)
        logger.info("restored projections", metadata: [
            "checkpoint": "\(from)", "replayed": "\(replayed)", "applied_through": "\(projections.appliedThrough)",
        ])
        return projections
    }

    /// The settings that are configuration rather than history.
    static func configure(_ projections: inout Projections, _ configuration: NodeConfiguration) {
        projections.devices.setPruneAfter(configuration.projections.devicePruneAfterMicroseconds)
        projections.outbox.retryBaseMicroseconds = configuration.notifier.retryBaseMicroseconds
        projections.outbox.retryMaxMicroseconds = configuration.notifier.retryMaxMicroseconds
        refreshLadderContext(&projections, configuration)
        projections.calls.tree = configuration.callTree
        projections.warnings.settings = configuration.projections.warnings
        projections.outbox.unreachableAfterMicroseconds = configuration.notifyUnreachableAfterMicroseconds
    }

    /// The ladder's settings from the configuration, with the rules of the zones residents use
    /// (settings, not history: LadderContext says why). At start and when a zone is new.
    func refreshLadderContext() {
        Self.refreshLadderContext(&projections, configuration)
    }

    static func refreshLadderContext(_ projections: inout Projections, _ configuration: NodeConfiguration) {
        projections.escalations.context = TimeZoneFiles.context(configuration.projections.ladder,
                                                                keeping: projections.escalations.context, for: projections.escalations)
    }
}
