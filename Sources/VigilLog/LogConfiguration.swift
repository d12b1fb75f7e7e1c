/// How durable a commit is before its events are acknowledged.
public enum SyncMode: String, Sendable, CaseIterable {
    /// LMDB's own full sync: every commit fdatasyncs the data pages, then writes the meta page
    /// with O_DSYNC. Two flushes per commit; an event is acknowledged when its commit returns.
    case full
    /// MDB_NOMETASYNC: one fdatasync per commit. Commit N's meta page is made durable by the data
    /// sync of commit N+1 (or by an explicit sync when the writer goes idle), and commit N is
    /// acknowledged only then. Same guarantee as `full`, half the flushes under load.
    case deferredMeta = "deferred-meta"
    /// No syncs at all (MDB_NOSYNC). For building test fixtures and benchmarks' input only:
    /// acknowledgements then mean "committed", not "durable".
    case none
}

/// Everything the event log can be told. Defaults suit a Raspberry Pi 4 with an SD card.
public struct LogConfiguration: Sendable {
    /// Directory holding data.mdb and lock.mdb.
    public var directory: String
    /// The writer thread's nice value (nil: the process's). Negative needs CAP_SYS_NICE.
    public var writerNice: Int32?
    /// Map size at first open. The map grows on MDB_MAP_FULL by `growthFactor` up to `maxMapSize`.
    public var initialMapSize: Int = 64 << 20
    /// Hard cap on the map (and so the file). At the cap, low-priority appends are refused.
    public var maxMapSize: Int = 8 << 30
    public var growthFactor: Double = 2
    /// Fraction of the capped map kept for critical events: once the file is this close to the cap,
    /// sheddable events are refused so alerts, SOS and check-ins still fit.
    public var criticalReserve: Double = 0.05
    /// Bytes kept allocated in `disk-reserve` beside data.mdb. When the file system fills up
    /// (ENOSPC), the writer deletes it so alerts, SOS and check-ins still find room, and refuses
    /// sheddable records until the space is back. 0 keeps no reserve.
    public var diskReserveBytes: Int = 16 << 20
    /// While the disk is full, how often the writer tries to allocate the reserve again (on the
    /// next commit after this long); success ends the full-disk state.
    public var diskReserveRetryMicroseconds: UInt64 = 60_000_000
    /// Minimum time between the starts of two commits. Appends arriving meanwhile share a commit.
    public var commitWindowMicroseconds: UInt64 = 5_000
    /// A commit starts early once this many records wait.
    public var maxBatch: Int = 4_096
    /// Records that may wait for the writer. Past it, sheddable appends are refused at once
    /// (counted); critical appends are always queued.
    public var queueLimit: Int = 65_536
    public var sync: SyncMode = .deferredMeta

    public init(directory: String) { self.directory = directory }
}

/// Whether an event may be dropped under overload.
public enum AppendPriority: Sendable {
    /// Scan data: may be shed when the queue is full or the map is at its cap.
    case sheddable
    /// Alerts, SOS, check-ins, button presses, lifecycle: never shed.
    case critical
}
