import CLMDB
import VigilSystem

/// The one thread that writes the log. LMDB allows one write transaction at a time and binds it to
/// its thread; owning that thread lets the writer put every waiting append into one commit.
///
/// Appends are copied, envelope and payload, into one contiguous buffer while the queue lock is
/// held; the writer swaps the whole buffer out and feeds it to `mdb_put` in one pass. No per-event
/// object crosses threads, so the writer spends its time in LMDB rather than in reference counting.
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
    private let failure = LockedValue<LogError?>(nil)
    var failed: LogError? { failure.withLock { $0 } }

    func markFailed(_ error: LogError) {
        failure.withLock { $0 = $0 ?? error }
        lock.withLock { refusingAll = refusingAll ?? error }
    }

    /// Strong: the writer drains its queue even while its EventLog is being deinitialised.
    let environment: OpenEnvironment
    let config: LogConfiguration
    private let onDurable: (@Sendable (CommitReport) -> Void)?
    let lock = ConditionLock()
    // Guarded by `lock`:
    var incoming = Batch()
    private var nextSequence: UInt64
    private var stopping = false
    private var stopped = false
    /// `failure`, mirrored under the queue lock so appends check it without a second lock.
    private var refusingAll: LogError?
    /// While set the writer takes no work, as behind a card that cannot keep up (tests of load
    /// shedding set it; nothing in the node does). A stop still drains everything. Held, it also
    /// leaves a committed batch's meta-page flush (and so its acknowledgements), purges and
    /// checkpoints until released; a writer already waiting out its commit window takes that
    /// one batch before it holds.
    private var held = false

    let stats: LockedValue<LogStatistics>
    private var thread: OSThread?

    /// How this log stores records: set at open (a format-1 log was upgraded then).
    let format: RecordFormat
    // Writer-thread only:
    private var spare = Batch()
    private var lastCommitStart: UInt64 = 0
    private var awaitingMetaSync: Committed?
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

    // MARK: The writer loop

    private func run() {
        // Acknowledging an SOS waits for this thread: ahead of the page and the hub sync on a busy
        // box when configured (`scheduling.loop_nice`) and the process may (CAP_SYS_NICE).
        if let nice = config.writerNice { try? setThreadNice(nice) }
        writebackProbe = try? FileDescriptor.openForReading(config.directory + "/data.mdb")
        holdDiskReserve()
        while true {
            guard var batch = take() else { break }
            purges += batch.purges
            batch.purges.removeAll(keepingCapacity: true)
            if batch.isEmpty {
                if !purges.isEmpty {
                    // Idle: first make the last commit durable and acknowledge it (an SOS must not
                    // wait for the whole deletion), then a slice of the retention's deletion.
                    syncAndAcknowledgeAwaiting()
                    purgeChunk()
                    continue
                }
                // Idle with a commit whose meta page is not yet durable: flush it now.
                syncAndAcknowledgeAwaiting()
                continue
            }
            // One transaction per `maxBatch` records; checkpoints ride with the last one, after
            // every event they could include.
            var start = 0
            var completionIndex = 0
            repeat {
                let end = min(start + config.maxBatch, batch.slots.count)
                let isLast = end == batch.slots.count
                lastCommitStart = monotonicNanoseconds()
                let lastSequence = end > start ? batch.slots[end - 1].sequence : 0
                let completionStart = completionIndex
                while completionIndex < batch.completions.count && batch.completions[completionIndex].0 <= lastSequence {
                    completionIndex += 1
                }
                let outcome = write(batch, slots: start..<end,
                                    completions: batch.completions[completionStart..<completionIndex],
                                    checkpoints: isLast ? batch.checkpoints : [])
                settle(outcome)
                start = end
            } while start < batch.slots.count
            batch.clear()
            spare = batch
            if !purges.isEmpty { purgeChunk() } // between commits: appends wait one small transaction at most
        }
        // Stopping: unfinished purges are asked again at the next start (they are idempotent).
        for purge in purges { purge.completion(.failure(.closed)) }
        purges.removeAll()
        syncAndAcknowledgeAwaiting()
    }

    /// Acknowledges according to the sync mode.
    private func settle(_ outcome: WriteOutcome) {
        switch config.sync {
        case .full, .none:
            acknowledge(outcome)
        case .deferredMeta:
            if outcome.error == nil && !outcome.flushed {
                // Nothing was written (everything refused at the cap): no fdatasync happened, so
                // the previous commit's meta page is not durable yet. Flush it explicitly first.
                syncAndAcknowledgeAwaiting()
                acknowledge(outcome)
            } else if outcome.error == nil {
                // This commit's fdatasync also flushed the previous commit's meta page.
                if let previous = awaitingMetaSync { acknowledge(WriteOutcome(batch: previous, error: nil)) }
                awaitingMetaSync = outcome.batch
            } else {
                // Acknowledge in order: settle the earlier commit before reporting this failure.
                syncAndAcknowledgeAwaiting()
                acknowledge(outcome)
            }
        }
    }

    /// Waits for work and takes all of it; an empty batch means "idle, flush pending";
    /// nil means "stopped and drained".
    private func take() -> Batch? {
        lock.withLock { () -> Batch? in
            while incoming.isEmpty || (held && !stopping) {
                if stopping { return nil }
                if !held && (awaitingMetaSync != nil || !purges.isEmpty) { return Batch() }
                lock.wait()
            }
            // Group commit: commits start at most once per window; appends arriving meanwhile join.
            let deadline = lastCommitStart &+ config.commitWindowMicroseconds * 1_000
            while incoming.slots.count < config.maxBatch && !stopping && monotonicNanoseconds() < deadline {
                lock.wait(untilMonotonicNanoseconds: deadline)
            }
            var taken = spare
            swap(&taken, &incoming)
            spare = Batch()
            return taken
        }
    }

    /// Writes a run of records in one transaction, growing the map on MDB_MAP_FULL and refusing
    /// what does not fit at the cap (sheddable first). Never throws: failures go to the completions.
    private func write(_ batch: Batch, slots range: Range<Int>, completions: ArraySlice<(UInt64, Completion)>,
                       checkpoints: [Checkpoint]) -> WriteOutcome {
        var refused = Set<UInt64>()
        let slots = batch.slots[range]
        // After a failed write or flush nothing more is committed: a later fsync may report pages
        // clean that the failed one dropped, so a later "durable" would be a lie (work taken from
        // the queue before the failure is refused like what arrives after it).
        if let failure = failed {
            let committed = Committed(firstSequence: slots.first?.sequence ?? 0, durableThrough: slots.last?.sequence ?? 0,
                                      refused: slots.map(\.sequence), completions: completions, hasRecords: !slots.isEmpty)
            return WriteOutcome(batch: committed, error: failure, flushed: false)
        }
        if diskFull && monotonicNanoseconds() &- lastReserveAttempt >= config.diskReserveRetryMicroseconds &* 1_000 {
            holdDiskReserve()
        }
        // Near the cap, or on a full disk, keep what room is left for critical events.
        if diskFull || nearCap() {
            for slot in slots where slot.sheddable { refused.insert(slot.sequence) }
        }
        var failure: LogError?
        var flushed = true
        attempts: while true {
            do {
                flushed = try commit(batch.bytes, slots: slots, skipping: refused, checkpoints: checkpoints)
                break attempts
            } catch let error as LMDBError where error.isMapFull {
                if growMap() { continue attempts }
                // At the cap: refuse sheddable records first, then everything.
                let sheddable = slots.filter { $0.sheddable && !refused.contains($0.sequence) }.map(\.sequence)
                if !sheddable.isEmpty {
                    refused.formUnion(sheddable)
                    continue attempts
                }
                refused.formUnion(slots.map(\.sequence))
                failure = .full(capBytes: config.maxMapSize)
                break attempts
            } catch let error as LMDBError where isFullDisk(error) {
                // The file system is full. LMDB aborted the transaction before its meta page, and
                // the data file's write-back is sound (`isFullDisk`), so nothing durable changed:
                // hand back the reserve and retry with critical records only. Only if even they do
                // not fit are they refused (the log stays open).
                let released = releaseDiskReserve()
                let sheddable = slots.filter { $0.sheddable && !refused.contains($0.sequence) }.map(\.sequence)
                if released || !sheddable.isEmpty {
                    refused.formUnion(sheddable)
                    continue attempts
                }
                refused.formUnion(slots.map(\.sequence))
                failure = .diskFull(directory: config.directory)
                break attempts
            } catch {
                failure = LogError(wrapping: error)
                stats.withLock { $0.writeErrors += 1 }
                markFailed(LogError(wrapping: error))
                refused.formUnion(slots.map(\.sequence))
                break attempts
            }
        }
        let refusedForSpace: Bool
        switch failure {
        case nil, .full?, .diskFull?: refusedForSpace = true
        default: refusedForSpace = false
        }
        let refusedCount = UInt64(refused.count)
        // The environment's header, in memory: read here, on the thread that grows the map.
        let used = (try? environment.environment.info()).flatMap { info in
            (try? environment.environment.pageSize()).map { (Int(info.me_last_pgno) + 1) * $0 }
        }
        stats.withLock { s in
            if let used { s.usedBytes = used }
            s.commits += failure == nil ? 1 : 0
            if diskFull { s.refusedDiskFull += refusedForSpace ? refusedCount : 0 } else { s.refusedFull += refusedForSpace ? refusedCount : 0 }
            s.largestBatch = max(s.largestBatch, slots.count)
            switch config.sync {
            case .full: s.flushes += failure == nil && flushed ? 2 : 0
            case .deferredMeta: s.flushes += failure == nil && flushed ? 1 : 0
            case .none: break
            }
        }
        let committed = Committed(firstSequence: slots.first?.sequence ?? 0, durableThrough: slots.last?.sequence ?? 0,
                                  refused: refused.sorted(), completions: completions, hasRecords: !slots.isEmpty)
        return WriteOutcome(batch: committed, error: failure, flushed: flushed)
    }

    /// Commits the run; returns whether anything was written (an empty commit flushes nothing).
    private func commit(_ bytes: [UInt8], slots: ArraySlice<Slot>, skipping refused: Set<UInt64>,
                        checkpoints: [Checkpoint]) throws -> Bool {
        // Nothing to write only when every record was refused (rare: the map is at its cap).
        if checkpoints.isEmpty && refused.count >= slots.count && slots.allSatisfy({ refused.contains($0.sequence) }) {
            return false
        }
        let txn = try environment.environment.begin(readOnly: false)
        var records: UInt64 = 0
        var valueBytes: UInt64 = 0
        try txn.commit {
            let events = environment.events
            try bytes.withUnsafeBytes { raw in
                let checkRefused = !refused.isEmpty
                for slot in slots {
                    if checkRefused && refused.contains(slot.sequence) { continue }
                    try txn.append(events, sequence: slot.sequence,
                                   value: UnsafeRawBufferPointer(rebasing: raw[slot.offset..<(slot.offset + slot.length)]))
                    records += 1
                    valueBytes += UInt64(slot.length)
                }
            }
            for checkpoint in checkpoints {
                let value = RecordFormat.encodeCheckpoint(name: checkpoint.name, sequence: checkpoint.sequence, state: checkpoint.state)
                let key = Array(checkpoint.name.utf8)
                try key.withUnsafeBytes { k in
                    try value.withUnsafeBytes { v in try txn.put(environment.checkpoints, key: k, value: v) }
                }
            }
        }
        stats.withLock { s in
            s.recordsWritten += records
            s.valueBytesWritten += valueBytes
            s.checkpointsWritten += UInt64(checkpoints.count)
        }
        return true
    }

    private func syncAndAcknowledgeAwaiting() {
        guard let pending = awaitingMetaSync else { return }
        awaitingMetaSync = nil
        if let failure = failed {
            // Its meta page was to be made durable by a flush that failed or never came.
            var lost = pending
            lost.refused = pending.hasRecords ? Array(pending.firstSequence...pending.durableThrough) : []
            acknowledge(WriteOutcome(batch: lost, error: failure))
            return
        }
        do {
            try environment.environment.sync(force: true)
            stats.withLock { $0.flushes += 1 }
            acknowledge(WriteOutcome(batch: pending, error: nil))
        } catch {
            // The commit happened but its durability is unknown: report it as failed rather
            // than claim what we cannot prove.
            stats.withLock { $0.writeErrors += 1 }
            markFailed(LogError(wrapping: error))
            var failed = pending
            failed.refused = pending.hasRecords ? Array(pending.firstSequence...pending.durableThrough) : []
            acknowledge(WriteOutcome(batch: failed, error: LogError(wrapping: error)))
        }
    }

    /// Calls completions and `onDurable` for a run that is durable (error == nil; `refused` lists
    /// what was turned away at the cap) or that failed as a whole (error != nil).
    private func acknowledge(_ outcome: WriteOutcome) {
        let batch = outcome.batch
        let refused = Set(batch.refused)
        if outcome.error == nil && batch.hasRecords {
            stats.withLock { $0.durableSequence = max($0.durableSequence, batch.durableThrough) }
        }
        for (seq, completion) in batch.completions {
            if let error = outcome.error {
                completion(.failure(error))
            } else if refused.contains(seq) {
                completion(.failure(diskFull ? .diskFull(directory: config.directory) : .full(capBytes: config.maxMapSize)))
            } else {
                completion(.success(seq))
            }
        }
        if batch.hasRecords {
            onDurable?(CommitReport(durableThrough: batch.durableThrough, refused: batch.refused))
        }
    }
}
