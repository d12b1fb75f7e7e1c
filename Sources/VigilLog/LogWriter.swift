import CLMDB
import Synchronization
import VigilSystem

/// The one thread that writes the log. LMDB allows one write transaction at a time and binds it to
/// its thread; owning that thread lets the writer batch every waiting append into one commit.
final class LogWriter: @unchecked Sendable {
    typealias Completion = @Sendable (Result<UInt64, LogError>) -> Void

    enum Pending {
        case record(sequence: UInt64, record: LogRecord, priority: AppendPriority, completion: Completion?)
        case checkpoint(name: String, sequence: UInt64, state: [UInt8])
    }

    /// A committed batch whose acknowledgement waits for durability.
    struct Committed {
        var durableThrough: UInt64
        var refused: [UInt64]
        var completions: [(UInt64, Completion)]
        var hasRecords: Bool
    }

    private unowned let log: EventLog
    private let config: LogConfiguration
    private let onDurable: (@Sendable (CommitReport) -> Void)?
    private let lock = ConditionLock()
    // Guarded by `lock`:
    private var queue: [Pending] = []
    private var queuedRecords = 0
    private var nextSequence: UInt64
    private var stopping = false
    private var stopped = false

    private let stats: Mutex<LogStatistics>
    private var thread: OSThread?

    // Writer-thread only:
    private var lastCommitStart: UInt64 = 0
    private var awaitingMetaSync: Committed?

