import Foundation
import VigilSystem

/// Requests a running node answers on `DATA/control.sock`, one line each.
public enum ControlCommand: Sendable, Equatable {
    case ping
    case status
    /// Press the simulated button for `holdMicroseconds`, with `bounces` extra bounce edge pairs.
    /// With a resident, their check-in button instead of the SOS button.
    case press(holdMicroseconds: UInt64, bounces: Int, resident: String? = nil)
    /// Append an event (residents, check-ins, acknowledgements from the CLI); the reply comes
    /// once it is durable.
    case append(kind: UInt32, payload: [UInt8])

    /// Parses "ping", "status", "press HOLD_US [BOUNCES]", "append KIND BASE64".
    public init?(line: String) {
        let words = line.split(separator: " ").map(String.init)
        switch words.first {
        case "ping": self = .ping
        case "status": self = .status
        case "append":
            guard words.count == 3, let kind = UInt32(words[1]) else { return nil }
            guard let data = Data(base64Encoded: words[2]), data.count <= 65_536 else { return nil }
            self = .append(kind: kind, payload: Array(data))
        case "press":
            guard words.count >= 2, let hold = UInt64(words[1]), hold <= 60_000_000 else { return nil }
            let bounces = words.count >= 3 ? Int(words[2]) ?? 0 : 0
            let resident = words.count >= 4 ? words[3] : nil
            self = .press(holdMicroseconds: hold, bounces: min(max(bounces, 0), 50), resident: resident)
        default: return nil
        }
    }

    public var line: String {
        switch self {
        case .ping: "ping"
        case .status: "status"
        case .press(let hold, let bounces, let resident): "press \(hold) \(bounces)" + (resident.map { " " + $0 } ?? "")
        case .append(let kind, let payload): "append \(kind) \(Data(payload).base64EncodedString())"
        }
    }
}

/// A reply now, or once the event with this sequence is durable (or refused).
enum ControlReply {
    case now(String)
    case whenDurable(UInt64)
}

/// The server side, driven by the node's loop: non-blocking accept and reads, bounded
/// connections and line length, one request and one reply per connection.
final class ControlServer {
    private let listener: FileDescriptor
    private let path: String
    private unowned let epoll: Epoll
    private final class Connection {
        let fd: FileDescriptor
        var buffer: [UInt8] = []
        let acceptedAt = monotonicNanoseconds()
        init(_ fd: consuming FileDescriptor) { self.fd = fd }
    }
    /// A connection that has not sent its line by then is dropped (it holds one of few slots).
    static let idleNanoseconds: UInt64 = 10_000_000_000
    private var connections: [UInt64: Connection] = [:]
    /// Connections waiting for their appended event to become durable, by sequence.
    private var awaiting: [(sequence: UInt64, connection: Connection)] = []
    private var nextToken: UInt64 = 1_000
    static let maxConnections = 16
    static let maxLine = 4_096

    init(path: String, epoll: Epoll, listenerToken: UInt64) throws {
        self.path = path
        self.epoll = epoll
        listener = try UnixSocket.listen(path: path)
        try epoll.add(listener.rawValue, token: listenerToken)
    }

    /// Accepts every waiting connection. The listener is level-triggered, so leaving one
    /// unaccepted would spin the loop: when every slot is taken, idle connections are dropped
    /// first, and a connection that still finds no slot is accepted and closed at once.
    func acceptAll() {
        while let connection = try? UnixSocket.accept(listener) {
            if connections.count >= Self.maxConnections { dropIdle() }
            guard connections.count < Self.maxConnections else { continue } // closed on scope exit
            let token = nextToken
            nextToken += 1
            guard (try? epoll.add(connection.rawValue, token: token)) != nil else { continue }
            connections[token] = Connection(connection)
        }
    }

    private func dropIdle() {
        let now = monotonicNanoseconds()
        for (token, c) in connections where now &- c.acceptedAt > Self.idleNanoseconds {
            try? epoll.remove(c.fd.rawValue)
            connections[token] = nil
        }
    }

    func handleReadable(token: UInt64, respond: (ControlCommand) -> ControlReply) {
        guard let entry = connections.removeValue(forKey: token) else { return }
        var chunk = [UInt8](repeating: 0, count: 1_024)
        let read: Int?? = try? chunk.withUnsafeMutableBytes { try entry.fd.read(into: $0) }
        guard let n = read ?? 0 else { // EAGAIN: keep waiting
            connections[token] = entry
            return
        }
        entry.buffer += chunk[0..<n]
        if let newline = entry.buffer.firstIndex(of: 0x0A) {
            let line = String(decoding: entry.buffer[..<newline], as: UTF8.self)
            switch ControlCommand(line: line).map(respond) ?? .now(#"{"ok":false,"error":"unknown command"}"#) {
            case .now(let reply):
                try? entry.fd.sendAll(Array((reply + "\n").utf8))
            case .whenDurable(let sequence):
                try? epoll.remove(entry.fd.rawValue)
                awaiting.append((sequence, entry))
                return
            }
        } else if n > 0 && entry.buffer.count < Self.maxLine {
            connections[token] = entry
            return
        }
        try? epoll.remove(entry.fd.rawValue)
        // Dropping `entry` closes the descriptor.
    }

    /// Answers the connections whose events are now durable (or were refused).
    func settle(durableThrough: UInt64, refused: Set<UInt64>) {
        guard !awaiting.isEmpty else { return }
        awaiting.removeAll { waiting in
            guard waiting.sequence <= durableThrough else { return false }
            let reply = refused.contains(waiting.sequence)
                ? #"{"ok":false,"error":"the log refused the event"}"#
                : #"{"ok":true,"seq":\#(waiting.sequence)}"#
            try? waiting.connection.fd.sendAll(Array((reply + "\n").utf8))
            return true
        }
    }

    func close() {
        for (_, entry) in connections { try? epoll.remove(entry.fd.rawValue) }
        connections.removeAll()
        awaiting.removeAll()
        FileSystem.remove(path)
    }
}

/// The client side, used by the CLI.
public enum ControlClient {
    /// Sends one command to the node using `dataDirectory`; returns its one-line reply.
    public static func send(_ command: ControlCommand, dataDirectory: String, timeoutMilliseconds: Int = 3_000) throws -> String {
        let fd = try UnixSocket.connect(path: dataDirectory + "/control.sock", timeoutMilliseconds: timeoutMilliseconds)
        try fd.writeAll(Array((command.line + "\n").utf8))
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while !reply.contains(0x0A) {
            guard let n = try chunk.withUnsafeMutableBytes({ try fd.read(into: $0) }), n > 0 else { break }
            reply += chunk[0..<n]
        }
        return String(decoding: reply, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
