import Foundation
import VigilSystem

/// The part of Foundation's `Process` the tests use, started with `spawnProgram`: the child gets
/// its three standard descriptors and nothing else of the test process's.
///
/// Why not `Process`: on Linux it closes, in the child, the descriptors it saw open before it
/// spawned. A socket or pipe another test's thread opened in that moment went with the child and
/// stayed open as long as the child lived (libmosquitto's socket, say: the broker never saw the
/// box leave; or a pipe whose reader then never saw its end). The tests run in one process, many
/// at once, so that moment came.
///
/// Thread-safe: one thread may wait while another asks `isRunning` or sends a signal. The child
/// is reaped once, under the lock; a waiter blocks without reaping (`WNOWAIT`).
public final class TestProcess: @unchecked Sendable {
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    public var executableURL: URL?
    public var arguments: [String]?
    /// Nil: this process's environment.
    public var environment: [String: String]?
    public var currentDirectoryURL: URL?
    /// A `Pipe`, a `FileHandle`, or nil for /dev/null; this process's own by default.
    public var standardInput: Any? = FileHandle.standardInput
    public var standardOutput: Any? = FileHandle.standardOutput
    public var standardError: Any? = FileHandle.standardError

    private let lock = NSLock()
    private var child: pid_t = 0
    /// The wait status, once reaped.
    private var reaped: Int32?

    public init() {}

    public var processIdentifier: Int32 { lock.withLock { child } }

    public func run() throws {
        guard let path = executableURL?.path else { throw TestProcessError(description: "no executableURL") }
        let pid = try spawnProgram(path: path, arguments: arguments ?? [],
                                   environment: environment.map { $0.map { "\($0.key)=\($0.value)" } },
                                   input: Self.descriptor(standardInput, reading: true),
                                   output: Self.descriptor(standardOutput, reading: false),
                                   error: Self.descriptor(standardError, reading: false),
                                   directory: currentDirectoryURL?.path)
        lock.withLock { child = pid }
        // The child's ends of pipes are closed here, as `Process` does: a reader sees the end of
        // the output when the child's copy goes, not when this object does.
        if let pipe = standardInput as? Pipe { try? pipe.fileHandleForReading.close() }
        let output = standardOutput as? Pipe
        if let output { try? output.fileHandleForWriting.close() }
        if let error = standardError as? Pipe, error !== output { try? error.fileHandleForWriting.close() }
    }

    private static func descriptor(_ io: Any?, reading: Bool) -> Int32 {
        switch io {
        case let pipe as Pipe: reading ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
        case let handle as FileHandle: handle.fileDescriptor
        default: -1
        }
    }

    /// Reaps the child if it has exited; the caller holds the lock. A child someone else reaped
    /// (a `waitpid` of the test's own) has ended with a status nobody kept: said as exit 255,
    /// never as running for ever.
    private func reapIfExited() {
        guard reaped == nil, child > 0 else { return }
        var status: Int32 = 0
        let rc = waitpid(child, &status, WNOHANG)
        if rc == child { reaped = status } else if rc < 0 && errno == ECHILD { reaped = 255 << 8 }
    }

    public var isRunning: Bool {
        lock.withLock {
            reapIfExited()
            return child > 0 && reaped == nil
        }
    }

    /// Blocks until the child has exited, and reaps it.
    public func waitUntilExit() {
        let pid = processIdentifier
        guard pid > 0 else { return }
        while lock.withLock({ reaped == nil }) {
            var info = siginfo_t()
            // Waits without reaping, so a concurrent `isRunning` cannot take the status away.
            let rc = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
            if rc != 0 && errno == EINTR { continue }
            lock.withLock { reapIfExited() }
            if rc != 0 { break } // ECHILD: reaped meanwhile
        }
    }

    private var status: Int32 {
        lock.withLock {
            reapIfExited()
            return reaped ?? 0
        }
    }

    /// The exit status, or the signal that ended the child (as `Process` has it).
    public var terminationStatus: Int32 {
        let s = status
        return s & 0x7F == 0 ? (s >> 8) & 0xFF : s & 0x7F
    }

    public var terminationReason: TerminationReason { status & 0x7F == 0 ? .exit : .uncaughtSignal }

    /// SIGTERM, while the child has not been reaped (its pid is not yet anyone else's).
    public func terminate() { signal(SIGTERM) }

    public func interrupt() { signal(SIGINT) }

    private func signal(_ number: Int32) {
        lock.withLock {
            reapIfExited()
            if child > 0, reaped == nil { _ = kill(child, number) }
        }
    }
}

public struct TestProcessError: Error, CustomStringConvertible {
    public let description: String
}