    init(log: EventLog, nextSequence: UInt64, onDurable: (@Sendable (CommitReport) -> Void)?) throws(LogError) {
        self.log = log
        self.config = log.configuration
        self.nextSequence = nextSequence
        self.onDurable = onDurable
        var initial = LogStatistics()
        initial.durableSequence = nextSequence - 1
        initial.mapSize = (try? log.environment.info().me_mapsize) ?? config.initialMapSize
        self.stats = Mutex(initial)
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
            if priority == .sheddable && queuedRecords >= config.queueLimit {
                return .failure(.shed)
            }
            let seq = nextSequence
            nextSequence += 1
            queue.append(.record(sequence: seq, record: record, priority: priority, completion: completion))
            queuedRecords += 1
            lock.signal()
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
            guard !stopping else { return false }
            queue.append(.checkpoint(name: name, sequence: sequence, state: state))
            lock.signal()
            return true
        }
        if !accepted { throw .closed }
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
        if !alreadyStopped { thread?.join() }
        return !alreadyStopped
    }

    // MARK: The writer loop

    private func run() {
        while true {
            guard let batch = nextBatch() else { break }
            if batch.isEmpty {
                // Idle with a commit whose meta page is not yet durable: flush it now.
                syncAndAcknowledgeAwaiting()
                continue
            }
            let started = monotonicNanoseconds()
            lastCommitStart = started
            let committed = write(batch)
            switch config.sync {
            case .full, .none:
                acknowledge(committed)
            case .deferredMeta:
                if committed.error == nil {
                    // This commit's fdatasync also flushed the previous commit's meta page.
                    if let previous = awaitingMetaSync { acknowledge(WriteOutcome(batch: previous, error: nil)) }
                    awaitingMetaSync = committed.batch
                } else {
                    // Acknowledge in order: settle the earlier commit before reporting this failure.
                    syncAndAcknowledgeAwaiting()
                    acknowledge(committed)
                }
            }
        }
        syncAndAcknowledgeAwaiting()
    }

    /// Waits for work and returns the next batch; an empty batch means "idle, flush pending";
    /// nil means "stopped and drained".
    private func nextBatch() -> [Pending]? {
        lock.withLock { () -> [Pending]? in
            while queue.isEmpty {
                if stopping { return nil }
                if awaitingMetaSync != nil { return [] }
                lock.wait()
            }
            // Group commit: commits start at most once per window; appends arriving meanwhile join.
            let window = config.commitWindowMicroseconds * 1_000
            let deadline = lastCommitStart &+ window
            while queuedRecords < config.maxBatch && !stopping && monotonicNanoseconds() < deadline {
                lock.wait(untilMonotonicNanoseconds: deadline)
            }
            var batch: [Pending]
            if queuedRecords <= config.maxBatch {
                batch = []
                swap(&batch, &queue)
                queuedRecords = 0
            } else {
                var taken = 0
                var cut = 0
                while cut < queue.count && taken < config.maxBatch {
                    if case .record = queue[cut] { taken += 1 }
                    cut += 1
                }
                batch = Array(queue[..<cut])
                queue.removeFirst(cut)
                queuedRecords -= taken
            }
            return batch
        }
    }

    struct WriteOutcome {
        var batch: Committed
        var error: LogError?
    }

    /// Writes a batch in one transaction, growing the map on MDB_MAP_FULL and refusing what does
    /// not fit at the cap (sheddable first). Never throws: failures go to the completions.
    private func write(_ batch: [Pending]) -> WriteOutcome {
        var refusedSequences = Set<UInt64>()
        var completions: [(UInt64, Completion)] = []
        var maxSequence: UInt64 = 0
        var hasRecords = false
        for item in batch {
            if case .record(let seq, _, _, let completion) = item {
                hasRecords = true
                maxSequence = max(maxSequence, seq)
                if let completion { completions.append((seq, completion)) }
            }
        }
        // Near the cap, keep the reserve for critical events.
        if nearCap() {
            for item in batch {
                if case .record(let seq, _, .sheddable, _) = item { refusedSequences.insert(seq) }
            }
        }

        var failure: LogError?
        attempts: while true {
            do {
                try commit(batch, skipping: refusedSequences)
                break attempts
            } catch let error where error.isMapFull {
                if growMap() { continue attempts }
                // At the cap: refuse sheddable records first, then everything.
                let sheddable = batch.compactMap { item -> UInt64? in
                    if case .record(let seq, _, .sheddable, _) = item, !refusedSequences.contains(seq) { return seq }
                    return nil
                }
                if !sheddable.isEmpty {
                    refusedSequences.formUnion(sheddable)
                    continue attempts
                }
                for item in batch { if case .record(let seq, _, _, _) = item { refusedSequences.insert(seq) } }
                failure = .full(capBytes: config.maxMapSize)
                break attempts
            } catch {
                failure = .lmdb(error)
                stats.withLock { $0.writeErrors += 1 }
                for item in batch { if case .record(let seq, _, _, _) = item { refusedSequences.insert(seq) } }
                break attempts
            }
        }
        let refusedCount = UInt64(refusedSequences.count)
        let refusedForSpace: Bool
        switch failure {
        case nil, .full?: refusedForSpace = true
        default: refusedForSpace = false
        }
        stats.withLock { s in
            s.commits += failure == nil ? 1 : 0
            s.refusedFull += refusedForSpace ? refusedCount : 0
            s.largestBatch = max(s.largestBatch, batch.count)
            switch config.sync {
            case .full: s.flushes += failure == nil ? 2 : 0
            case .deferredMeta: s.flushes += failure == nil ? 1 : 0
            case .none: break
            }
        }
        let committed = Committed(durableThrough: maxSequence, refused: refusedSequences.sorted(),
                                  completions: completions, hasRecords: hasRecords)
        return WriteOutcome(batch: committed, error: failure)
    }

    private func commit(_ batch: [Pending], skipping refused: Set<UInt64>) throws(LMDBError) {
        do {
            try commitUntyped(batch, skipping: refused)
        } catch let error as LMDBError {
            throw error
        } catch {
            throw LMDBError(code: -1, operation: "commit: \(error)")
        }
    }

    private func commitUntyped(_ batch: [Pending], skipping refused: Set<UInt64>) throws {
        let txn = try log.environment.begin(readOnly: false)
        var records: UInt64 = 0
        var bytes: UInt64 = 0
        var checkpoints: UInt64 = 0
        do {
            for item in batch {
                switch item {
                case .record(let seq, let record, _, _):
                    if refused.contains(seq) { continue }
                    let size = record.encodedSize
                    try withSequenceKey(seq) { key in
                        try txn.reserve(log.events, key: key, size: size, append: true) { record.encode(into: $0) }
                    }
                    records += 1
                    bytes += UInt64(size)
                case .checkpoint(let name, let seq, let state):
                    let value = withUnsafeBytes(of: seq.bigEndian) { Array($0) } + state
                    let key = Array(name.utf8)
                    try key.withUnsafeBytes { k in
                        try value.withUnsafeBytes { v in try txn.put(log.checkpoints, key: k, value: v) }
                    }
                    checkpoints += 1
                }
            }
            try txn.commit()
        } catch {
            // mdb_txn_commit frees the transaction even when it fails; abort only before commit.
            if (error as? LMDBError)?.operation != "mdb_txn_commit" { txn.abort() }
            throw error
        }
        stats.withLock { s in
            s.recordsWritten += records
            s.valueBytesWritten += bytes
            s.checkpointsWritten += checkpoints
        }
    }

    private func nearCap() -> Bool {
        guard let info = try? log.environment.info(), let page = try? log.environment.pageSize() else { return false }
        guard info.me_mapsize >= config.maxMapSize else { return false }
        let used = (Int(info.me_last_pgno) + 1) * page
        return Double(used) > Double(config.maxMapSize) * (1 - config.criticalReserve)
    }

    /// Grows the map by the growth factor, up to the cap. Returns false when already at the cap.
    private func growMap() -> Bool {
        guard let info = try? log.environment.info() else { return false }
        let current = info.me_mapsize
        guard current < config.maxMapSize else { return false }
        let target = min(config.maxMapSize, max(current + (1 << 20), Int(Double(current) * config.growthFactor)))
        let grown: Bool = log.mapLock.withWriteLock {
            (try? log.environment.setMapSize(target)) != nil
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
        do {
            try log.environment.sync(force: true)
            stats.withLock { $0.flushes += 1 }
            acknowledge(WriteOutcome(batch: pending, error: nil))
        } catch {
            // The commit happened but its durability is unknown: report it as failed rather
            // than claim what we cannot prove.
            stats.withLock { $0.writeErrors += 1 }
            var failed = pending
            failed.refused = failed.completions.map(\.0)
            acknowledge(WriteOutcome(batch: failed, error: LogError(wrapping: error)))
        }
    }

    /// Calls completions and `onDurable` for a batch that is durable (error == nil; `refused`
    /// lists what was turned away at the cap) or that failed as a whole (error != nil).
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
                completion(.failure(.full(capBytes: config.maxMapSize)))
            } else {
                completion(.success(seq))
            }
        }
        if batch.hasRecords {
            onDurable?(CommitReport(durableThrough: batch.durableThrough, refused: batch.refused))
        }
    }
}
