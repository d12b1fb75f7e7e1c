import Foundation
import Testing
import VigilLog
import VigilSystem

@Suite("Retention purges")
struct PurgeTests {
    /// Waits for a purge's completion: the writer's completion resumes the waiting test, so
    /// nothing polls and a slow CI disk only makes it take longer.
    final class Done: Sendable {
        private struct State {
            var result: Result<UInt64, LogError>?
            var waiter: CheckedContinuation<Result<UInt64, LogError>?, Never>?
        }
        private let state = LockedValue(State())

        var isDone: Bool { state.withLock { $0.result != nil } }

        func set(_ r: Result<UInt64, LogError>) {
            let waiter = state.withLock { s -> CheckedContinuation<Result<UInt64, LogError>?, Never>? in
                s.result = r
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: r)
        }

        func wait() async -> Result<UInt64, LogError>? {
            await withCheckedContinuation { c in
                let ready = state.withLock { s -> Result<UInt64, LogError>? in
                    if s.result == nil { s.waiter = c }
                    return s.result
                }
                if let ready { c.resume(returning: ready) }
            }
        }
    }

    @Test func onlyMatchingRecordsOlderThanTheCutoffAndUpToTheSequenceAreDeleted() async throws {
        try await withTemporaryDirectory { base in
            let log = try EventLog.open(LogConfiguration(directory: logDirectory(in: base)))
            let records = (0..<30_000).map { sampleRecord($0) } // kinds 1...9, 1 ms apart
            _ = await appendAll(log, records, priority: .critical)
            let cutoff = records[20_000].timeMicroseconds
            let done = Done()
            // Kind 1 only, before record 20,000, and never past sequence 25,000.
            try log.purge(before: cutoff, throughSequence: 25_000, matches: { kind, _, _ in kind == 1 }) { r in
                done.set(r)
            }
            // Appends go on meanwhile and are not touched (they are past the sequence).
            let later = await appendAll(log, (30_000..<30_100).map { sampleRecord($0) }, priority: .critical)
            #expect(later.allSatisfy { $0.successValue != nil })
            let removed = try #require(await done.wait()).successValue
            let expected = records.indices.filter { $0 < 20_000 && records[$0].kind == 1 }.count
            #expect(removed == UInt64(expected))
            let left = try readAll(log)
            #expect(left.records.count == 30_100 - expected)
            #expect(left.records.allSatisfy { !($0.record.kind == 1 && $0.record.timeMicroseconds < cutoff) })
            #expect(log.statistics.purged == UInt64(expected))
            // Asked again, nothing is left to delete.
            let again = Done()
            try log.purge(before: cutoff, throughSequence: 25_000, matches: { kind, _, _ in kind == 1 }) { r in again.set(r) }
            #expect(try #require(await again.wait()).successValue == 0)
            log.close()
        }
    }

    /// The promise is "an append waits for one slice of the deletion, not for all of it". It is
    /// checked by what had been deleted when the append was acknowledged, not by a stopwatch: a
    /// loaded CI machine with a slow disk can take a second for the three fsyncs involved, and
    /// that says nothing about the ordering under test.
    @Test func anAppendDuringALongPurgeIsAcknowledgedAfterASliceNotTheWholePurge() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.maxBatch = 50_000
            let log = try EventLog.open(config)
            // Critical, so a loaded machine cannot shed part of the fill at the queue limit.
            let filled = await appendAll(log, (0..<200_000).map { LogRecord(kind: 1, timeMicroseconds: UInt64($0), payload: [1, 2, 3]) },
                                         priority: .critical)
            try #require(filled.allSatisfy { $0.successValue != nil })
            let done = Done()
            // The deletion's first look at a record waits until the append is queued, so the
            // append always arrives while the purge is under way, however the threads are scheduled.
            let appendQueued = DispatchSemaphore(value: 0)
            let gate = LockedValue(true)
            try log.purge(before: 1_000_000, throughSequence: .max, matches: { _, _, _ in
                // Bounded, so a test that failed to queue the append fails instead of hanging.
                if gate.withLock({ let closed = $0; $0 = false; return closed }) { _ = appendQueued.wait(timeout: .now() + 60) }
                return true
            }) { r in done.set(r) }
            // One critical event and nothing else: under deferred-meta its acknowledgement needs the
            // writer to sync while it is busy deleting.
            let acknowledged = LockedValue<(sequence: UInt64?, purgedBefore: UInt64, purgeFinished: Bool)?>(nil)
            let whenAcknowledged = DispatchSemaphore(value: 0)
            defer { appendQueued.signal() } // whatever happens, the purge goes on
            try log.append(LogRecord(kind: 3, timeMicroseconds: 2_000_000, payload: [9]), priority: .critical) { result in
                // Runs on the writer thread, so the statistics are exactly those of the moment.
                acknowledged.withLock {
                    $0 = (try? result.get(), log.statistics.purged, done.isDone)
                }
                whenAcknowledged.signal()
            }
            appendQueued.signal()
            let inTime = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                DispatchQueue.global().async { c.resume(returning: whenAcknowledged.wait(timeout: .now() + 60) == .success) }
            }
            try #require(inTime, "the append was not acknowledged within a minute")
            let ack = try #require(acknowledged.withLock { $0 })
            #expect(ack.sequence == 200_001)
            #expect(!ack.purgeFinished, "the append waited for the whole purge")
            // The writer finishes the slice it is in (it stops within 256 records once an append
            // waits) and may run one more between the append's commit and its sync: two slices of
            // at most 2,000 deletions each.
            #expect(ack.purgedBefore <= 4_000, "\(ack.purgedBefore) records deleted before the append was acknowledged")
            #expect(try #require(await done.wait()).successValue == 200_000)
            log.close()
        }
    }

    @Test func thePredicateSeesThePayload() async throws {
        try await withTemporaryDirectory { base in
            let log = try EventLog.open(LogConfiguration(directory: logDirectory(in: base)))
            _ = await appendAll(log, (0..<100).map { LogRecord(kind: 1, timeMicroseconds: UInt64($0), payload: [UInt8($0 % 2)]) },
                                priority: .critical)
            let done = Done()
            try log.purge(before: 1_000, throughSequence: .max, matches: { _, _, payload in payload.first == 1 }) { r in
                done.set(r)
            }
            #expect(try #require(await done.wait()).successValue == 50)
            #expect(try readAll(log).records.allSatisfy { $0.record.payload == [0] })
            log.close()
        }
    }
}
