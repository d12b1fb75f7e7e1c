/// LEB128 varints, as in protobuf: the log's envelope uses them so small kinds and times cost
/// few bytes on an SD card.
public enum Varint {
    @inlinable
    public static func size(_ value: UInt64) -> Int {
        // 1 + floor(bits / 7), computed without a loop.
        let bits = 64 - (value | 1).leadingZeroBitCount
        return (bits + 6) / 7
    }

    /// Writes `value` at `offset`, returning the offset after it. The buffer must have room.
    @inlinable
    public static func write(_ value: UInt64, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        var v = value
        var i = offset
        while v >= 0x80 {
            buffer[i] = UInt8(truncatingIfNeeded: v) | 0x80
            v >>= 7
            i += 1
        }
        buffer[i] = UInt8(v)
        return i + 1
    }

    /// Reads a varint at `offset`; nil when truncated or longer than 10 bytes.
    @inlinable
    public static func read(_ buffer: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < buffer.count {
            let byte = buffer[offset]
            offset += 1
            if shift == 63 && byte > 1 { return nil }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }
}

/// One event as the log stores it: the envelope fields plus an opaque, versioned payload.
///
/// On disk: key = sequence (8 bytes, big-endian); value as `RecordFormat` describes.
public struct LogRecord: Sendable, Equatable {
    public var kind: UInt32
    public var timeMicroseconds: UInt64
    public var payload: [UInt8]

    public init(kind: UInt32, timeMicroseconds: UInt64, payload: [UInt8]) {
        self.kind = kind
        self.timeMicroseconds = timeMicroseconds
        self.payload = payload
    }
}

/// A stored record seen through a read transaction, without copying its payload.
/// `payload` is valid only inside the closure that received it.
public struct StoredRecordView {
    public let sequence: UInt64
    public let kind: UInt32
    public let timeMicroseconds: UInt64
    public let payload: UnsafeRawBufferPointer

    public func copy() -> StoredRecord {
        StoredRecord(sequence: sequence,
                     record: LogRecord(kind: kind, timeMicroseconds: timeMicroseconds, payload: Array(payload)))
    }
}

/// A stored record copied out of the map.
public struct StoredRecord: Sendable, Equatable {
    public let sequence: UInt64
    public let record: LogRecord
}

/// A value that could not be read. Iteration reports it and goes on with the next sequence.
public struct CorruptRecord: Error, Sendable, Equatable, CustomStringConvertible {
    public let sequence: UInt64
    public let reason: String
    public var description: String { "event \(sequence) is unreadable: \(reason)" }
}

/// Big-endian u64 keys: byte order equals numeric order, so LMDB's default comparison and
/// MDB_APPEND keep the log in sequence order.
@inline(__always)
func withSequenceKey<T>(_ sequence: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
    let be = sequence.bigEndian
    return try withUnsafeBytes(of: be) { try body($0) }
}

@inline(__always)
func sequence(fromKey key: UnsafeRawBufferPointer) -> UInt64? {
    guard key.count == 8 else { return nil }
    return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
}
