import Foundation
import Testing
import VigilLog

@Suite("Group commit")
struct GroupCommitTests {
    @Test func appendsEnqueuedTogetherShareFewCommits() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.commitWindowMicroseconds = 5_000
            let log = try EventLog.open(config)
            // Four producers enqueue 500 records each as fast as they can.
            let sequences = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for producer in 0..<4 {
                    group.addTask {
                        var mine: [UInt64] = []
                        for i in 0..<500 {
                            mine.append(try log.append(sampleRecord(producer * 500 + i), priority: .sheddable))
                        }
                        return mine
                    }
                }
                var all: [UInt64] = []
                for try await part in group { all += part }
                return all
            }
            log.close()
            let stats = log.statistics
            print("group commit: \(stats.recordsWritten) records in \(stats.commits) commits, largest batch \(stats.largestBatch)")
            #expect(Set(sequences) == Set(1...2_000))
            #expect(stats.recordsWritten == 2_000)
            #expect(stats.commits * 20 <= stats.recordsWritten, "\(stats.commits) commits for \(stats.recordsWritten) records")
            #expect(stats.largestBatch > 1)
            #expect(try readAll(log).sequences == Array(1...2_000))
        }
    }

    @Test func commitsStartAtMostOncePerWindow() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.commitWindowMicroseconds = 5_000
            let log = try EventLog.open(config)
            let started = ContinuousClock.now
            // A steady trickle: one append every 0.5 ms for about 150 ms.
            for i in 0..<300 {
                try log.append(sampleRecord(i), priority: .critical)
                try await Task.sleep(for: .microseconds(500))
            }
            _ = try await log.appendDurably(sampleRecord(300), priority: .critical)
            let elapsed = ContinuousClock.now - started
            let stats = log.statistics
            log.close()
            let windows = Int(elapsed / .microseconds(5_000))
            print("trickle: \(stats.commits) commits over \(elapsed) (\(windows) windows)")
            #expect(stats.recordsWritten == 301)
            // One commit may start at once; after that at most one per window.
            #expect(Int(stats.commits) <= windows + 2)
            #expect(stats.commits < 301)
        }
    }

    @Test func maxBatchSplitsALargeQueueIntoSeveralCommits() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.maxBatch = 100
            config.commitWindowMicroseconds = 2_000_000
            let log = try EventLog.open(config)
            _ = try await log.appendDurably(sampleRecord(0), priority: .critical) // opens a long window
            let results = await appendAll(log, (1...1_000).map { sampleRecord($0) }, priority: .critical)
            #expect(results.allSatisfy { $0.successValue != nil })
            log.close()
            let stats = log.statistics
            #expect(stats.largestBatch <= 100)
            #expect(stats.commits >= 11)
            #expect(try readAll(log).sequences == Array(1...1_001))
        }
    }
}
