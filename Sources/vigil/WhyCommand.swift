import ArgumentParser
import Foundation
import VigilCore
import VigilEvents
import VigilLog
import VigilNode

struct Why: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Explain each output: its pattern and the events that caused it.")

    @OptionGroup var options: DataOptions
    @Flag(help: "JSON output.") var json = false

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let dir = configuration.dataDirectory
            let log = try openForReading(dir)
            var state = try Replay.currentState(log, settings: configuration.projections)
            state.outbox.unreachableAfterMicroseconds = configuration.notifyUnreachableAfterMicroseconds
            let live = try? ControlClient.send(.status, dataDirectory: dir, timeoutMilliseconds: 3_000)
            let running = live != nil
            // Explain what the node shows, or would show if it ran. A node whose log failed runs
            // from memory: what it took since is not in the log, but the failure itself shows.
            let decisions = OutputPolicy.decide(state, running: true, logFailure: live?.status?.fromMemory?.failure,
                                                callPathProblem: live?.status.flatMap { $0.callPathProblem ?? $0.alarmCentre?.problem })
            let sequences = Set(decisions.values.flatMap { $0.reasons.flatMap(\.sequences) })
            var events: [UInt64: Event] = [:]
            try log.read { txn in
                for seq in sequences.sorted() {
                    try txn.forEach(from: seq) { result in
                        if case .event(let e) = Replay.input(result), e.sequence == seq { events[seq] = e }
                        return false
                    }
                }
            }
            if json {
                var object: [String: Any] = ["running": running]
                if let m = live?.status?.fromMemory { object["from_memory_events"] = Int(m.events) }
                for line in OutputLine.allCases {
                    let d = decisions[line] ?? OutputDecision(pattern: .off, reasons: [])
                    object[line.rawValue] = [
                        "pattern": d.pattern.description,
                        "reasons": d.reasons.map { ["text": $0.text, "events": $0.sequences.map { Int($0) }] },
                    ]
                }
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                FileOutput.standardOutput.write(String(decoding: data, as: UTF8.self) + "\n")
                return
            }
            var out = running ? "" : "(no node is running; these are the outputs it would show)\n"
            if let m = live?.status?.fromMemory {
                out += "(the node runs from memory since its log failed: the \(m.events) events it took since are not in the log, so what follows is the log's part only)\n"
            }
            for line in OutputLine.allCases {
                let d = decisions[line] ?? OutputDecision(pattern: .off, reasons: [])
                out += "\(line.rawValue): \(d.pattern)\n"
                for reason in d.reasons {
                    out += "  because \(reason.text)\n"
                    for seq in reason.sequences {
                        if let e = events[seq] { out += "    event \(seq) \(e.body.kind.name) at \(EventFormatting.time(e.timeMicroseconds))\n" }
                    }
                }
            }
            FileOutput.standardOutput.write(out)
        }
    }
}
