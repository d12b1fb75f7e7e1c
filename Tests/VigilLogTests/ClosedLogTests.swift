import Testing
import VigilLog

@Suite("A closed log")
struct ClosedLogTests {
    @Test func appendAfterCloseThrowsClosed() async throws {
        try await withTemporaryDirectory { base in
            let log = try EventLog.open(LogConfiguration(directory: logDirectory(in: base)))
            _ = try await log.appendDurably(sampleRecord(0), priority: .critical)
            log.close()

            for priority in [AppendPriority.critical, .sheddable] {
                do {
                    try log.append(sampleRecord(1), priority: priority)
                    Issue.record("append after close was accepted")
                } catch {
                    #expect(error.isClosed, "got \(error)")
                }
                do {
                    _ = try await log.appendDurably(sampleRecord(1), priority: priority)
                    Issue.record("appendDurably after close was accepted")
                } catch {
                    #expect(error.isClosed, "got \(error)")
                }
            }
            do {
                try log.writeCheckpoint(name: "x", throughSequence: 1, state: [1])
                Issue.record("writeCheckpoint after close was accepted")
            } catch {
                #expect(error.isClosed, "got \(error)")
            }
            // Nothing was written after close, and reading still works.
            #expect(try readAll(log).sequences == [1])
            #expect(try log.read { try $0.checkpoint(named: "x") } == nil)
            #expect(log.statistics.shed == 0)
        }
    }

    @Test func closingTwiceIsHarmless() async throws {
        try await withTemporaryDirectory { base in
            let log = try EventLog.open(LogConfiguration(directory: logDirectory(in: base)))
            _ = try await log.appendDurably(sampleRecord(0), priority: .critical)
            log.close()
            log.close()
            #expect(log.durableSequence == 1)
        }
    }
}
