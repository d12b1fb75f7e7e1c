import Testing
import VigilLog

/// LMDB's locks are per process, so EventLog shares one environment per directory per process
/// and allows one writer per directory.
@Suite("Several EventLogs on one directory in one process")
struct SameProcessTests {
    @Test func secondWriterIsRefusedUntilTheFirstCloses() async throws {
        try await withTemporaryDirectory { base in
            let config = LogConfiguration(directory: logDirectory(in: base))
            let first = try EventLog.open(config)
            _ = try await first.appendDurably(sampleRecord(0), priority: .critical)
            do {
                _ = try EventLog.open(config)
                Issue.record("a second writer opened the same directory")
            } catch {
                guard case .incompatible? = error as? LogError else {
                    Issue.record("expected .incompatible, got \(error)")
                    return
                }
            }
            first.close()
            let second = try EventLog.open(config)
            #expect(try await second.appendDurably(sampleRecord(1), priority: .critical) == 2)
            second.close()
            #expect(try readAll(first).sequences == [1, 2])
        }
    }

    @Test func readOnlyLogSeesTheWritersAppendsAtOnce() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let writer = try EventLog.open(LogConfiguration(directory: directory))
            let reader = try EventLog.openReadOnly(directory: directory)
            for i in 0..<3 {
                let seq = try await writer.appendDurably(sampleRecord(i), priority: .critical)
                #expect(try reader.read { try $0.lastSequence() } == seq)
            }
            writer.close()
            #expect(try readAll(reader).records.map(\.record) == (0..<3).map { sampleRecord($0) })
        }
    }

    @Test func openingForWritingWhileOpenReadOnlyIsRefused() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            do {
                let log = try EventLog.open(LogConfiguration(directory: directory))
                _ = try await log.appendDurably(sampleRecord(0), priority: .critical)
                log.close()
            }
            let reader = try EventLog.openReadOnly(directory: directory)
            do {
                _ = try EventLog.open(LogConfiguration(directory: directory))
                Issue.record("opened for writing over a read-only environment")
            } catch {
                guard case .incompatible? = error as? LogError else {
                    Issue.record("expected .incompatible, got \(error)")
                    return
                }
            }
            #expect(try readAll(reader).sequences == [1])
        }
    }
}
