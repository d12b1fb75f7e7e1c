import ArgumentParser
import Foundation
import VigilEvents
import VigilLog
import VigilSystem

/// Tools for tests, hidden from help.
struct Debug: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Test tools.", shouldDisplay: false, subcommands: [AppendStress.self, DebugGPIO.self, DebugGATTServe.self])
}

/// Appends check-ins as fast as the log takes them and prints each sequence the moment its
/// acknowledgement arrives. The crash test SIGKILLs it and checks every printed sequence survived.
struct AppendStress: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "append-stress")

    @Option var data: String
    @Option var count: Int = 1_000_000
    @Option var sync: String = "deferred-meta"
    @Option var windowUs: UInt64 = 1_000

    func run() async throws {
        try await reportingErrors {
            guard let mode = SyncMode(rawValue: sync) else { throw CLIError("bad --sync", code: 64) }
            var config = LogConfiguration(directory: data)
            config.sync = mode
            config.commitWindowMicroseconds = windowUs
            config.initialMapSize = 1 << 20 // small, so map growth happens under the kill too
            let log: EventLog
            do { log = try EventLog.open(config) } catch { throw CLIError("\(error)") }
            let inFlight = InFlight()
            for i in 0..<count {
                var checkIn = CheckIn()
                checkIn.resident = "resident-\(i % 50)"
                checkIn.source = .checkInCli
                checkIn.value = Double(i)
                let (kind, payload) = EventCodec.encode(.checkIn(checkIn))
                inFlight.wait(below: 20_000)
                inFlight.add()
                do {
                    try log.append(LogRecord(kind: kind, timeMicroseconds: realtimeMicroseconds(), payload: payload),
                                   priority: .critical) { result in
                        if case .success(let seq) = result { FileOutput.standardOutput.write("\(seq)\n") }
                        inFlight.done()
                    }
                } catch {
                    throw CLIError("\(error)")
                }
            }
            log.close()
        }
    }
}

/// Bounds appends in flight so the stress writer cannot exhaust memory.
final class InFlight: Sendable {
    private let lock = ConditionLock()
    private let count = LockedValue(0)
    func add() { lock.withLock { count.withLock { $0 += 1 } } }
    func done() { lock.withLock { count.withLock { $0 -= 1 }; lock.signal() } }
    func wait(below limit: Int) {
        lock.withLock { while count.withLock({ $0 }) >= limit { lock.wait() } }
    }
}
