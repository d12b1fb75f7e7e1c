import CLMDB
import VigilSystem

/// The writer thread: takes batches, commits them in one transaction each, flushes meta pages and
/// acknowledges in order. Everything here runs on the writer thread `init` starts.
extension LogWriter {
    func run() {
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
    func settle(_ outcome: WriteOutcome) {
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
    func take() -> Batch? {
        lock.withLock { () -> Batch? in
            while incoming.isEmpty || (held && !stopping) {
                if stopping { return nil }
                if !held && (awaitingMetaSync != nil || !purges.isEmpty) { return Batch() }
                lock.wait()
            }
            // Group commit: commits start at most once per window; appends arriving meanwhile join.
            // A window runs from the previous commit's start; the first commit waits for none (the
            // monotonic clock counts from boot, so "0 plus a window" would hold it until the
            // machine had been up that long: an hour-long window in a test hung a fresh machine).
            let deadline = lastCommitStart.map { $0 &+ config.commitWindowMicroseconds &* 1_000 } ?? 0
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
    func write(_ batch: Batch, slots range: Range<Int>, completions: ArraySlice<(UInt64, Completion)>,
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
    func commit(_ bytes: [UInt8], slots: ArraySlice<Slot>, skipping refused: Set<UInt64>,
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

    func syncAndAcknowledgeAwaiting() {
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
    func acknowledge(_ outcome: WriteOutcome) {
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
