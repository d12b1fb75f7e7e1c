import Foundation
import Logging
import VigilSystem

/// Logs to systemd's journal in its native protocol (one datagram a message to
/// `/run/systemd/journal/socket`), so every piece of swift-log metadata is a field of its own that
/// `journalctl` can filter on: `journalctl -u vigil VIGIL_ALERT=1a2b:3`, `-o verbose` shows them.
///
/// Fields: `MESSAGE`, `PRIORITY` (syslog's levels), `SYSLOG_IDENTIFIER`, `CODE_FILE`/`LINE`/`FUNC`,
/// `VIGIL_LABEL`, and each metadata key as `VIGIL_KEY` (upper case; anything but A-Z, 0-9 and _
/// becomes _). A value with a newline is sent in the protocol's binary form. A message the
/// journal does not take (full socket buffer, no journal) goes to standard error instead, never
/// lost silently and never blocking the loop.
///
/// `vigil run` uses it when standard error is the journal (systemd sets `JOURNAL_STREAM` to its
/// device and inode), else swift-log's stream handler.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let sink: Sink

    public static let defaultSocket = "/run/systemd/journal/socket"

    public init(label: String, socketPath: String = Self.defaultSocket, identifier: String = "vigil") {
        self.label = label
        sink = Sink.shared(socketPath: socketPath, identifier: identifier)
    }

    /// Whether standard error is connected to the journal: `JOURNAL_STREAM` ("DEVICE:INODE") names
    /// the stream systemd gave it, and it is still standard error (not redirected since).
    public static func standardErrorIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var fields: [(String, String)] = [
            ("MESSAGE", event.message.description),
            ("PRIORITY", "\(Self.priority(event.level))"),
            ("SYSLOG_IDENTIFIER", sink.identifier),
            ("VIGIL_LABEL", label),
            ("CODE_FILE", event.file),
            ("CODE_LINE", "\(event.line)"),
            ("CODE_FUNC", event.function),
        ]
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) { fields.append(("VIGIL_" + Self.fieldName(key), "\(value)")) }
        sink.send(Self.encode(fields), fallback: "\(event.level) \(label): \(event.message) \(merged.isEmpty ? "" : "\(merged)")")
    }

    /// syslog's priorities: 2 critical, 3 error, 4 warning, 5 notice, 6 info, 7 debug.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .critical: 2
        case .error: 3
        case .warning: 4
        case .notice: 5
        case .info: 6
        case .debug, .trace: 7
        }
    }

    /// A journal field name: upper case letters, digits and underscores, not starting with one.
    static func fieldName(_ key: String) -> String {
        var name = String(key.uppercased().unicodeScalars.map { ("A"..."Z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "_" })
        while name.hasPrefix("_") { name.removeFirst() }
        // journald takes names of at most 64 characters, "VIGIL_" included.
        return name.isEmpty ? "FIELD" : String(name.prefix(58))
    }

    /// The native protocol: `NAME=value\n`, or for a value with a newline `NAME\n`, its length
    /// as 64-bit little endian, the value, `\n`.
    static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (name, value) in fields {
            out += Array(name.utf8)
            let bytes = Array(value.utf8)
            if bytes.contains(0x0A) {
                out.append(0x0A)
                var length = UInt64(bytes.count).littleEndian
                withUnsafeBytes(of: &length) { out += $0 }
                out += bytes
            } else {
                out.append(UInt8(ascii: "="))
                out += bytes
            }
            out.append(0x0A)
        }
        return out
    }

    /// One socket per process and path, shared by every logger.
    final class Sink: Sendable {
        let path: String
        let identifier: String
        private let socket: Socket?
        /// Owns the descriptor (closed with the sink, that is, never before the process ends).
        private final class Socket: Sendable {
            let descriptor: FileDescriptor
            init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }
        }
        private static let sinks = LockedValue<[String: Sink]>([:])

        static func shared(socketPath: String, identifier: String) -> Sink {
            sinks.withLock { all in
                if let s = all[socketPath + "\u{0}" + identifier] { return s }
                let s = Sink(path: socketPath, identifier: identifier)
                all[socketPath + "\u{0}" + identifier] = s
                return s
            }
        }

        private init(path: String, identifier: String) {
            self.path = path
            self.identifier = identifier
            // Kept for the life of the process (loggers live as long).
            do {
                socket = Socket(try UnixDatagram.socket())
            } catch {
                socket = nil // each message then goes to standard error
            }
        }

        func send(_ datagram: [UInt8], fallback: String) {
            do {
                guard let descriptor = socket?.descriptor.rawValue else { throw SystemError("socket", errno: .noEntry) }
                try UnixDatagram.send(datagram, fromDescriptor: descriptor, to: path)
            } catch {
                FileHandle.standardError.write(Data((fallback + "\n").utf8))
            }
        }
    }
}
