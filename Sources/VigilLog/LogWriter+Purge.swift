import CLMDB
import VigilSystem

/// Deleting old records (retention, compaction) on the writer thread, in small transactions
/// between commits, so an append never waits long behind a deletion.
extension LogWriter {
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


    /// Deletes one slice of the first purge's records: the records from `resume` through the purge's sequence whose time is before the cutoff and which
    /// the predicate selects. A failure to commit is a write failure like any other: the log then
    /// refuses everything (failing safe); a full map is grown, or the purge waits for next time.
    func purgeChunk() {
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

    func appendsWaiting() -> Bool {
        lock.withLock { !incoming.slots.isEmpty }
    }
}
