import Foundation
import VigilSystem

/// The control socket's server side, driven by the node's loop: non-blocking accept and reads,
/// bounded connections and request size, one JSON request line and one JSON reply line per
/// connection. It knows framing, not commands: `ControlHandler` answers them.
final class ControlServer {
    /// A reply now, or once the event with this sequence is durable (or refused).
    enum Answer {
        case now(NodeReply)
        case whenDurable(UInt64, alert: String?)
    }

    private let listener: FileDescriptor
    private let path: String
    private let loop: any DescriptorWatch
    private let clock: any MonotonicClock
    private final class Connection {
        let fd: FileDescriptor
        var buffer: [UInt8] = []
        let acceptedAt: UInt64
        init(_ fd: consuming FileDescriptor, at: UInt64) {
            self.fd = fd
            acceptedAt = at
        }
    }
    /// A connection that has not sent its line by then is dropped (it holds one of few slots).
    static let idleNanoseconds: UInt64 = 10_000_000_000
    private var connections: [Int32: Connection] = [:]
    /// Connections waiting for their appended event to become durable, by sequence.
    private var awaiting: [(sequence: UInt64, alert: String?, connection: Connection)] = []
    static let maxConnections = 16
    /// Room for the largest command (an exposure record) with a wide margin.
    static let maxRequestBytes = 65_536

    /// Users whose processes may send commands: the node's own and root. The file's mode (0600)
    /// already keeps others out; this holds when someone loosens the mode or the directory.
    let allowedUsers: Set<UInt32>
    /// Connections refused for their peer's user (or an unreadable peer), since the start.
    private(set) var refusedPeers = 0
    private let onRefused: (_ user: UInt32?, _ total: Int) -> Void

    init(path: String, loop: any DescriptorWatch, clock: any MonotonicClock, allowedUsers: Set<UInt32> = [UInt32(geteuid()), 0],
         onRefused: @escaping (_ user: UInt32?, _ total: Int) -> Void = { _, _ in },
         answer: @escaping (NodeCommand) -> Answer) throws(SystemError) {
        self.path = path
        self.loop = loop
        self.clock = clock
        self.answer = answer
        self.allowedUsers = allowedUsers
        self.onRefused = onRefused
        listener = try UnixSocket.listen(path: path, mode: 0o600)
        guard loop.watch(listener.rawValue, "the control socket", events: Epoll.readable, handler: { [unowned self] _ in acceptAll() }) else {
            throw SystemError("epoll_ctl(ADD)", path, errno: .invalid)
        }
    }

    private let answer: (NodeCommand) -> Answer

    /// Accepts every waiting connection. The listener is level-triggered, so leaving one
    /// unaccepted would spin the loop: when every slot is taken, idle connections are dropped
    /// first, and a connection that still finds no slot is accepted and closed at once.
    private func acceptAll() {
        while true {
            let accepted: FileDescriptor?
            do {
                accepted = try UnixSocket.accept(listener)
            } catch {
                return // the peer went away before we took it: nothing to do
            }
            guard let connection = accepted else { return }
            let user = try? UnixSocket.peerUserID(connection)
            guard let user, allowedUsers.contains(user) else {
                refusedPeers += 1
                onRefused(user, refusedPeers)
                continue // closed on scope exit, before a byte is read
            }
            if connections.count >= Self.maxConnections { dropIdle() }
            guard connections.count < Self.maxConnections else { continue } // closed on scope exit
            let fd = connection.rawValue
            let entry = Connection(connection, at: clock.nowNanoseconds())
            connections[fd] = entry
            if !loop.watch(fd, "a control connection", events: Epoll.readable, handler: { [unowned self] _ in readable(fd) }) {
                connections[fd] = nil
            }
        }
    }

    private func dropIdle() {
        let now = clock.nowNanoseconds()
        for (fd, c) in connections where now &- c.acceptedAt > Self.idleNanoseconds {
            loop.unwatch(fd, "a control connection")
            connections[fd] = nil
        }
    }

    private func readable(_ fd: Int32) {
        guard let entry = connections[fd] else { return }
        var chunk = [UInt8](repeating: 0, count: 4_096)
        let n: Int
        do {
            guard let read = try chunk.withUnsafeMutableBytes({ try entry.fd.read(into: $0) }) else { return } // EAGAIN
            n = read
        } catch {
            close(fd)
            return
        }
        entry.buffer += chunk[0..<n]
        guard let newline = entry.buffer.firstIndex(of: 0x0A) else {
            if n == 0 || entry.buffer.count >= Self.maxRequestBytes { close(fd) } // closed early, or too long
            return
        }
        let reply: NodeReply
        if let command = try? JSONDecoder().decode(NodeCommand.self, from: Data(entry.buffer[..<newline])) {
            switch answer(command) {
            case .now(let r):
                reply = r
            case .whenDurable(let sequence, let alert):
                loop.unwatch(fd, "a control connection")
                connections[fd] = nil
                awaiting.append((sequence, alert, entry))
                return
            }
        } else {
            reply = .refused(.invalid, "not a command this node knows")
        }
        send(reply, on: entry)
        close(fd)
    }

