import Foundation
import Testing
import VigilLog

@Suite("Unreadable values")
struct CorruptRecordTests {
    @Test(.enabled(if: lmdbUtilsInstalled, "needs mdb_load from Debian's lmdb-utils"))
    func corruptValueIsReportedWithItsSequenceAndIterationGoesOn() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let records = (0..<5).map { sampleRecord($0) }
            do {
                let log = try EventLog.open(LogConfiguration(directory: directory))
                _ = await appendAll(log, records, priority: .critical)
                log.close()
            }
            // Eleven 0xFF bytes: the kind varint never ends within 10 bytes.
            try overwriteValue(of: 3, with: [UInt8](repeating: 0xFF, count: 11), inLogAt: directory)

            let log = try EventLog.open(LogConfiguration(directory: directory))
            var delivered: [UInt64] = []
            var reported: [CorruptRecord] = []
            var visitOrder: [UInt64] = []
            try log.read { txn in
                try txn.forEach { result in
                    switch result {
                    case .success(let view):
                        delivered.append(view.sequence)
                        visitOrder.append(view.sequence)
                        #expect(view.copy().record == records[Int(view.sequence) - 1])
                    case .failure(let corrupt):
                        reported.append(corrupt)
                        visitOrder.append(corrupt.sequence)
                    }
                    return true
                }
            }
            #expect(delivered == [1, 2, 4, 5])
            #expect(reported.map(\.sequence) == [3])
            #expect(visitOrder == [1, 2, 3, 4, 5])
            #expect(reported.first?.description.contains("event 3") == true)

            // Starting at the bad record reports it first, then goes on.
            let fromBad = try readAll(log, from: 3)
            #expect(fromBad.corrupt.map(\.sequence) == [3])
            #expect(fromBad.sequences == [4, 5])

            // The writer is unaffected and resumes after the last sequence.
            #expect(try await log.appendDurably(sampleRecord(5), priority: .critical) == 6)
            log.close()
        }
    }

    @Test(.enabled(if: lmdbUtilsInstalled, "needs mdb_load from Debian's lmdb-utils"))
    func valueWithATruncatedTimeIsCorruptButAnEmptyPayloadIsNot() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            do {
                let log = try EventLog.open(LogConfiguration(directory: directory))
                _ = await appendAll(log, (0..<3).map { sampleRecord($0) }, priority: .critical)
                log.close()
            }
            // Kind 5, then a time varint whose continuation bit promises more bytes than there are.
            try overwriteValue(of: 1, with: [0x05, 0x80], inLogAt: directory)
            // Kind 2, time 1, no payload: a valid envelope.
            try overwriteValue(of: 2, with: [0x02, 0x01], inLogAt: directory)

            let log = try EventLog.openReadOnly(directory: directory)
            let contents = try readAll(log)
            #expect(contents.corrupt.map(\.sequence) == [1])
            #expect(contents.sequences == [2, 3])
            #expect(contents.records.first?.record == LogRecord(kind: 2, timeMicroseconds: 1, payload: []))
        }
    }
}
