import Foundation
import Glibc
import VigilAlarmCentre
import VigilTestSupport

/// A blocking TCP connection to 127.0.0.1, reading replies through a `DC09FrameSplitter`.
final class CentreConnection {
    private let socketFD: Int32
    var splitter = DC09FrameSplitter()

    enum Outcome: Equatable {
        case frame([UInt8])
        /// The centre closed (or reset) the connection without a whole frame.
        case closed
        /// No whole frame within the wait.
        case timedOut
    }

    init(port: Int) throws {
        socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw HarnessError(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            // Not closed here: every property is set, so the deinit runs and closes it (once).
            throw HarnessError(description: "connect to 127.0.0.1:\(port): errno \(errno)")
        }
    }

    deinit { close(socketFD) }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw HarnessError(description: "send: errno \(errno)") }
            sent += n
        }
    }

    /// The next whole frame, or why there is none; every raw byte read goes to `raw`.
    func receive(timeout: Double = 5, raw: inout [UInt8]) -> Outcome {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let frame = splitter.nextFrame() { return .frame(frame) }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return .timedOut }
            var poller = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 2048)
            let count = recv(socketFD, &chunk, chunk.count, 0)
            guard count > 0 else { return .closed }
            raw += chunk[..<count]
            splitter.append(chunk[..<count])
        }
    }

    /// Sends `frame`, waits for the reply frame and parses it against the frame's expectation.
    func exchange(_ frame: DC09OutgoingFrame, timeout: Double = 5, capture: String? = nil)
        throws -> Result<DC09Reply, DC09ReplyError> {
        try send(frame.bytes)
        var raw: [UInt8] = []
        let outcome = receive(timeout: timeout, raw: &raw)
        if let capture { LiveHarness.capture(raw, as: capture) }
        guard case .frame(let reply) = outcome else { throw HarnessError(description: "no reply frame: \(outcome)") }
        return Result { () throws(DC09ReplyError) in try DC09Reply.parse(reply, expecting: frame.expectation) }
    }
}

/// The wall clock and random pad bytes a node would pass in.
enum NodeInputs {
    static var utcSecondsNow: Int64 { Int64(Date().timeIntervalSince1970) }
    static func pad() -> [UInt8] { (0..<DC09Frame.maximumPadCount).map { _ in UInt8.random(in: 0...255) } }
}
