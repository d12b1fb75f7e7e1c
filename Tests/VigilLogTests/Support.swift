import Foundation
import Testing
import VigilLog
import VigilSystem
// The tests' one temporary directory helper, visible to every file of this module.
@_exported import VigilTestSupport

/// A log directory inside a temporary directory (EventLog creates it on open).
func logDirectory(in base: String) -> String { base + "/log" }

/// A record whose contents depend on `index`, so mix-ups and reordering are visible.
func sampleRecord(_ index: Int, payloadBytes: Int = 24) -> LogRecord {
    var payload = [UInt8](repeating: 0, count: payloadBytes)
    for i in 0..<payloadBytes { payload[i] = UInt8(truncatingIfNeeded: index &* 31 &+ i) }
    return LogRecord(kind: UInt32(1 + index % 9), timeMicroseconds: 1_767_225_600_000_000 + UInt64(index) * 1_000,
                     payload: payload)
}

/// Everything stored in the log, in order, with corrupt values reported separately.
struct LogContents {
    var records: [StoredRecord] = []
    var corrupt: [CorruptRecord] = []
    var sequences: [UInt64] { records.map(\.sequence) }
}

func readAll(_ log: EventLog, from start: UInt64 = 0) throws -> LogContents {
    try log.read { txn in
        var contents = LogContents()
        try txn.forEach(from: start) { result in
            switch result {
            case .success(let view): contents.records.append(view.copy())
            case .failure(let corrupt): contents.corrupt.append(corrupt)
            }
            return true
        }
        return contents
    }
}

/// Collects completion results from the writer thread and lets a test await them.
final class CompletionCollector: Sendable {
    private struct State {
        var results: [UInt64: Result<UInt64, LogError>] = [:]
        var expected = 0
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = LockedValue(State())

    /// A completion handler that records its result under `sequence` once known.
    func handler(tag: UInt64) -> @Sendable (Result<UInt64, LogError>) -> Void {
        { result in
            let waiter = self.state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.results[tag] = result
                if s.results.count >= s.expected, let w = s.waiter {
                    s.waiter = nil
                    return w
                }
                return nil
            }
            waiter?.resume()
        }
    }

    var results: [UInt64: Result<UInt64, LogError>] { state.withLock { $0.results } }

