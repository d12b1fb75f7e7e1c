import CLMDB
import VigilSystem

/// The one thread that writes the log. LMDB allows one write transaction at a time and binds it to
/// its thread; owning that thread lets the writer put every waiting append into one commit.
///
/// Appends are copied, envelope and payload, into one contiguous buffer while the queue lock is
/// held; the writer swaps the whole buffer out and feeds it to `mdb_put` in one pass. No per-event
/// object crosses threads, so the writer spends its time in LMDB rather than in reference counting.
///
/// Its state is internal rather than private only so that its steps can live in files by concern
/// (`LogWriter+Loop`, `+Purge`, `+Space`); nothing else in VigilLog touches it. Each field says
/// who may: under `lock`, or the writer thread only.
final class LogWriter: @unchecked Sendable {
    typealias Completion = @Sendable (Result<UInt64, LogError>) -> Void

    /// Where one record's stored value sits in a batch's buffer.
    struct Slot {
        var sequence: UInt64
        var offset: Int
        var length: Int
        var sheddable: Bool
    }

    struct Checkpoint {
        var name: String
        var sequence: UInt64
        var state: [UInt8]
    }

    /// Everything appended since the writer last took work.
    struct Batch {
        var bytes: [UInt8] = []
        var slots: [Slot] = []
        /// Sorted by sequence (appends are), so each commit takes a contiguous run.
        var completions: [(UInt64, Completion)] = []
        var checkpoints: [Checkpoint] = []
        var purges: [Purge] = []

        var isEmpty: Bool { slots.isEmpty && checkpoints.isEmpty && purges.isEmpty }

        mutating func clear() {
            bytes.removeAll(keepingCapacity: true)
            slots.removeAll(keepingCapacity: true)
            completions.removeAll(keepingCapacity: true)
            checkpoints.removeAll(keepingCapacity: true)
            purges.removeAll(keepingCapacity: true)
        }
    }

    /// A committed run of records whose acknowledgement waits for durability.
    struct Committed {
        var firstSequence: UInt64
        var durableThrough: UInt64
        var refused: [UInt64]
        var completions: ArraySlice<(UInt64, Completion)>
        var hasRecords: Bool
    }

    struct WriteOutcome {
        var batch: Committed
        var error: LogError?
        /// Whether the commit wrote pages, and so flushed the file (an empty LMDB commit does not).
        var flushed = true
    }

    /// Set after a write or flush error: nothing written afterwards can be trusted to be durable
    /// (a failed fsync may have dropped pages that a later fsync reports as clean), so the log
    /// refuses everything from then on and the node must restart from what is on disk.
    let failure = LockedValue<LogError?>(nil)
    var failed: LogError? { failure.withLock { $0 } }

    func markFailed(_ error: LogError) {
        failure.withLock { $0 = $0 ?? error }
        lock.withLock { refusingAll = refusingAll ?? error }
    }

    /// Strong: the writer drains its queue even while its EventLog is being deinitialised.
    let environment: OpenEnvironment
    let config: LogConfiguration
    let onDurable: (@Sendable (CommitReport) -> Void)?
    let lock = ConditionLock()
    // Guarded by `lock`:
    var incoming = Batch()
    var nextSequence: UInt64
    var stopping = false
    var stopped = false
    /// `failure`, mirrored under the queue lock so appends check it without a second lock.
    var refusingAll: LogError?
    /// While set the writer takes no work, as behind a card that cannot keep up (tests of load
    /// shedding set it; nothing in the node does). A stop still drains everything. Held, it also
    /// leaves a committed batch's meta-page flush (and so its acknowledgements), purges and
    /// checkpoints until released; a writer already waiting out its commit window takes that
    /// one batch before it holds.
    var held = false

    let stats: LockedValue<LogStatistics>
    var thread: OSThread?

