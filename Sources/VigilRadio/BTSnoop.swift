import VigilSystem
#if canImport(Glibc)
import Glibc
#endif

// btsnoop capture files: every HCI packet the node exchanges with its controller, in the format
// btmon, Android and Wireshark read (RFC 1761 "snoop" as modified by Symbian). A 16-byte file
// header ("btsnoop\0", version 1, datalink 1002 = HCI UART/H4) is followed by records of a 24-byte
// big-endian header and the packet, whose first byte is its H4 type (1 command, 2 ACL, 3 SCO,
// 4 event, 5 ISO).

/// Which way a packet went: bit 0 of a record's flags.
public enum BTSnoopDirection: Sendable, Equatable {
    /// Host to controller (commands, outgoing data).
    case sent
    /// Controller to host (events, incoming data).
    case received
}

/// Everything that can go wrong writing or reading a capture, with the file it concerns.
public enum BTSnoopError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed (`operation` is e.g. "open", "write", "rename"); ENOSPC is a full disk.
    case io(path: String, operation: String, errno: Errno)
    /// The file does not start with "btsnoop\0".
    case notBTSnoop(path: String)
    case unsupportedVersion(path: String, version: UInt32)
    /// A btsnoop file of another link type (only 1002, HCI UART with the H4 type byte, is read).
    case unsupportedDatalink(path: String, datalink: UInt32)
    /// The file ends inside its 16-byte header (`bytes` is how many there are).
    case truncatedHeader(path: String, bytes: Int)
    /// A record that cannot be a packet; nothing after it can be trusted, so reading stops.
    case corruptRecord(path: String, offset: UInt64, reason: String)
    /// A packet the writer refuses (empty: no H4 type byte; longer than any HCI packet).
    case invalidPacket(length: Int)
    /// `maxFileBytes` or `keepFiles` out of range.
    case invalidLimits(reason: String)
    /// A write after `close()`.
    case closed(path: String)

    public var description: String {
        switch self {
        case .io(let path, let operation, let errno): "btsnoop \(operation) \(path): \(errno)"
        case .notBTSnoop(let path): "\(path): not a btsnoop file"
        case .unsupportedVersion(let path, let v): "\(path): unsupported btsnoop version \(v) (only 1)"
        case .unsupportedDatalink(let path, let d): "\(path): unsupported btsnoop datalink \(d) (only 1002, HCI UART)"
        case .truncatedHeader(let path, let n): "\(path): truncated btsnoop header (\(n) of 16 bytes)"
        case .corruptRecord(let path, let offset, let reason): "\(path): corrupt btsnoop record at byte \(offset): \(reason)"
        case .invalidPacket(let length): "btsnoop: cannot record a \(length)-byte HCI packet"
        case .invalidLimits(let reason): "btsnoop: \(reason)"
        case .closed(let path): "btsnoop \(path): written after close"
        }
    }

    init(_ error: SystemError, path: String) {
        self = .io(path: path, operation: error.operation, errno: error.errno)
    }
}

/// The constants of the format, shared by writer, reader and tests.
public enum BTSnoop {
    public static let magic: [UInt8] = Array("btsnoop".utf8) + [0]
    public static let version: UInt32 = 1
    /// HCI UART (H4): the packet starts with its type byte.
    public static let datalinkH4: UInt32 = 1002
    public static let fileHeaderLength = 16
    public static let recordHeaderLength = 24
    /// Microseconds from the format's epoch ("0 AD") to the Unix epoch, as BlueZ, Android and
    /// Wireshark use it. Not 0x00E03AB44A676000: that is midnight, 1 January 2000 (30 years later),
    /// and Wireshark shows captures stamped with it 30 years in the future.
    public static let unixEpochOffset: UInt64 = 0x00DC_DDB3_0F2F_8000
    /// The longest H4 packet: type byte, ACL header (4), 65 535 bytes of data. A record claiming
    /// more is corrupt; the reader never allocates for it.
    public static let maximumPacketLength = 1 + 4 + 65_535

    /// The 16-byte file header.
    public static var fileHeader: [UInt8] {
        var bytes = magic
        appendBigEndian(version, to: &bytes)
        appendBigEndian(datalinkH4, to: &bytes)
        return bytes
    }

    /// Record flags: bit 0 direction (1 = received), bit 1 command or event (H4 types 1 and 4).
    static func flags(direction: BTSnoopDirection, packetType: UInt8) -> UInt32 {
        (direction == .received ? 1 : 0) | (packetType == 0x01 || packetType == 0x04 ? 2 : 0)
    }

