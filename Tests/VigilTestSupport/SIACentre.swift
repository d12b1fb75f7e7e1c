import Foundation
import Glibc

/// scripts/sia-centre (a pysiaalarm receiver on loopback) as a child process, and a blocking
/// TCP client to it (Linux) in VigilAlarmCentreTests. Test code only.
public enum LiveHarness {
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    public static let script = packageRoot.appendingPathComponent("scripts/sia-centre").path
    /// $DC09_PYTHON, or python3 with the pinned pysiaalarm scripts/setup installs.
    public static let python = ProcessInfo.processInfo.environment["DC09_PYTHON"] ?? "/usr/bin/env"
    /// The arguments before the script's own: python3 found on PATH, as scripts/setup's pip put it.
    public static let pythonArguments = ProcessInfo.processInfo.environment["DC09_PYTHON"] == nil ? ["python3"] : []
    /// Set to a directory to keep every raw reply the live tests receive (corpus material).
    public static let captureDirectory = ProcessInfo.processInfo.environment["DC09_CAPTURE_DIR"]


    public static func capture(_ bytes: [UInt8], as name: String) {
        guard let directory = captureDirectory, !bytes.isEmpty else { return }
        try? Data(bytes).write(to: URL(fileURLWithPath: directory).appendingPathComponent(name))
    }
}

public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// One running scripts/sia-centre.
public final class ReceiverProcess {
    public let process = TestProcess()
    public private(set) var port = 0
    private let output: Int32
    private var buffer: [UInt8] = []
    public private(set) var lines: [[String: Any]] = []

    /// `port` 0: one the system picks (then `port` says which).
    public init(account: String, key: String? = nil, mode: String = "normal", port wanted: Int = 0) throws {
        process.executableURL = URL(fileURLWithPath: LiveHarness.python)
        process.arguments = LiveHarness.pythonArguments + [LiveHarness.script, "--port", "\(wanted)", "--account", account, "--mode", mode] + (key.map { ["--key", $0] } ?? [])
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
    public func nextLine(timeout: Double) -> [String: Any]? {
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
    public func next(_ key: String, timeout: Double = 5) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            guard let line = nextLine(timeout: deadline.timeIntervalSinceNow) else { return nil }
            if let value = line[key] as? [String: Any] { return value }
        }
        return nil
    }

    /// SIGTERM, then the exit status and whether the final `stopped` line came; a harness still
    /// running 10 s later is killed (status -9), so a test never hangs on it.
    public func stop() -> (status: Int32, stopped: Bool) {
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

