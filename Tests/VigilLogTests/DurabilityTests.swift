import Foundation
import Testing
import VigilLog
import VigilSystem

/// What was true at the moment an append was acknowledged.
private struct AckObservation: Sendable {
    var sequence: UInt64
    var succeeded: Bool
    var visibleToOtherHandle: Bool
    var durableSequence: UInt64
}

/// What was true at the moment `onDurable` reported a commit.
private struct CommitObservation: Sendable {
    var report: CommitReport
    var visibleToOtherHandle: Bool
    /// Whether a separate process (its own LMDB environment) already read `durableThrough`.
    var visibleToOtherProcess: Bool
    /// The writer's counters when the report was made (only the writer thread changes them).
    var stats: LogStatistics
}

@Suite("Acknowledgement only after a durable commit")
struct DurabilityTests {
    /// Every acknowledgement checks — on the writer thread, before the writer goes on — that the
    /// acknowledged sequence is already readable through a separate read-only EventLog, and every
    /// commit report checks that a separate process (mdb_dump, with its own LMDB environment;
    /// within one process EventLog shares the environment) reads it too.
    @Test(.enabled(if: lmdbUtilsInstalled, "needs mdb_dump from Debian's lmdb-utils"),
          arguments: [SyncMode.full, SyncMode.deferredMeta])
    func acknowledgesOnlyAfterDurableCommit(mode: SyncMode) async throws {
        try await withTemporaryDirectory("ack-\(mode.rawValue)") { base in
            let directory = logDirectory(in: base)
            var config = LogConfiguration(directory: directory)
            config.sync = mode
            config.commitWindowMicroseconds = 1_000

            let readerBox = LockedValue<EventLog?>(nil)
            let logBox = LockedValue<EventLog?>(nil)
            let commits = LockedValue<[CommitObservation]>([])
            let acks = LockedValue<[AckObservation]>([])

            @Sendable func otherHandleSees(_ sequence: UInt64) -> Bool {
                guard let reader = readerBox.withLock({ $0 }) else { return false }
                return (try? reader.read { try $0.lastSequence() >= sequence }) ?? false
            }

            let log = try EventLog.open(config) { report in
                let stats = logBox.withLock { $0 }?.statistics ?? LogStatistics()
                let seenElsewhere = (try? sequencesSeenByAnotherProcess(directory: directory))?
                    .contains(report.durableThrough) ?? false
                commits.withLock {
                    $0.append(CommitObservation(report: report, visibleToOtherHandle: otherHandleSees(report.durableThrough),
                                                visibleToOtherProcess: seenElsewhere, stats: stats))
                }
            }
            logBox.withLock { $0 = log }
            let reader = try EventLog.openReadOnly(directory: directory)
            readerBox.withLock { $0 = reader }

            // One at a time (one commit each), then a burst (grouped commits).
            let ackHandler: @Sendable (Result<UInt64, LogError>) -> Void = { result in
                let seq = result.successValue ?? 0
                let durable = log.statistics.durableSequence
                acks.withLock {
                    $0.append(AckObservation(sequence: seq, succeeded: result.successValue != nil,
                                             visibleToOtherHandle: otherHandleSees(seq), durableSequence: durable))
                }
            }
            for i in 0..<5 {
                // Wait for this one before the next so each gets its own commit: the completion
                // itself resumes the test (no polling).
                let seq: UInt64 = try await withCheckedThrowingContinuation { c in
                    do {
                        _ = try log.append(sampleRecord(i), priority: .critical) { result in
                            ackHandler(result)
                            c.resume(with: result.mapError { $0 as any Error })
                        }
                    } catch {
                        c.resume(throwing: error)
                    }
                }
                #expect(acks.withLock { $0.contains { $0.sequence == seq } })
            }
            for i in 5..<200 { try log.append(sampleRecord(i), priority: .sheddable, completion: ackHandler) }
            let last = try await log.appendDurably(sampleRecord(200), priority: .critical)
            #expect(last == 201)
            #expect(try reader.read { try $0.lastSequence() } == 201)
            log.close()

            let observed = acks.withLock { $0 }
            #expect(observed.count == 200)
            #expect(observed.allSatisfy { $0.succeeded })
            for ack in observed {
                #expect(ack.visibleToOtherHandle, "seq \(ack.sequence) acknowledged before another handle could read it")
                #expect(ack.durableSequence >= ack.sequence, "seq \(ack.sequence) acknowledged with durableSequence \(ack.durableSequence)")
            }
            // Acknowledgements come in sequence order.
            #expect(observed.map(\.sequence) == Array(1...200))

            let reports = commits.withLock { $0 }
            #expect(!reports.isEmpty)
            #expect(reports.allSatisfy { $0.visibleToOtherHandle })
            #expect(reports.allSatisfy { $0.visibleToOtherProcess })
            #expect(reports.allSatisfy { $0.report.refused.isEmpty })
            #expect(reports.map(\.report.durableThrough) == reports.map(\.report.durableThrough).sorted())
            #expect(reports.last?.report.durableThrough == 201)

            // Full mode: the k-th commit is reported right after it, with its two flushes done.
            // Deferred-meta mode: the k-th commit is reported only once a later flush made its
            // meta page durable — either commit k+1's data flush or an idle sync.
            var previousIdleSyncs: UInt64 = 0
            for (index, observation) in reports.enumerated() {
                let k = UInt64(index + 1)
                let stats = observation.stats
                switch mode {
                case .full:
                    #expect(stats.commits == k)
                    #expect(stats.flushes == 2 * k)
                case .deferredMeta:
                    let idleSyncs = stats.flushes - stats.commits
                    #expect(stats.commits > k || idleSyncs > previousIdleSyncs,
                            "commit \(k) acknowledged with no later flush (\(stats.commits) commits, \(stats.flushes) flushes)")
                    previousIdleSyncs = idleSyncs
                case .none:
                    break
                }
            }
            #expect(log.statistics.durableSequence == 201)
            #expect(try sequencesSeenByAnotherProcess(directory: directory) == Array(1...201))
            withExtendedLifetime(reader) {}
        }
    }

    @Test func deferredMetaFlushesLessPerCommitThanFullUnderBurst() async throws {
        func flushesPerCommit(_ mode: SyncMode) async throws -> (ratio: Double, stats: LogStatistics) {
            try await withTemporaryDirectory("burst-\(mode.rawValue)") { base in
                var config = LogConfiguration(directory: logDirectory(in: base))
                config.sync = mode
                config.maxBatch = 25 // forces back-to-back commits for the burst
                config.commitWindowMicroseconds = 100
                let log = try EventLog.open(config)
                let results = await appendAll(log, (0..<1_000).map { sampleRecord($0) }, priority: .critical)
                #expect(results.allSatisfy { $0.successValue != nil })
                log.close()
                let stats = log.statistics
                #expect(stats.recordsWritten == 1_000)
                return (Double(stats.flushes) / Double(stats.commits), stats)
            }
        }
        let full = try await flushesPerCommit(.full)
        let deferred = try await flushesPerCommit(.deferredMeta)
        print("flushes/commit: full \(full.ratio) (\(full.stats.flushes)/\(full.stats.commits)), "
              + "deferred-meta \(deferred.ratio) (\(deferred.stats.flushes)/\(deferred.stats.commits))")
        #expect(full.stats.commits >= 40)
        #expect(deferred.stats.commits >= 40)
        #expect(full.ratio == 2)
        #expect(deferred.ratio < 1.5)
        #expect(deferred.ratio < full.ratio)
    }

    /// The commit window runs from the previous commit: the first one does not wait for it, however
    /// long it is and however short the time since the machine booted (the monotonic clock's zero).
    @Test func theFirstCommitDoesNotWaitOutAWindow() throws {
        let dir = TemporaryDirectory()
        var config = LogConfiguration(directory: logDirectory(in: dir.path))
        config.commitWindowMicroseconds = 100 * 86_400_000_000 // a hundred days: longer than any uptime
        let log = try EventLog.open(config)
        defer { log.close() }
        let done = DispatchSemaphore(value: 0)
        try log.append(sampleRecord(0), priority: .critical) { _ in done.signal() }
        // A guard, not a pace: the commit takes milliseconds; a writer holding it for the window
        // would fail here instead of hanging the suite.
        #expect(done.wait(timeout: .now() + 60) == .success, "the first commit waited for a window")
    }

    @Test func closeMakesEverythingQueuedDurableAndAcknowledgesIt() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            var config = LogConfiguration(directory: directory)
            // Nothing would commit for an hour on its own. (At 30 s this failed once in CI: under the
            // full suite's disk load the first commit's flush alone took the window.)
            config.commitWindowMicroseconds = 3_600_000_000
            let log = try EventLog.open(config)
            _ = try await log.appendDurably(sampleRecord(0), priority: .critical) // starts the window
            let collector = CompletionCollector()
            for i in 1...50 { try log.append(sampleRecord(i), priority: .sheddable, completion: collector.handler(tag: UInt64(i))) }
            #expect(collector.results.isEmpty, "acknowledged before the commit window elapsed")
            log.close()
            let results = collector.results
            #expect(results.count == 50)
            #expect(results.values.allSatisfy { $0.successValue != nil })
            #expect(log.durableSequence == 51)
            #expect(try readAll(log).sequences == Array(1...51))
        }
    }
}
