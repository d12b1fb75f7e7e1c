import Synchronization
import Testing
import VigilLog

@Suite("Map growth and the size cap")
struct MapSpaceTests {
    @Test func mapGrowsOnDemandAndEverythingAcknowledgedIsStored() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            var config = LogConfiguration(directory: directory)
            config.initialMapSize = 256 << 10
            config.maxMapSize = 16 << 20
            config.commitWindowMicroseconds = 1_000
            let records = (0..<3_000).map { sampleRecord($0, payloadBytes: 400) } // ~1.2 MB of values
            do {
                let log = try EventLog.open(config)
                var results: [Result<UInt64, LogError>] = []
                for chunk in stride(from: 0, to: records.count, by: 250) {
                    results += await appendAll(log, Array(records[chunk..<min(chunk + 250, records.count)]), priority: .sheddable)
                }
                #expect(results.allSatisfy { $0.successValue != nil })
                let stats = log.statistics
                #expect(stats.mapGrowths > 0)
                #expect(stats.mapSize > 256 << 10)
                #expect(stats.mapSize <= 16 << 20)
                #expect(stats.refusedFull == 0)
                #expect(try log.spaceUsage().mapBytes == stats.mapSize)
                log.close()
            } // the environment closes with the last EventLog using it

            let reopened = try EventLog.open(config)
            let contents = try readAll(reopened)
            #expect(contents.sequences == Array(1...3_000))
            let difference = firstDifference(contents.records.map(\.record), records)
            #expect(difference == nil)
            #expect(try reopened.read { try $0.eventsPageStatistics().entries } == 3_000)
            reopened.close()
        }
    }

    @Test func readersInTheSameProcessKeepWorkingWhileTheMapGrows() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.initialMapSize = 128 << 10
            config.maxMapSize = 32 << 20
            config.commitWindowMicroseconds = 200
            let log = try EventLog.open(config)
            let writerDone = Flag()
            let writing = Task {
                let results = await appendAll(log, (0..<4_000).map { sampleRecord($0, payloadBytes: 600) }, priority: .critical)
                writerDone.set()
                return results
            }
            // Read continuously while the writer grows the map; every snapshot must be consistent.
            var snapshots = 0
            var lastSeen: UInt64 = 0
            var writerFinished = false
            while lastSeen < 4_000 && !writerFinished {
                writerFinished = writerDone.isSet
                let (last, count) = try log.read { txn in
                    (try txn.lastSequence(), try txn.eventsPageStatistics().entries)
                }
                #expect(UInt64(count) == last, "snapshot with last sequence \(last) holds \(count) entries")
                #expect(last >= lastSeen)
                lastSeen = last
                snapshots += 1
                await Task.yield()
            }
            let results = await writing.value
            #expect(lastSeen == 4_000)
            #expect(results.allSatisfy { $0.successValue != nil })
            #expect(log.statistics.mapGrowths > 0)
            #expect(snapshots > 1)
            log.close()
        }
    }

    @Test func atTheCapSheddableAppendsAreRefusedAndCriticalOnesStillFit() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            var config = LogConfiguration(directory: directory)
            config.initialMapSize = 1 << 20
            config.maxMapSize = 1 << 20
            config.criticalReserve = 0.2
            config.commitWindowMicroseconds = 500
            var acknowledged: [UInt64: LogRecord] = [:]
            var alertSeq: UInt64 = 0
            do {
                let log = try EventLog.open(config)

                var refused = 0
                var index = 0
                // Bounded: 1 MiB holds well under 4,000 records of ~500 bytes.
                while refused == 0 && index < 4_000 {
                    let batch = (index..<index + 50).map { sampleRecord($0, payloadBytes: 500) }
                    let results = await appendAll(log, batch, priority: .sheddable)
                    for (record, result) in zip(batch, results) {
                        switch result {
                        case .success(let seq): acknowledged[seq] = record
                        case .failure(let error):
                            #expect(error.isFull, "refusal was \(error), not .full")
                            if case .full(let cap) = error { #expect(cap == 1 << 20) }
                            refused += 1
                        }
                    }
                    index += 50
                }
                #expect(refused > 0, "1 MiB never filled after \(index) records")
                #expect(acknowledged.count > 1_000)
                let stats = log.statistics
                #expect(stats.refusedFull == UInt64(refused))
                #expect(stats.mapGrowths == 0)

                // Still sheddable: still refused.
                let again = await appendAll(log, [sampleRecord(9_999, payloadBytes: 500)], priority: .sheddable)
                #expect(again[0].failureValue?.isFull == true)

                // Critical events use the reserve.
                let alert = LogRecord(kind: 3, timeMicroseconds: 1, payload: Array("SOS".utf8))
                alertSeq = try await log.appendDurably(alert, priority: .critical)
                acknowledged[alertSeq] = alert
                log.close()
            } // the environment closes with the last EventLog using it

            let reopened = try EventLog.open(config)
            let contents = try readAll(reopened)
            #expect(contents.corrupt.isEmpty)
            let stored = Dictionary(uniqueKeysWithValues: contents.records.map { ($0.sequence, $0.record) })
            let difference = differences(stored: stored, acknowledged: acknowledged)
            #expect(difference == nil, "stored records differ from the acknowledged ones")
            #expect(contents.sequences.last == alertSeq)
            // Refused sequences are gaps, never filled.
            #expect(UInt64(contents.records.count) < alertSeq)
            reopened.close()
        }
    }

    @Test func whenEvenCriticalAppendsDoNotFitTheyAreRefusedAsFull() async throws {
        try await withTemporaryDirectory { base in
            var config = LogConfiguration(directory: logDirectory(in: base))
            config.initialMapSize = 256 << 10
            config.maxMapSize = 256 << 10
            config.criticalReserve = 0
            config.commitWindowMicroseconds = 500
            let log = try EventLog.open(config)
            var outcomes: [Result<UInt64, LogError>] = []
            for start in stride(from: 0, to: 2_000, by: 50) {
                outcomes += await appendAll(log, (start..<start + 50).map { sampleRecord($0, payloadBytes: 500) },
                                            priority: .critical)
                if outcomes.contains(where: { $0.failureValue != nil }) { break }
            }
            let failures = outcomes.compactMap(\.failureValue)
            #expect(!failures.isEmpty)
            #expect(failures.allSatisfy { $0.isFull }, "failures: \(failures)")
            #expect(log.statistics.refusedFull == UInt64(failures.count))
            #expect(log.statistics.writeErrors == 0)
            // The log stays usable: a small critical append still goes through or is refused as full.
            do {
                _ = try await log.appendDurably(LogRecord(kind: 1, timeMicroseconds: 1, payload: []), priority: .critical)
            } catch {
                #expect(error.isFull)
            }
            let acknowledged = outcomes.compactMap(\.successValue)
            log.close()
            #expect(Set(try readAll(log).sequences).isSuperset(of: acknowledged))
        }
    }
}

/// A flag one task sets and another polls.
private final class Flag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
