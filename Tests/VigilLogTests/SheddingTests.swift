import Testing
@testable import VigilLog

@Suite("Shedding under overload")
struct SheddingTests {
    @Test func sheddableAppendsBeyondTheQueueLimitAreShedAndCriticalOnesNever() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.queueLimit = 10
            config.commitWindowMicroseconds = 600_000_000 // the queue cannot drain during the test, however slow the machine
            let log = try EventLog.open(config)
            // The first commit starts at once; it opens a 10-minute window during which the queue fills.
            _ = try await log.appendDurably(sampleRecord(0), priority: .critical)

            let collector = CompletionCollector()
            var accepted: [UInt64] = []
            var shed = 0
            for i in 1...30 {
                do {
                    accepted.append(try log.append(sampleRecord(i), priority: .sheddable,
                                                   completion: collector.handler(tag: UInt64(i))))
                } catch {
                    #expect(error.isShed, "refusal was \(error), not .shed")
                    shed += 1
                }
            }
            #expect(accepted.count == 10)
            #expect(shed == 20)
            #expect(log.statistics.shed == 20)

            // Critical appends are queued whatever the queue holds.
            for i in 31...45 {
                accepted.append(try log.append(sampleRecord(i), priority: .critical,
                                               completion: collector.handler(tag: UInt64(i))))
            }
            #expect(accepted.count == 25)
            // Still over the limit: sheddable still shed.
            #expect(throws: LogError.self) { try log.append(sampleRecord(46), priority: .sheddable) }
            #expect(log.statistics.shed == 21)

            log.close()
            let results = collector.results
            #expect(results.count == 25)
            #expect(results.values.allSatisfy { $0.successValue != nil })
            // A shed append never took a sequence: the log has no gaps from shedding.
            #expect(accepted == Array(2...26))
            #expect(try readAll(log).sequences == Array(1...26))
        }
    }

    @Test func aHeldWriterShedsPastTheLimitAndACloseStillWritesEverythingQueued() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.queueLimit = 4
            let log = try EventLog.open(config)
            log.holdWriter(true)
            let collector = CompletionCollector()
            var shed = 0
            for i in 1...10 {
                do {
                    try log.append(sampleRecord(i), priority: .sheddable, completion: collector.handler(tag: UInt64(i)))
                } catch {
                    #expect(error.isShed)
                    shed += 1
                }
            }
            try log.append(sampleRecord(11), priority: .critical, completion: collector.handler(tag: 11))
            #expect(shed == 6)
            #expect(collector.results.isEmpty, "nothing is durable while the writer is held")
            log.close()
            #expect(collector.results.count == 5)
            #expect(try readAll(log).sequences == Array(1...5))
        }
    }

    @Test func appendDurablyReportsSheddingAsAnError() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.queueLimit = 1
            config.commitWindowMicroseconds = 600_000_000
            let log = try EventLog.open(config)
            _ = try await log.appendDurably(sampleRecord(0), priority: .critical)
            try log.append(sampleRecord(1), priority: .critical) // fills the queue for 10 minutes
            do {
                _ = try await log.appendDurably(sampleRecord(2), priority: .sheddable)
                Issue.record("a sheddable append over the queue limit was accepted")
            } catch {
                #expect(error.isShed)
            }
            #expect(log.statistics.shed == 1)
            log.close()
        }
    }
}
