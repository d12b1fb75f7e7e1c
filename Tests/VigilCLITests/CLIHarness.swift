import Foundation
#if canImport(Glibc)
import Glibc
#endif
// The tests' one temporary directory helper, visible to every file of this module.
@_exported import VigilTestSupport

/// Runs the built `vigil` binary the way a person would.
enum CLI {
    /// scripts/test exports VIGIL_BINARY; otherwise use the debug build next to the sources.
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["VIGIL_BINARY"] { return path }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/vigil").path
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// Runs `vigil ARGUMENTS` to its end; `input`, if given, is its standard input.
    @discardableResult
    static func run(_ arguments: [String], input: String? = nil, directory: String? = nil) throws -> Result {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.currentDirectoryURL = directory.map { URL(fileURLWithPath: $0) }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        if let input {
            try? stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Starts a long-running command; the caller stops it.
    static func start(_ arguments: [String]) throws -> (TestProcess, Pipe) {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, out)
    }
}

/// Waits (in a test, never in Sources) until `condition` holds or `seconds` pass.
func eventually(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
