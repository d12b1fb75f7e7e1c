/// Counters the writer keeps; read with `EventLog.statistics`.
public struct LogStatistics: Sendable, Equatable, Codable {
    public var commits: UInt64 = 0
    /// Flushes to stable storage that Vigil caused: fdatasync + O_DSYNC meta writes (full mode),
    /// fdatasync per commit plus idle syncs (deferred-meta mode).
    public var flushes: UInt64 = 0
    public var recordsWritten: UInt64 = 0
    public var valueBytesWritten: UInt64 = 0
    public var checkpointsWritten: UInt64 = 0
    /// Sheddable appends refused because the queue was over its limit.
    public var shed: UInt64 = 0
    /// Appends refused because the map reached its cap.
    public var refusedFull: UInt64 = 0
    public var mapGrowths: UInt64 = 0
    public var mapSize: Int = 0
    /// Bytes of the map in use after the last commit (pages up to the last one used), read by the
    /// writer, which alone may touch the map while it can grow (nil before the first commit).
    public var usedBytes: Int?
    /// Highest sequence whose commit is durable.
    public var durableSequence: UInt64 = 0
    /// Largest batch committed in one transaction.
    public var largestBatch: Int = 0
    public var writeErrors: UInt64 = 0
    /// Records deleted by retention purges.
    public var purged: UInt64 = 0
    /// The file system is full: the disk reserve was handed back and scan hits are refused until
    /// it can be allocated again.
    public var diskFull = false
    /// Appends refused while the disk was full (sheddable ones; critical ones only when even the
    /// reserve's room is gone).
    public var refusedDiskFull: UInt64 = 0
    /// Bytes held in `disk-reserve` now.
    public var diskReserveBytes: Int = 0
    /// Times the disk filled and the reserve was handed back.
    public var diskFullEpisodes: UInt64 = 0

    public init() {}
}
