import VigilLog

/// The sections of the node's own machinery: `log:`, `projections:` (checkpoints, pruning) and
/// `scheduling:`.
extension NodeConfiguration {
    /// The `log:` section.
    static func readLog(_ log: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try log.duration("commit_window") { config.commitWindowMicroseconds = v }
        if let v = try log.integer("max_batch", in: 1...1_000_000) { config.maxBatch = v }
        if let v = try log.integer("queue_limit", in: 16...10_000_000) { config.queueLimit = v }
        if let v = try log.string("sync") {
            guard let mode = SyncMode(rawValue: v) else {
                throw log.error("log.sync must be full, deferred-meta or none")
            }
            config.sync = mode
        }
        if let v = try log.size("initial_map") { config.initialMapBytes = v }
        if let v = try log.size("max_map") { config.maxMapBytes = v }
        if let v = try log.fraction("critical_reserve") { config.criticalReserve = v }
        if let v = try log.size("disk_reserve", allowZero: true) { config.diskReserveBytes = v }
        if let v = try log.duration("check_interval") { config.logCheckIntervalMicroseconds = v }
        if let v = try log.duration("failed_restart_after") { config.logFailedRestartAfterMicroseconds = v }
        if let v = try log.duration("compact_after") { config.compactAfterMicroseconds = v }
        try log.finish()
    }

    /// The `projections:` section.
    static func readProjections(_ p: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try p.duration("device_prune_after") { config.projections.devicePruneAfterMicroseconds = v }
        if let v = try p.integer("checkpoint_every", in: 1...100_000_000) { config.checkpointEveryEvents = v }
        if let v = try p.duration("checkpoint_interval") { config.checkpointIntervalMicroseconds = max(1_000_000, v) }
        try p.finish()
    }

    /// The `scheduling:` section.
    static func readScheduling(_ scheduling: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try scheduling.integer("loop_nice", in: -20...19) { config.loopNice = Int32(v) }
        try scheduling.finish()
    }
}
