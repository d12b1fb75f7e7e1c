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
            // Kind 5, then a time varint whose continuation bit promises more bytes than there are
            // (under a checksum that matches, so the envelope itself is what is refused).
            try overwriteValue(of: 1, with: checksummed(1, [0x05, 0x80]), inLogAt: directory)
            // Kind 2, time 1, no payload: a valid envelope.
            try overwriteValue(of: 2, with: RecordFormat.encoded(LogRecord(kind: 2, timeMicroseconds: 1, payload: []), sequence: 2),
                               inLogAt: directory)

            let log = try EventLog.openReadOnly(directory: directory)
            let contents = try readAll(log)
            #expect(contents.corrupt.map(\.sequence) == [1])
            #expect(contents.sequences == [2, 3])
            #expect(contents.records.first?.record == LogRecord(kind: 2, timeMicroseconds: 1, payload: []))
        }
    }

    @Test(.enabled(if: lmdbUtilsInstalled, "needs mdb_load from Debian's lmdb-utils"))
    func oneFlippedBitIsCaughtByTheChecksumAndReportedWithItsSequence() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let records = (0..<4).map { sampleRecord($0) }
            do {
                let log = try EventLog.open(LogConfiguration(directory: directory))
                _ = await appendAll(log, records, priority: .critical)
                log.close()
            }
            // What a failing card does: the value is still a well-formed envelope, one bit differs.
            var flipped = RecordFormat.encoded(records[1], sequence: 2)
            flipped[flipped.count - 1] ^= 0x04
            try overwriteValue(of: 2, with: flipped, inLogAt: directory)

            let log = try EventLog.openReadOnly(directory: directory)
            let contents = try readAll(log)
            #expect(contents.corrupt.map(\.sequence) == [2])
            #expect(contents.corrupt.first?.reason.contains("checksum") == true)
            #expect(contents.sequences == [1, 3, 4])
            #expect(contents.records.map(\.record) == [records[0], records[2], records[3]])
        }
    }

    @Test(.enabled(if: lmdbUtilsInstalled, "needs mdb_load from Debian's lmdb-utils"))
    func aValueUnderAnotherSequenceIsCaught() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            let records = (0..<3).map { sampleRecord($0) }
            do {
                let log = try EventLog.open(LogConfiguration(directory: directory))
                _ = await appendAll(log, records, priority: .critical)
                log.close()
            }
            // Record 1's intact value, stored under key 3: the checksum covers the key too.
            try overwriteValue(of: 3, with: RecordFormat.encoded(records[0], sequence: 1), inLogAt: directory)
            let contents = try readAll(try EventLog.openReadOnly(directory: directory))
            #expect(contents.corrupt.map(\.sequence) == [3])
            #expect(contents.sequences == [1, 2])
        }
    }

    @Test(.enabled(if: lmdbUtilsInstalled, "needs mdb_load from Debian's lmdb-utils"))
    func aFormatOneLogIsReadAsItWasAndChecksummedFromItsUpgradeOn() async throws {
        try await withTemporaryDirectory { base in
            let directory = logDirectory(in: base)
            // A log as builds before the checksum wrote it: format 1, plain envelopes, a checkpoint
            // without a checksum.
            let old = (0..<3).map { sampleRecord($0) }
            try makeFormatOneLog(old, checkpoint: ("projections.v9", 3, [1, 2, 3]), at: directory)

            do {
                let reader = try EventLog.openReadOnly(directory: directory)
                #expect(reader.recordFormat == .unchecked)
                #expect(try readAll(reader).records.map(\.record) == old)
                #expect(try reader.read { try $0.checkpoint(named: "projections.v9") }?.state == [1, 2, 3])
            }
            let new = sampleRecord(3)
            do {
                let log = try EventLog.open(LogConfiguration(directory: directory))
                #expect(log.recordFormat == RecordFormat(checksummedFrom: 4, checksummedCheckpoints: true))
                #expect(try log.read { try $0.checkpoint(named: "projections.v9") } == nil, "the unchecked checkpoint is dropped")
                #expect(try await log.appendDurably(new, priority: .critical) == 4)
                log.close()
            }
            // A marker flipped back to 1 does not undo the upgrade (checksummed-from says it happened).
            _ = try runTool("/usr/bin/mdb_load", ["-T", "-s", "meta", directory],
                            input: Array("format".utf8).map { "\\" + String(format: "%02x", $0) }.joined() + "\n\\00\\00\\00\\01\n")
            do {
                let again = try EventLog.open(LogConfiguration(directory: directory))
                #expect(again.recordFormat.checksummedFrom == 4)
                again.close()
            }
            let reader = try EventLog.openReadOnly(directory: directory)
            #expect(try readAll(reader).records.map(\.record) == old + [new])
            #expect(reader.recordFormat.checksummedFrom == 4)
            // The new record carries a checksum: flip a bit and it is caught; the old ones cannot be.
            var flipped = RecordFormat.encoded(new, sequence: 4)
            flipped[flipped.count - 1] ^= 1
            try overwriteValue(of: 4, with: flipped, inLogAt: directory)
            #expect(try readAll(reader).corrupt.map(\.sequence) == [4])
        }
    }
}

/// A value with a correct checksum for `sequence` in front of `body` (an envelope, well formed or not).
func checksummed(_ sequence: UInt64, _ body: [UInt8]) -> [UInt8] {
    let key = withUnsafeBytes(of: sequence.bigEndian) { CRC32C.checksum($0) }
    let crc = body.withUnsafeBytes { CRC32C.checksum($0, continuing: key) }
    return withUnsafeBytes(of: crc.littleEndian) { Array($0) } + body
}
