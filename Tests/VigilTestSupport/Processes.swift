import Foundation

/// Runs a program to its end; its stdout and stderr together.
public func runProcess(_ path: String, _ arguments: [String]) -> (status: Int32, output: String) {
    let process = TestProcess()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    do { try process.run() } catch { return (-1, "cannot run \(path): \(error)") }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    return (status, String(decoding: data, as: UTF8.self))
}

/// Runs a blocking call on a thread of its own: blocking a thread of Swift's cooperative pool
/// (two on this machine) would stall every other test.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// Where a test's screenshots and other output go: `VIGIL_TEST_OUTPUT/NAME` (scripts/test sets
/// it), else `.build/test-output/NAME`.
public func testOutputDirectory(_ name: String) -> String {
    if let base = ProcessInfo.processInfo.environment["VIGIL_TEST_OUTPUT"] { return base + "/" + name }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/test-output/\(name)").path
}

/// A file of `Tests/` by its path below it (`browser/box_page.py`).
public func testsFile(_ path: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(path).path
}

/// A child's first line on `pipe` (blocking: call it `offPool`), or what it wrote before it ended.
public func readFirstLine(_ pipe: Pipe) -> String {
    var data = Data()
    while !data.contains(UInt8(ascii: "\n")) {
        let chunk = pipe.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        data.append(chunk)
    }
    return String(decoding: data, as: UTF8.self)
}

/// The port in a server's "listening on port N" line.
public func listeningPort(in line: String) -> Int? {
    guard let range = line.range(of: "listening on port ") else { return nil }
    return Int(line[range.upperBound...].prefix { $0.isNumber })
}