    /// How this log stores records: set at open (a format-1 log was upgraded then).
    let format: RecordFormat
    // Writer-thread only:
    var spare = Batch()
    /// When the last commit started (monotonic ns); nil before the first.
    var lastCommitStart: UInt64?
    var awaitingMetaSync: Committed?
    var purges: [Purge] = []
    /// The file system said ENOSPC: the reserve file was handed back and sheddable records are
    /// refused until the reserve can be allocated again (tried at most every `diskReserveRetryMicroseconds`).
    var diskFull = false
    var lastReserveAttempt: UInt64 = 0
    /// A descriptor of data.mdb of the writer's own, opened at start: an fsync through it reports
    /// any write-back error since (Linux reports one to every open descriptor), even one LMDB's
    /// own fdatasync already consumed. How a full disk is told from a failing card.
    var writebackProbe: FileDescriptor?

    init(environment: OpenEnvironment, configuration: LogConfiguration, nextSequence: UInt64,
         onDurable: (@Sendable (CommitReport) -> Void)?) throws(LogError) {
        self.environment = environment
        self.config = configuration
        self.nextSequence = nextSequence
        self.onDurable = onDurable
        self.format = environment.recordFormat.withLock { $0 }
        var initial = LogStatistics()
        initial.durableSequence = nextSequence - 1
        initial.mapSize = (try? environment.environment.info().me_mapsize) ?? configuration.initialMapSize
        self.stats = LockedValue(initial)
        do {
            thread = try OSThread(name: "vigil-log") { [self] in self.run() }
        } catch {
            throw .system(error)
        }
    }

    var statistics: LogStatistics { stats.withLock { $0 } }

    func enqueue(_ record: LogRecord, priority: AppendPriority, completion: Completion?) throws(LogError) -> UInt64 {
        let outcome: Result<UInt64, LogError> = lock.withLock {
            if stopping { return .failure(.closed) }
            if let refusingAll { return .failure(refusingAll) }
            if priority == .sheddable && incoming.slots.count >= config.queueLimit {
                return .failure(.shed)
            }
            let seq = nextSequence
            nextSequence += 1
            let offset = incoming.bytes.count
            RecordFormat.encode(record, sequence: seq, appendingTo: &incoming.bytes)
            incoming.slots.append(Slot(sequence: seq, offset: offset, length: incoming.bytes.count - offset,
                                       sheddable: priority == .sheddable))
            if let completion { incoming.completions.append((seq, completion)) }
            // Wake the writer only when it has something new to decide: the first record of an
            // empty queue (it may be waiting for work) or a full batch (it may be waiting out
            // the commit window). A signal per append woke it for every record of the window
            // only to wait again: a futex call on this thread and a wake-up on that one, each
            // append (0.63x raw LMDB with it, 0.82-0.87x without: docs/benchmarks.md "The
            // writer's speed").
            let queued = incoming.slots.count
            if queued == 1 || queued == config.maxBatch { lock.signal() }
            return .success(seq)
        }
        switch outcome {
        case .success(let seq): return seq
        case .failure(let error):
            if case .shed = error { stats.withLock { $0.shed += 1 } }
            throw error
        }
    }

    func enqueueCheckpoint(name: String, sequence: UInt64, state: [UInt8]) throws(LogError) {
        let accepted = lock.withLock { () -> Bool in
            guard !stopping, refusingAll == nil else { return false }
            incoming.checkpoints.append(Checkpoint(name: name, sequence: sequence, state: state))
            lock.signal()
            return true
        }
        if !accepted { throw failed ?? .closed }
    }

    func enqueuePurge(_ purge: Purge) throws(LogError) {
        let accepted = lock.withLock { () -> Bool in
            guard !stopping, refusingAll == nil else { return false }
            incoming.purges.append(purge)
            lock.signal()
            return true
        }
        if !accepted { throw refusingAll ?? .closed }
    }

    /// Holds the writer (it takes no work) or lets it go on. See `held`.
    func hold(_ hold: Bool) {
        lock.withLock {
            held = hold
            lock.signal()
        }
    }

    /// Drains, syncs and joins the writer thread. Returns true for the call that stopped it.
    @discardableResult
    func stop() -> Bool {
        let alreadyStopped = lock.withLock { () -> Bool in
            if stopped { return true }
            stopped = true
            stopping = true
            lock.signal()
            return false
        }
        if !alreadyStopped {
            thread?.join()
            thread = nil // the thread's closure holds the writer: break the cycle
        }
        return !alreadyStopped
    }

}
