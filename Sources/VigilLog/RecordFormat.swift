/// How a record's value is laid out on disk, and the check that it is what was written.
///
/// Format 2 (this build writes it): `crc32c (4 bytes, little-endian) | varint kind | varint time |
/// payload`, the checksum taken over the record's key (its sequence, 8 bytes big-endian) followed by
/// everything after the checksum. The key is covered so a value that lands under another sequence
/// (a page mangled by a failing card) is caught as well as a flipped bit.
///
/// Format 1 (builds before it): `varint kind | varint time | payload`, no checksum. A format-1 log
/// is upgraded in place when a node opens it for writing: the meta database then records
/// `checksummed-from`, the first sequence written with a checksum; older records are read as they
/// were (they cannot be checked) and `vigil log check` says how many there are.
///
/// Checkpoints carry the same checksum, over their name and everything after it:
/// `sequence (8, big-endian) | crc32c (4) | state`.
public struct RecordFormat: Sendable, Equatable {
    /// Records with a sequence at or above this carry a checksum; `UInt64.max` in a format-1 log.
    public var checksummedFrom: UInt64
    /// Whether checkpoints carry a checksum (every format-2 log's do: the upgrade drops older ones).
    public var checksummedCheckpoints: Bool

    public init(checksummedFrom: UInt64, checksummedCheckpoints: Bool) {
        self.checksummedFrom = checksummedFrom
        self.checksummedCheckpoints = checksummedCheckpoints
    }

    public static let current = RecordFormat(checksummedFrom: 0, checksummedCheckpoints: true)
    public static let unchecked = RecordFormat(checksummedFrom: .max, checksummedCheckpoints: false)

    static let checksumSize = 4

    /// Appends the stored value of `record` under `sequence` to `bytes`, checksummed.
    static func encode(_ record: LogRecord, sequence: UInt64, appendingTo bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: [0, 0, 0, 0])
        // The envelope is at most 5 + 10 bytes; build it on the stack.
        var header: (UInt64, UInt64) = (0, 0)
        let length = withUnsafeMutableBytes(of: &header) { buffer in
            let offset = Varint.write(UInt64(record.kind), into: buffer, at: 0)
            return Varint.write(record.timeMicroseconds, into: buffer, at: offset)
        }
        withUnsafeBytes(of: header) { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[..<length])) }
        bytes.append(contentsOf: record.payload)
        let crc = bytes.withUnsafeBytes { raw in
            checksum(sequence: sequence, body: UnsafeRawBufferPointer(rebasing: raw[(start + checksumSize)...]))
        }
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: start, as: UInt32.self) }
    }

    /// The stored value of `record` under `sequence`, checksummed.
    public static func encoded(_ record: LogRecord, sequence: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(checksumSize + 15 + record.payload.count)
        encode(record, sequence: sequence, appendingTo: &bytes)
        return bytes
    }

    @inline(__always)
    static func checksum(sequence: UInt64, body: UnsafeRawBufferPointer) -> UInt32 {
        let key = withUnsafeBytes(of: sequence.bigEndian) { CRC32C.checksum($0) }
        return CRC32C.checksum(body, continuing: key)
    }

    /// Reads the envelope of a stored value, checking its checksum when it has one.
    public func parse(sequence: UInt64, value: UnsafeRawBufferPointer) -> Result<StoredRecordView, CorruptRecord> {
        var offset = 0
        if sequence >= checksummedFrom {
            guard value.count >= Self.checksumSize + 2 else {
                return .failure(CorruptRecord(sequence: sequence, reason: "a record of \(value.count) bytes is too short to hold its checksum and envelope"))
            }
            let stored = UInt32(littleEndian: value.loadUnaligned(as: UInt32.self))
            let body = UnsafeRawBufferPointer(rebasing: value[Self.checksumSize...])
            guard Self.checksum(sequence: sequence, body: body) == stored else {
                return .failure(CorruptRecord(sequence: sequence, reason: "checksum mismatch: its \(value.count) bytes are not what was written"))
            }
            offset = Self.checksumSize
        }
        guard let kind = Varint.read(value, at: &offset), kind <= UInt64(UInt32.max) else {
            return .failure(CorruptRecord(sequence: sequence, reason: "unreadable kind in envelope (\(value.count) bytes)"))
        }
        guard let time = Varint.read(value, at: &offset) else {
            return .failure(CorruptRecord(sequence: sequence, reason: "unreadable time in envelope (\(value.count) bytes)"))
        }
        return .success(StoredRecordView(sequence: sequence, kind: UInt32(kind), timeMicroseconds: time,
                                         payload: UnsafeRawBufferPointer(rebasing: value[offset...])))
    }

    // MARK: Checkpoints

    static func encodeCheckpoint(name: String, sequence: UInt64, state: [UInt8]) -> [UInt8] {
        var value = withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
        value.reserveCapacity(12 + state.count)
        value.append(contentsOf: [0, 0, 0, 0])
        value.append(contentsOf: state)
        let crc = checkpointChecksum(name: name, value: value)
        value.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 8, as: UInt32.self) }
        return value
    }

    private static func checkpointChecksum(name: String, value: [UInt8]) -> UInt32 {
        let named = Array(name.utf8).withUnsafeBytes { CRC32C.checksum($0) }
        let head = value.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<8]), continuing: named) }
        return value.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[12...]), continuing: head) }
    }

    /// A stored checkpoint's sequence and state; nil when it is too short or fails its checksum
    /// (the caller then rebuilds from the log, as when there is none).
    func parseCheckpoint(name: String, value: [UInt8]) -> (sequence: UInt64, state: [UInt8])? {
        let sequence = value.count >= 8 ? value.withUnsafeBytes { UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)) } : 0
        guard checksummedCheckpoints else {
            return value.count >= 8 ? (sequence, Array(value[8...])) : nil
        }
        guard value.count >= 12 else { return nil }
        let stored = value.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self)) }
        guard Self.checkpointChecksum(name: name, value: value) == stored else { return nil }
        return (sequence, Array(value[12...]))
    }
}
