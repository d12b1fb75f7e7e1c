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

    /// A deletion of old records (retention), done by this thread in small transactions between
    /// commits, so appends never wait long behind it. Idempotent: asked again, it deletes what is
    /// left.
    struct Purge {
        var beforeMicroseconds: UInt64
        /// Records whose time is before this are left (a compaction's span starts here).
        var notBeforeMicroseconds: UInt64 = 0
        var throughSequence: UInt64
        /// Whether a long run of records well past the cutoff ends the purge (retention: the log
        /// is written in time order). A compaction knows the exact range to walk and walks it all.
        var stopsAfterNewerRun = true
        /// (kind, payload) -> delete? Called on the writer thread for records older than the cutoff.
        var matches: @Sendable (UInt32, UInt64, UnsafeRawBufferPointer) -> Bool
        var completion: @Sendable (Result<UInt64, LogError>) -> Void
        var resume: UInt64 = 0
        var removed: UInt64 = 0
        /// Consecutive records seen whose time is well past the cutoff: the log is written in
        /// time order, so a long run of them means the old part is behind us.
        var newerRun = 0
    }

    /// A purge transaction stops after this much work, or as soon as appends are waiting, so an
    /// SOS never waits behind more than a few milliseconds of deleting.
    static let purgeChunkNanoseconds: UInt64 = 3_000_000
    static let purgeChunkDeletes = 2_000
    /// Records past cutoff + 1 h in a row after which a purge is done.
    static let purgeNewerRunToStop = 10_000

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

    private func markFailed(_ error: LogError) {
        failure.withLock { $0 = $0 ?? error }
        lock.withLock { refusingAll = refusingAll ?? error }
    }

    /// Strong: the writer drains its queue even while its EventLog is being deinitialised.
    private let environment: OpenEnvironment
    private let config: LogConfiguration
    private let onDurable: (@Sendable (CommitReport) -> Void)?
    private let lock = ConditionLock()
    // Guarded by `lock`:
    private var incoming = Batch()
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

    private let stats: LockedValue<LogStatistics>
    private var thread: OSThread?

    /// How this log stores records: set at open (a format-1 log was upgraded then).
    private let format: RecordFormat
    // Writer-thread only:
    private var spare = Batch()
    private var lastCommitStart: UInt64 = 0
    private var awaitingMetaSync: Committed?
    private var purges: [Purge] = []
    /// The file system said ENOSPC: the reserve file was handed back and sheddable records are
    /// refused until the reserve can be allocated again (tried at most every `diskReserveRetryMicroseconds`).
    private var diskFull = false
    private var lastReserveAttempt: UInt64 = 0
    /// A descriptor of data.mdb of the writer's own, opened at start: an fsync through it reports
    /// any write-back error since (Linux reports one to every open descriptor), even one LMDB's
    /// own fdatasync already consumed. How a full disk is told from a failing card.
    private var writebackProbe: FileDescriptor?

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
            // append (issue 30: 0.63x raw LMDB with, see docs/benchmarks.md).
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

    /// Deletes one slice of the first purge's records: the records from `resume` through the purge's sequence whose time is before the cutoff and which
    /// the predicate selects. A failure to commit is a write failure like any other: the log then
    /// refuses everything (failing safe); a full map is grown, or the purge waits for next time.
    private func purgeChunk() {
        guard var purge = purges.first else { return }
        if let failure = failed {
            // Nothing is written after a failure; the purge is asked again at the next start.
            purges.removeFirst()
            purge.completion(.failure(failure))
            return
        }
        var finished = false
        let started = monotonicNanoseconds()
        do {
            let txn = try environment.environment.begin(readOnly: false)
            let deleted = try txn.commit { () throws -> Int in
                var deleted = 0
                let cursor = try txn.cursor(environment.events)
                defer { cursor.close() }
                var start = purge.resume.bigEndian
                var entry = try withUnsafeBytes(of: &start) { try cursor.move(.atOrAfter($0)) }
                var steps = 0
                while let (key, value) = entry {
                    guard key.count == 8 else { entry = try cursor.move(.next); continue }
                    let sequence = key.loadUnaligned(as: UInt64.self).bigEndian
                    if sequence > purge.throughSequence || (purge.stopsAfterNewerRun && purge.newerRun >= Self.purgeNewerRunToStop) { finished = true; break }
                    steps += 1
                    if deleted >= Self.purgeChunkDeletes
                        || (steps % 256 == 0 && (monotonicNanoseconds() &- started >= Self.purgeChunkNanoseconds || appendsWaiting())) {
                        purge.resume = sequence
                        break
                    }
                    guard case .success(let view) = format.parse(sequence: sequence, value: value) else {
                        entry = try cursor.move(.next) // unreadable: left for the reader to report
                        continue
                    }
                    let time = view.timeMicroseconds
                    purge.newerRun = time >= purge.beforeMicroseconds &+ 3_600_000_000 ? purge.newerRun + 1 : 0
                    if time < purge.beforeMicroseconds, time >= purge.notBeforeMicroseconds, purge.matches(view.kind, sequence, view.payload) {
                        try cursor.deleteCurrent()
                        deleted += 1
                        // The page under `key` and `value` changed: position again by value, at the
                        // first sequence after the deleted one.
                        var next = (sequence &+ 1).bigEndian
                        entry = try withUnsafeBytes(of: &next) { try cursor.move(.atOrAfter($0)) }
                        continue
                    }
                    entry = try cursor.move(.next)
                }
                if entry == nil { finished = true }
                purge.removed += UInt64(deleted)
                return deleted
            }
            stats.withLock { $0.purged += UInt64(deleted) }
        } catch let error as LMDBError where error.isMapFull {
            // Deleting needs copy-on-write pages too. Grow and go on; at the cap, try next time.
            if !growMap() {
                purges.removeFirst()
                purge.completion(.failure(.full(capBytes: config.maxMapSize)))
            }
            return
        } catch let error as LMDBError where isFullDisk(error) {
            // A full disk: deleting needs a few copy-on-write pages too, and deleting is what frees
            // pages inside the log. Nothing durable changed (the transaction was aborted): hand
            // back the reserve and go on next time; with none left, try when the purge is asked
            // again.
            if releaseDiskReserve() { return }
            purges.removeFirst()
            purge.completion(.failure(.diskFull(directory: config.directory)))
            return
        } catch {
            stats.withLock { $0.writeErrors += 1 }
            markFailed(LogError(wrapping: error))
            purges.removeFirst()
            purge.completion(.failure(LogError(wrapping: error)))
            return
        }
        if finished {
            purges.removeFirst()
            purge.completion(.success(purge.removed))
        } else {
            purges[0] = purge
        }
    }

    private func appendsWaiting() -> Bool {
        lock.withLock { !incoming.slots.isEmpty }
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

    /// Whether a failed commit or purge met a full disk rather than a failing card. ENOSPC, or EIO
    /// from a write LMDB found cut short with the file system (nearly) full; and in both cases the
    /// data file's write-back must be sound: an error there means pages an earlier commit (or its
    /// meta page) counted on may be gone, and the log must fail (docs/log.md "Failing safe").
    private func isFullDisk(_ error: LMDBError) -> Bool {
        guard error.isDiskFull || error.isIOError else { return false }
        let writebackSound: Bool = switch writebackProbe {
        case .some(let probe): (try? probe.fsync()) != nil
        case .none: false
        }
        guard writebackSound else { return false }
        if error.isDiskFull { return true }
        let available = FileSystem.availableBytes(config.directory) ?? .max
        return available < Self.nearlyFullBytes
    }

    /// Below this much free space, a short write (EIO with sound write-back) is a full disk.
    static let nearlyFullBytes = 4 << 20

    /// Where the reserve is kept: beside data.mdb, on the same file system.
    private var diskReservePath: String { config.directory + "/disk-reserve" }

    /// Makes sure `disk-reserve` holds `diskReserveBytes`. Called at start and, while the disk is
    /// full, at most every `diskReserveRetryMicroseconds`, once the file system has room for
    /// twice the reserve: success ends the full-disk state. A partial allocation is
    /// handed back at once, so a full disk keeps its last bytes for critical records.
    private func holdDiskReserve() {
        lastReserveAttempt = monotonicNanoseconds()
        let bytes = config.diskReserveBytes
        guard bytes > 0 else {
            // No reserve: the disk counts as full until some room is back.
            if diskFull, (FileSystem.availableBytes(config.directory) ?? 0) >= Self.nearlyFullBytes { diskFull = false }
            stats.withLock { $0.diskFull = diskFull }
            return
        }
        let path = diskReservePath
        var held = (FileSystem.size(path) ?? 0) >= bytes
        // After a full disk, take the reserve back only once there is room for it and as much
        // again: taking the very bytes just handed back would end the state only to start it anew.
        if !held && diskFull && (FileSystem.availableBytes(config.directory) ?? 0) < 2 * bytes {
            stats.withLock { $0.diskReserveBytes = 0 }
            return
        }
        if !held {
            do {
                try FileSystem.allocate(path, bytes: bytes)
                held = true
            } catch {
                FileSystem.remove(path)
                if error.errno == .noSpace { diskFull = true }
            }
        }
        if held { diskFull = false }
        stats.withLock { s in
            s.diskReserveBytes = held ? bytes : 0
            s.diskFull = diskFull
        }
    }

    /// Hands the reserve back to the file system and enters the full-disk state. Returns whether
    /// there was a reserve to hand back (so a retry can succeed).
    private func releaseDiskReserve() -> Bool {
        let hadReserve = FileSystem.exists(diskReservePath)
        FileSystem.remove(diskReservePath)
        if !diskFull { lastReserveAttempt = monotonicNanoseconds() }
        diskFull = true
        stats.withLock { s in
            s.diskReserveBytes = 0
            s.diskFull = true
            s.diskFullEpisodes += hadReserve ? 1 : 0
        }
        return hadReserve
    }

    private func nearCap() -> Bool {
        guard let info = try? environment.environment.info(), info.me_mapsize >= config.maxMapSize,
              let page = try? environment.environment.pageSize() else { return false }
        let used = (Int(info.me_last_pgno) + 1) * page
        return Double(used) > Double(config.maxMapSize) * (1 - config.criticalReserve)
    }

    /// Grows the map by the growth factor, up to the cap. Returns false when already at the cap.
    private func growMap() -> Bool {
        guard let info = try? environment.environment.info() else { return false }
        let current = info.me_mapsize
        guard current < config.maxMapSize else { return false }
        let target = min(config.maxMapSize, max(current + (1 << 20), Int(Double(current) * config.growthFactor)))
        let grown: Bool = environment.mapLock.withWriteLock {
            (try? environment.environment.setMapSize(target)) != nil
        }
        if grown {
            stats.withLock { s in
                s.mapGrowths += 1
                s.mapSize = target
            }
        }
        return grown
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