    static func appendBigEndian<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    static func bigEndian<T: FixedWidthInteger>(_ bytes: ArraySlice<UInt8>, as: T.Type) -> T {
        bytes.reduce(T.zero) { $0 << 8 | T($1) }
    }
}

/// Writes every HCI packet to a capture file that rotates at a size cap:
/// `path` → `path.1` → `path.2` …, keeping at most `keepFiles` old files (the oldest is deleted),
/// each starting with its own header and holding whole records only.
///
/// Built for the event loop: records are buffered and written in chunks of `flushThreshold` bytes,
/// at `flush()` (once per loop iteration) and at `close()`; nothing is ever fsynced, so a power
/// cut may lose the last chunk or leave a partial final record, which `BTSnoopReader` reports.
/// A file already at `path` (an earlier run) is rotated away first, never appended to.
///
/// Any failure (a full disk) is thrown and sticks: the file may now end in a partial record, so
/// every later call throws the same error instead of writing misaligned records after it. The
/// caller counts it and drops the writer. Not thread-safe: one owner (the loop) calls it.
public final class BTSnoopWriter {
    public let path: String
    public let maxFileBytes: Int
    public let keepFiles: Int
    public let flushThreshold: Int
    /// How many times the file was rotated since `init`.
    public private(set) var rotations = 0

    private var file: FileDescriptor?
    private var buffer: [UInt8] = []
    /// Bytes of the current file: written plus buffered.
    private var fileBytes = 0
    private var recordsInFile = 0
    private var failure: BTSnoopError?

    /// Starts a capture at `path` (created with mode 0640: it holds device addresses).
    ///
    /// A file exceeds `maxFileBytes` only when it holds one record that alone does not fit.
    /// `maxFileBytes` below 16 + 24 + 1 or a negative `keepFiles` throws `.invalidLimits`.
    public init(path: String, maxFileBytes: Int = 8 << 20, keepFiles: Int = 3, flushThreshold: Int = 64 << 10) throws(BTSnoopError) {
        let smallest = BTSnoop.fileHeaderLength + BTSnoop.recordHeaderLength + 1
        guard maxFileBytes >= smallest else { throw .invalidLimits(reason: "maxFileBytes \(maxFileBytes) is below \(smallest)") }
        guard keepFiles >= 0 else { throw .invalidLimits(reason: "keepFiles \(keepFiles) is negative") }
        self.path = path
        self.maxFileBytes = maxFileBytes
        self.keepFiles = keepFiles
        self.flushThreshold = max(1, flushThreshold)
        buffer.reserveCapacity(min(self.flushThreshold, 1 << 20) + BTSnoop.recordHeaderLength + BTSnoop.maximumPacketLength)
        if FileSystem.exists(path) { try shiftOldFiles() }
        try startFile()
    }

    /// Best effort for an owner that forgot `close()`: the buffered records are written if possible.
    deinit { try? close() }

    /// Records one packet. `packet` is the H4 packet, type byte first; `timeMicroseconds` is wall
    /// time since the Unix epoch. Throws `.invalidPacket` (nothing written, the writer stays
    /// usable) for an empty packet or one longer than `BTSnoop.maximumPacketLength`.
    public func write(packet: UnsafeRawBufferPointer, direction: BTSnoopDirection, timeMicroseconds: UInt64) throws(BTSnoopError) {
        if let failure { throw failure }
        guard file != nil else { throw .closed(path: path) }
        guard let type = packet.first, packet.count <= BTSnoop.maximumPacketLength else {
            throw .invalidPacket(length: packet.count)
        }
        let recordBytes = BTSnoop.recordHeaderLength + packet.count
        if recordsInFile > 0, fileBytes + recordBytes > maxFileBytes { try rotate() }
        let (stamp, overflow) = timeMicroseconds.addingReportingOverflow(BTSnoop.unixEpochOffset)
        BTSnoop.appendBigEndian(UInt32(packet.count), to: &buffer)  // original length
        BTSnoop.appendBigEndian(UInt32(packet.count), to: &buffer)  // included length
        BTSnoop.appendBigEndian(BTSnoop.flags(direction: direction, packetType: type), to: &buffer)
        BTSnoop.appendBigEndian(UInt32(0), to: &buffer)             // cumulative drops
        BTSnoop.appendBigEndian(overflow ? UInt64.max : stamp, to: &buffer)
        buffer.append(contentsOf: packet)
        fileBytes += recordBytes
        recordsInFile += 1
        if buffer.count >= flushThreshold { try flush() }
    }

