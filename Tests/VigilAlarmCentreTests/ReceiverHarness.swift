import Foundation
import Glibc
import VigilAlarmCentre

/// scripts/sia-centre (a pysiaalarm receiver on loopback) as a child process, and a blocking
/// TCP client to it (Linux). Test code only: the library itself has no clock, process or socket.
enum LiveHarness {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let script = packageRoot.appendingPathComponent("scripts/sia-centre").path
    /// $DC09_PYTHON, or python3 with the pinned pysiaalarm scripts/setup installs.
    static let python = ProcessInfo.processInfo.environment["DC09_PYTHON"] ?? "/usr/bin/env"
    /// The arguments before the script's own: python3 found on PATH, as scripts/setup's pip put it.
    static let pythonArguments = ProcessInfo.processInfo.environment["DC09_PYTHON"] == nil ? ["python3"] : []
    /// Set to a directory to keep every raw reply the live tests receive (corpus material).
    static let captureDirectory = ProcessInfo.processInfo.environment["DC09_CAPTURE_DIR"]


    static func capture(_ bytes: [UInt8], as name: String) {
        guard let directory = captureDirectory, !bytes.isEmpty else { return }
        try? Data(bytes).write(to: URL(fileURLWithPath: directory).appendingPathComponent(name))
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
}

/// One running scripts/sia-centre.
final class ReceiverProcess {
    let process = Process()
    private(set) var port = 0
    private let output: Int32
    private var buffer: [UInt8] = []
    private(set) var lines: [[String: Any]] = []

    init(account: String, key: String? = nil, mode: String = "normal") throws {
        process.executableURL = URL(fileURLWithPath: LiveHarness.python)
        process.arguments = LiveHarness.pythonArguments + [LiveHarness.script, "--port", "0", "--account", account, "--mode", mode] + (key.map { ["--key", $0] } ?? [])
        let pipe = Pipe()
        process.standardOutput = pipe
        output = pipe.fileHandleForReading.fileDescriptor
        try process.run()
        if let first = nextLine(timeout: 20), let listening = first["listening"] as? Int { port = listening }
        guard port > 0 else {
            process.terminate()
            throw HarnessError(description: "scripts/sia-centre did not report a port (is pysiaalarm installed? scripts/setup) (\(LiveHarness.python) \(LiveHarness.script))")
        }
    }

    deinit {
        if process.isRunning { _ = stop() }
    }

    /// The next JSON line, waiting up to `timeout` seconds.
    func nextLine(timeout: Double) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] {
                    lines.append(object)
                    return object
                }
                continue
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(output, &chunk, chunk.count)
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }

    /// The next line with `key` (skipping others), as a dictionary.
    func next(_ key: String, timeout: Double = 5) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            guard let line = nextLine(timeout: deadline.timeIntervalSinceNow) else { return nil }
            if let value = line[key] as? [String: Any] { return value }
        }
        return nil
    }

    /// SIGTERM, then the exit status and whether the final `stopped` line came; a harness still
    /// running 10 s later is killed (status -9), so a test never hangs on it.
    func stop() -> (status: Int32, stopped: Bool) {
        process.terminate()
        var stopped = false
        let deadline = Date().addingTimeInterval(10)
        while deadline.timeIntervalSinceNow > 0, let line = nextLine(timeout: deadline.timeIntervalSinceNow) {
            if line["stopped"] as? Bool == true { stopped = true }
        }
        while process.isRunning, deadline.timeIntervalSinceNow > 0 { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return (-9, stopped)
        }
        process.waitUntilExit()
        return (process.terminationStatus, stopped)
    }
}

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
            close(socketFD)
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