    private func close(_ fd: Int32) {
        loop.unwatch(fd, "a control connection")
        connections[fd] = nil // dropping the entry closes the descriptor
    }

    /// Answers the connections whose events are now durable (or were refused).
    /// `unlogged`: the node runs from memory (its log failed): what was taken is in effect but
    /// not stored, and the reply says so.
    func settle(durableThrough: UInt64, refused: Set<UInt64>, unlogged: Bool) {
        guard !awaiting.isEmpty else { return }
        awaiting.removeAll { waiting in
            guard waiting.sequence <= durableThrough else { return false }
            var reply = NodeReply.durable(waiting.sequence, alert: waiting.alert)
            if unlogged { reply.unlogged = true }
            send(refused.contains(waiting.sequence) ? .refused(.logRefused, "the log refused the event") : reply,
                 on: waiting.connection)
            return true
        }
    }

    /// A reply is best effort: a client that went away has nobody left to tell.
    private func send(_ reply: NodeReply, on connection: Connection) {
        guard let data = try? ControlWire.encoder.encode(reply) else { return }
        try? connection.fd.sendAll(Array(data) + [0x0A])
    }

    func close() {
        for fd in connections.keys { loop.unwatch(fd, "a control connection") }
        connections.removeAll()
        awaiting.removeAll()
        loop.unwatch(listener.rawValue, "the control socket")
        FileSystem.remove(path)
    }
}

enum ControlWire {
    static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }
}

/// Why the CLI could not get an answer from a node.
public enum ControlClientError: Error, CustomStringConvertible {
    /// No node listens (no socket, or one a node left behind).
    case unreachable(String)
    /// A node took the connection but did not answer in time (or closed it first): its loop is
    /// busy or stuck, or every one of its connection slots is taken.
    case noAnswer(milliseconds: Int)
    case unreadableReply(String)

    public var description: String {
        switch self {
        case .unreachable(let e): "cannot reach the node: \(e)"
        case .noAnswer(let ms): "the node took the request but did not answer within \(ms) ms (its loop is busy or stuck)"
        case .unreadableReply(let text): "the node answered something unreadable: \(text.prefix(200))"
        }
    }
}

/// The client side, used by the CLI.
public enum ControlClient {
    /// Sends one command to the node using `dataDirectory` and returns its reply.
    public static func send(_ command: NodeCommand, dataDirectory: String, timeoutMilliseconds: Int = 3_000) throws(ControlClientError) -> NodeReply {
        let reply: [UInt8]
        do {
            let fd = try UnixSocket.connect(path: dataDirectory + "/control.sock", timeoutMilliseconds: timeoutMilliseconds)
            reply = try exchange(command, on: fd, timeoutMilliseconds: timeoutMilliseconds)
        } catch let error as ControlClientError {
            throw error
        } catch let error as SystemError where error.errno == .wouldBlock {
            // connect: a listener whose backlog is full, because its loop stopped accepting.
            throw .noAnswer(milliseconds: timeoutMilliseconds)
        } catch {
            throw .unreachable("\(error)")   // connect: no node listens
        }
        let line = reply.prefix { $0 != 0x0A }
        guard let decoded = try? JSONDecoder().decode(NodeReply.self, from: Data(line)) else {
            throw .unreadableReply(String(decoding: line, as: UTF8.self))
        }
        return decoded
    }

    /// One request line out, one reply line back (up to its newline or the node's close).
    private static func exchange(_ command: NodeCommand, on fd: borrowing FileDescriptor,
                                 timeoutMilliseconds: Int) throws(ControlClientError) -> [UInt8] {
        var timedOut = false
        var received: [UInt8] = []
        do {
            let request = (try? ControlWire.encoder.encode(command)).map(Array.init) ?? []
            try fd.writeAll(request + [0x0A])
            var chunk = [UInt8](repeating: 0, count: 4_096)
            while !received.contains(0x0A) {
                // nil: SO_RCVTIMEO ran out (the read's EAGAIN); 0: the node closed the connection.
                guard let n = try chunk.withUnsafeMutableBytes({ try fd.read(into: $0) }) else {
                    timedOut = true
                    break
                }
                guard n > 0 else { break }
                received += chunk[0..<n]
            }
        } catch {
            // A node took the connection and then did not take the request (SO_SNDTIMEO, or it
            // closed the connection: at its connection limit): it runs, but does not answer.
            throw .noAnswer(milliseconds: timeoutMilliseconds)
        }
        // No answer in time, or the connection closed before a whole line: the same.
        if timedOut || !received.contains(0x0A) { throw .noAnswer(milliseconds: timeoutMilliseconds) }
        return received
    }
}