    public func write(packet: [UInt8], direction: BTSnoopDirection, timeMicroseconds: UInt64) throws(BTSnoopError) {
        // withUnsafeBytes rethrows untyped errors, so carry the typed one out by hand.
        let failure = packet.withUnsafeBytes { raw -> BTSnoopError? in
            do throws(BTSnoopError) {
                try write(packet: raw, direction: direction, timeMicroseconds: timeMicroseconds)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Writes the buffered records to the file (no fsync). Cheap when nothing is buffered.
    public func flush() throws(BTSnoopError) {
        if let failure { throw failure }
        guard !buffer.isEmpty, file != nil else { return }
        do {
            try file?.writeAll(buffer)
        } catch {
            throw fail(BTSnoopError(error, path: path))
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes and closes the file. Calling it again does nothing; writing after it throws `.closed`.
    public func close() throws(BTSnoopError) {
        guard file != nil else { return }
        defer { file = nil }
        try flush()
    }

    private func fail(_ error: BTSnoopError) -> BTSnoopError {
        failure = error
        return error
    }

    private func rotate() throws(BTSnoopError) {
        try flush()
        file = nil
        try shiftOldFiles()
        try startFile()
        rotations += 1
    }

    /// path.(keep-1) → path.keep … path → path.1; whatever would become path.(keep+1) is deleted.
    private func shiftOldFiles() throws(BTSnoopError) {
        guard keepFiles > 0 else { FileSystem.remove(path); return }
        FileSystem.remove("\(path).\(keepFiles)")
        for index in stride(from: keepFiles - 1, through: 0, by: -1) {
            let from = index == 0 ? path : "\(path).\(index)"
            do {
                try FileSystem.rename(from, to: "\(path).\(index + 1)")
            } catch where error.errno == .noEntry {
                continue  // a gap in the set (never rotated that far, or deleted by hand)
            } catch {
                throw fail(BTSnoopError(error, path: from))
            }
        }
    }

    private func startFile() throws(BTSnoopError) {
        do {
            file = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o640)
        } catch {
            throw fail(BTSnoopError(error, path: path))
        }
        buffer.append(contentsOf: BTSnoop.fileHeader)
        fileBytes = BTSnoop.fileHeaderLength
        recordsInFile = 0
    }
}

/// One packet read back from a capture.
public struct BTSnoopRecord: Sendable, Equatable {
    /// The packet as captured, H4 type byte first (shorter than `originalLength` if it was snapped).
    public var packet: [UInt8]
    public var originalLength: UInt32
    public var flags: UInt32
    public var cumulativeDrops: UInt32
    /// Microseconds since 0 AD, as stored.
    public var timestamp: UInt64

    public var direction: BTSnoopDirection { flags & 1 == 0 ? .sent : .received }
    public var isCommandOrEvent: Bool { flags & 2 != 0 }
    /// Microseconds since the Unix epoch; 0 for a stamp before 1970 (`timestamp` keeps the value).
    public var timeMicroseconds: UInt64 {
        timestamp >= BTSnoop.unixEpochOffset ? timestamp - BTSnoop.unixEpochOffset : 0
    }
}

/// Reads a capture record by record, validating the header on open.
///
/// `next()` returns nil at the end. A final record cut short (a capture interrupted by a power
/// cut) is not an error: iteration ends and `leftoverBytes` says how many bytes it had. A record
/// that cannot be a packet (included length over `BTSnoop.maximumPacketLength`, zero, or above its
/// original length) throws `.corruptRecord` without allocating for it.
public final class BTSnoopReader {
    public let path: String
    /// Bytes after the last whole record, known once `next()` has returned nil. Not zero: the
    /// capture was cut in the middle of a record.
    public private(set) var leftoverBytes = 0

    private let file: FileDescriptor
    private var buffer: [UInt8] = []
    private var start = 0
    private var offset = UInt64(BTSnoop.fileHeaderLength)
    private var atEnd = false
    private static let chunk = 64 << 10

    public init(path: String) throws(BTSnoopError) {
        self.path = path
        do {
            file = try FileDescriptor.open(path, flags: O_RDONLY)
        } catch {
            throw BTSnoopError(error, path: path)
        }
        let header = try take(BTSnoop.fileHeaderLength)
        guard header.count == BTSnoop.fileHeaderLength else {
            // Too short: still "not btsnoop" when the bytes that are there say so.
            let n = min(BTSnoop.magic.count, header.count)
            guard header.prefix(n).elementsEqual(BTSnoop.magic.prefix(n)) else { throw .notBTSnoop(path: path) }
            throw .truncatedHeader(path: path, bytes: header.count)
        }
        guard header.prefix(8).elementsEqual(BTSnoop.magic) else { throw .notBTSnoop(path: path) }
        let version = BTSnoop.bigEndian(header[8..<12], as: UInt32.self)
        guard version == BTSnoop.version else { throw .unsupportedVersion(path: path, version: version) }
        let datalink = BTSnoop.bigEndian(header[12..<16], as: UInt32.self)
        guard datalink == BTSnoop.datalinkH4 else { throw .unsupportedDatalink(path: path, datalink: datalink) }
    }

    /// The next whole record, or nil at the end of the file (see `leftoverBytes`).
    public func next() throws(BTSnoopError) -> BTSnoopRecord? {
        let header = try take(BTSnoop.recordHeaderLength)
        guard header.count == BTSnoop.recordHeaderLength else { return end(leftover: header.count) }
        let original = BTSnoop.bigEndian(header[0..<4], as: UInt32.self)
        let included = BTSnoop.bigEndian(header[4..<8], as: UInt32.self)
        guard included > 0, included <= BTSnoop.maximumPacketLength, included <= original else {
            throw .corruptRecord(path: path, offset: offset,
                                 reason: "included length \(included), original length \(original)")
        }
        let packet = try take(Int(included))
        guard packet.count == Int(included) else { return end(leftover: header.count + packet.count) }
        offset += UInt64(BTSnoop.recordHeaderLength) + UInt64(included)
        return BTSnoopRecord(packet: packet, originalLength: original,
                             flags: BTSnoop.bigEndian(header[8..<12], as: UInt32.self),
                             cumulativeDrops: BTSnoop.bigEndian(header[12..<16], as: UInt32.self),
                             timestamp: BTSnoop.bigEndian(header[16..<24], as: UInt64.self))
    }

    /// Every whole record to the end.
    public func readAll() throws(BTSnoopError) -> [BTSnoopRecord] {
        var records: [BTSnoopRecord] = []
        while let record = try next() { records.append(record) }
        return records
    }

    /// The records of a rotated set (`path.N` … `path.1`, then `path`), oldest first; the set
    /// ends at the first missing `path.N`. Only the newest file may be cut short (empty after a rotation, or a
    /// partial record): its leftover is returned. A cut in an older file throws `.corruptRecord`,
    /// because the writer only rotates whole records.
    public static func records(inRotatedSet path: String) throws(BTSnoopError) -> (records: [BTSnoopRecord], leftoverBytes: Int) {
        var newest = 0
        while FileSystem.exists("\(path).\(newest + 1)") { newest += 1 }
        var records: [BTSnoopRecord] = []
        for index in stride(from: newest, through: 1, by: -1) {
            let reader = try BTSnoopReader(path: "\(path).\(index)")
            records += try reader.readAll()
            if reader.leftoverBytes > 0 {
                throw .corruptRecord(path: reader.path, offset: reader.offset, reason: "rotated file ends in a partial record")
            }
        }
        guard FileSystem.exists(path) else { return (records, 0) }
        do {
            let reader = try BTSnoopReader(path: path)
            records += try reader.readAll()
            return (records, reader.leftoverBytes)
        } catch {
            guard case .truncatedHeader(_, let bytes) = error else { throw error }
            return (records, bytes)
        }
    }

    private func end(leftover: Int) -> BTSnoopRecord? {
        leftoverBytes = leftover
        return nil
    }

    /// Up to `count` bytes; fewer only at the end of the file.
    private func take(_ count: Int) throws(BTSnoopError) -> [UInt8] {
        while buffer.count - start < count, !atEnd {
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            let old = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: Self.chunk))
            // withUnsafeMutableBytes rethrows untyped errors, so carry the typed one out by hand.
            let result = buffer.withUnsafeMutableBytes { raw -> Result<Int?, SystemError> in
                do throws(SystemError) {
                    return .success(try file.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[old...])))
                } catch {
                    return .failure(error)
                }
            }
            let got: Int
            switch result {
            case .success(let n): got = n ?? 0  // nil (EAGAIN) cannot happen on a regular file
            case .failure(let error):
                buffer.removeLast(Self.chunk)
                throw BTSnoopError(error, path: path)
            }
            buffer.removeLast(Self.chunk - got)
            if got == 0 { atEnd = true }
        }
        let end = min(buffer.count, start + count)
        defer { start = end }
        return Array(buffer[start..<end])
    }
}
