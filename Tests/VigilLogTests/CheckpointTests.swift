import Testing
import VigilLog

@Suite("Projection checkpoints")
struct CheckpointTests {
    @Test func checkpointIsReadableOnceALaterAppendIsDurable() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let log = try EventLog.open(LogConfiguration(directory: directory))
            for i in 0..<3 { _ = try await log.appendDurably(sampleRecord(i), priority: .critical) }
            #expect(try log.read { try $0.checkpoint(named: "projections.v1") } == nil)

            let state: [UInt8] = Array("{\"appliedThrough\":3}".utf8)
            try log.writeCheckpoint(name: "projections.v1", throughSequence: 3, state: state)
            _ = try await log.appendDurably(sampleRecord(3), priority: .critical)

            let stored = try #require(try log.read { try $0.checkpoint(named: "projections.v1") })
            #expect(stored.sequence == 3)
            #expect(stored.state == state)
            #expect(log.statistics.checkpointsWritten == 1)
            // Other names are independent.
            #expect(try log.read { try $0.checkpoint(named: "projections.v2") } == nil)
            log.close()
        }
    }

    @Test func laterCheckpointReplacesEarlierAndSurvivesReopen() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            do {
                let log = try EventLog.open(LogConfiguration(directory: directory))
                _ = try await log.appendDurably(sampleRecord(0), priority: .critical)
                try log.writeCheckpoint(name: "p", throughSequence: 1, state: [1])
                _ = try await log.appendDurably(sampleRecord(1), priority: .critical)
                try log.writeCheckpoint(name: "p", throughSequence: 2, state: [2, 2])
                try log.writeCheckpoint(name: "q", throughSequence: 2, state: [])
                log.close() // close writes what is queued
            }
            let reader = try EventLog.openReadOnly(directory: directory)
            let p = try #require(try reader.read { try $0.checkpoint(named: "p") })
            #expect(p.sequence == 2)
            #expect(p.state == [2, 2])
            let q = try #require(try reader.read { try $0.checkpoint(named: "q") })
            #expect(q.sequence == 2)
            #expect(q.state.isEmpty)
        }
    }

    @Test func checkpointIsNeverDurableBeforeTheEventsItCovers() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.commitWindowMicroseconds = 3_600_000_000 // an hour: a loaded disk's first flush cannot use it up
            let log = try EventLog.open(config)
            _ = try await log.appendDurably(sampleRecord(0), priority: .critical) // opens a long window
            let collector = CompletionCollector()
            try log.append(sampleRecord(1), priority: .critical, completion: collector.handler(tag: 2))
            try log.writeCheckpoint(name: "p", throughSequence: 2, state: [9])
            // Neither the event nor the checkpoint is written yet.
            #expect(try log.read { try $0.checkpoint(named: "p") } == nil)
            #expect(try log.read { try $0.lastSequence() } == 1)
            log.close()
            #expect(collector.results[2]?.successValue == 2)
            #expect(try log.read { try $0.checkpoint(named: "p") }?.sequence == 2)
            #expect(try log.read { try $0.lastSequence() } == 2)
        }
    }
}
