import Testing
import VigilLog

@Suite("Appending, reading back and reopening")
struct AppendAndReadTests {
    @Test func recordsAppendedBothWaysReadBackInSequenceOrderAfterReopen() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let records = (0..<10).map { sampleRecord($0) }
            do {
                var config = LogConfiguration(directory: directory)
                config.commitWindowMicroseconds = 500
                let log = try EventLog.open(config)
                // First half awaited one by one, second half through completions.
                for (i, record) in records[0..<5].enumerated() {
                    let seq = try await log.appendDurably(record, priority: .critical)
                    #expect(seq == UInt64(i + 1))
                }
                let results = await appendAll(log, Array(records[5...]), priority: .sheddable)
                #expect(results.map(\.successValue) == (6...10).map { Optional(UInt64($0)) })
                log.close()
            }

            let reopened = try EventLog.open(LogConfiguration(directory: directory))
            let contents = try readAll(reopened)
            #expect(contents.corrupt.isEmpty)
            #expect(contents.sequences == Array(1...10))
            #expect(firstDifference(contents.records.map(\.record), records) == nil)
            #expect(try reopened.read { try $0.lastSequence() } == 10)
            #expect(try reopened.read { try $0.firstSequence() } == 1)
            // The writer resumes after the last stored sequence.
            #expect(try await reopened.appendDurably(sampleRecord(10), priority: .critical) == 11)
            reopened.close()
        }
    }

    @Test func readOnlyOpenSeesWhatTheWriterStored() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let records = (0..<7).map { sampleRecord($0, payloadBytes: $0 * 50) }
            do {
                let log = try EventLog.open(LogConfiguration(directory: directory))
                _ = await appendAll(log, records, priority: .critical)
                log.close()
            }
            let reader = try EventLog.openReadOnly(directory: directory)
            let contents = try readAll(reader)
            #expect(contents.sequences == Array(1...7))
            #expect(contents.records.map(\.record) == records)
            #expect(try reader.read { try $0.lastSequence() } == 7)
            #expect(try reader.read { try $0.firstSequence() } == 1)
            // A reader has no writer: appends are refused, not crashed on.
            #expect(throws: LogError.self) { try reader.append(sampleRecord(0), priority: .critical) }
        }
    }

    @Test func forEachStartsAtTheGivenSequenceAndStopsWhenToldTo() async throws {
        try await withTemporaryDirectory { base in
            let log = try EventLog.open(LogConfiguration(directory: logDirectory(in: base)))
            let records = (0..<20).map { sampleRecord($0) }
            _ = await appendAll(log, records, priority: .critical)
            log.close()

            let tail = try readAll(log, from: 15)
            #expect(tail.sequences == Array(15...20))
            #expect(tail.records.map(\.record) == Array(records[14...]))

            // Past the end: nothing.
            #expect(try readAll(log, from: 21).records.isEmpty)

            // Returning false stops the iteration at once.
            var visited: [UInt64] = []
            try log.read { txn in
                try txn.forEach(from: 3) { result in
                    visited.append(try result.get().sequence)
                    return visited.count < 4
                }
            }
            #expect(visited == [3, 4, 5, 6])
        }
    }

    @Test func emptyLogHasNoSequences() async throws {
        try await withTemporaryDirectory { base in
            let log = try EventLog.open(LogConfiguration(directory: logDirectory(in: base)))
            #expect(try log.read { try $0.lastSequence() } == 0)
            #expect(try log.read { try $0.firstSequence() } == 0)
            #expect(try readAll(log).records.isEmpty)
            #expect(log.durableSequence == 0)
            log.close()
        }
    }

    @Test func payloadIsStoredVerbatimIncludingEmptyAndLarge() async throws {
        try await withTemporaryDirectory { base in
            let log = try EventLog.open(LogConfiguration(directory: logDirectory(in: base)))
            let records = [
                LogRecord(kind: 0, timeMicroseconds: 0, payload: []),
                LogRecord(kind: UInt32.max, timeMicroseconds: UInt64.max, payload: [0x00, 0xFF, 0x80]),
                LogRecord(kind: 3, timeMicroseconds: 42, payload: (0..<20_000).map { UInt8(truncatingIfNeeded: $0 * 7) }),
            ]
            for record in records { _ = try await log.appendDurably(record, priority: .critical) }
            log.close()
            #expect(try readAll(log).records.map(\.record) == records)
        }
    }

    @Test func openReadOnlyOfMissingDirectoryIsReportedAsMissing() async throws {
        try await withTemporaryDirectory { base in
            let missing = base + "/nothing-here"
            do {
                _ = try EventLog.openReadOnly(directory: missing)
                Issue.record("openReadOnly created or found a log in an empty directory")
            } catch {
                guard case .missing(let directory)? = error as? LogError else {
                    Issue.record("expected .missing, got \(error)")
                    return
                }
                #expect(directory == missing)
            }
        }
    }
}