    /// Waits until `count` completions have been recorded.
    func wait(forCount count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                s.expected = count
                if s.results.count >= count { return true }
                s.waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

/// Appends `records` without waiting between them and waits for every completion.
/// Synchronous refusals (shed, closed) are reported in the same array.
func appendAll(_ log: EventLog, _ records: [LogRecord],
               priority: AppendPriority) async -> [Result<UInt64, LogError>] {
    let collector = CompletionCollector()
    var immediate: [Int: LogError] = [:]
    var accepted = 0
    for (i, record) in records.enumerated() {
        do {
            try log.append(record, priority: priority, completion: collector.handler(tag: UInt64(i)))
            accepted += 1
        } catch {
            immediate[i] = error
        }
    }
    await collector.wait(forCount: accepted)
    let results = collector.results
    return records.indices.map { i in
        if let error = immediate[i] { return .failure(error) }
        return results[UInt64(i)]!
    }
}

extension Error {
    var isFull: Bool { if case .full? = self as? LogError { return true } else { return false } }
    var isShed: Bool { if case .shed? = self as? LogError { return true } else { return false } }
    var isClosed: Bool { if case .closed? = self as? LogError { return true } else { return false } }
}

extension Result where Failure == LogError {
    var successValue: Success? { if case .success(let v) = self { return v } else { return nil } }
    var failureValue: LogError? { if case .failure(let e) = self { return e } else { return nil } }
}

/// Where two record lists first differ, described briefly (nil when equal). Keeps failure
/// messages short where `==` on thousands of records would print all of them.
func firstDifference(_ actual: [LogRecord], _ expected: [LogRecord]) -> String? {
    if actual.count != expected.count { return "\(actual.count) records, expected \(expected.count)" }
    guard let i = actual.indices.first(where: { actual[$0] != expected[$0] }) else { return nil }
    return "record at index \(i) differs: kind \(actual[i].kind) time \(actual[i].timeMicroseconds) "
        + "\(actual[i].payload.count) bytes, expected kind \(expected[i].kind) time \(expected[i].timeMicroseconds) "
        + "\(expected[i].payload.count) bytes"
}

/// Compares stored records by sequence with what was acknowledged, briefly.
func differences(stored: [UInt64: LogRecord], acknowledged: [UInt64: LogRecord]) -> String? {
    let missing = Set(acknowledged.keys).subtracting(stored.keys).sorted()
    let extra = Set(stored.keys).subtracting(acknowledged.keys).sorted()
    let changed = acknowledged.keys.filter { stored[$0] != nil && stored[$0] != acknowledged[$0] }.sorted()
    if missing.isEmpty && extra.isEmpty && changed.isEmpty { return nil }
    return "missing \(missing.prefix(10)) (\(missing.count)), unexpected \(extra.prefix(10)) (\(extra.count)), "
        + "changed \(changed.prefix(10)) (\(changed.count))"
}

// MARK: - Another process: Debian's lmdb-utils

/// EventLog shares one LMDB environment per directory within a process, so "another reader"
/// that is really separate must be another process: mdb_dump and mdb_load from lmdb-utils.
let lmdbUtilsInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/mdb_dump")
    && FileManager.default.isExecutableFile(atPath: "/usr/bin/mdb_load")

struct ToolError: Error, CustomStringConvertible {
    let description: String
}

/// Runs `tool` with `arguments`, feeding `input`; returns its standard output.
func runTool(_ tool: String, _ arguments: [String], input: String? = nil) throws -> String {
    let process = TestProcess()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let stdout = Pipe()
    let stderr = Pipe()
    let stdin = Pipe()
    process.standardOutput = stdout
    process.standardError = stderr
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try stdin.fileHandleForWriting.close()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    let errors = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw ToolError(description: "\(tool) exited \(process.terminationStatus): \(String(decoding: errors, as: UTF8.self))")
    }
    return String(decoding: output, as: UTF8.self)
}

/// The sequences in the `events` database as a separate process (mdb_dump) sees them.
func sequencesSeenByAnotherProcess(directory: String) throws -> [UInt64] {
    let dump = try runTool("/usr/bin/mdb_dump", ["-s", "events", directory])
    // After the header, lines alternate key and value, each a space then hex digits.
    guard let body = dump.components(separatedBy: "HEADER=END\n").last else { return [] }
    let lines = body.split(separator: "\n").filter { $0.hasPrefix(" ") }
    return stride(from: 0, to: lines.count, by: 2).compactMap { UInt64(lines[$0].dropFirst(), radix: 16) }
}

/// Overwrites (or inserts) the value of `sequence` in the `events` database of a log that no
/// process has open, with mdb_load in plain-text mode: a key line then a value line, each byte
/// written as a backslash and two hex digits.
func overwriteValue(of sequence: UInt64, with bytes: [UInt8], inLogAt directory: String) throws {
    func escaped(_ bytes: [UInt8]) -> String {
        bytes.map { "\\" + ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
    let key = withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
    _ = try runTool("/usr/bin/mdb_load", ["-T", "-s", "events", directory], input: escaped(key) + "\n" + escaped(bytes) + "\n")
}

/// Writes a format-1 log (the layout before record checksums) with mdb_load: the format marker,
/// plain `varint kind | varint time | payload` values, and optionally one checkpoint.
func makeFormatOneLog(_ records: [LogRecord], checkpoint: (name: String, sequence: UInt64, state: [UInt8])?,
                      at directory: String) throws {
    func escaped(_ bytes: [UInt8]) -> String {
        bytes.map { "\\" + ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
    func varint(_ value: UInt64) -> [UInt8] {
        var v = value, out: [UInt8] = []
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        return out + [UInt8(v)]
    }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let meta = escaped(Array("format".utf8)) + "\n" + escaped([0, 0, 0, 1]) + "\n"
    _ = try runTool("/usr/bin/mdb_load", ["-T", "-s", "meta", directory], input: meta)
    var events = ""
    for (i, record) in records.enumerated() {
        let key = withUnsafeBytes(of: UInt64(i + 1).bigEndian) { Array($0) }
        events += escaped(key) + "\n" + escaped(varint(UInt64(record.kind)) + varint(record.timeMicroseconds) + record.payload) + "\n"
    }
    _ = try runTool("/usr/bin/mdb_load", ["-T", "-s", "events", directory], input: events)
    var checkpoints = ""
    if let checkpoint {
        checkpoints = escaped(Array(checkpoint.name.utf8)) + "\n"
            + escaped(withUnsafeBytes(of: checkpoint.sequence.bigEndian) { Array($0) } + checkpoint.state) + "\n"
    }
    _ = try runTool("/usr/bin/mdb_load", ["-T", "-s", "checkpoints", directory], input: checkpoints)
}
