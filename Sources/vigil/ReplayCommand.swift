import ArgumentParser
import Foundation
import VigilNode

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Rebuild every projection from sequence 0 and check it equals the node's incremental state.")

    @OptionGroup var options: DataOptions

    @Option(help: "Write rebuilt.json and incremental.json into this directory, to see a mismatch.")
    var dump: String?

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let log = try openForReading(configuration.dataDirectory)
            let report = try Replay.verify(log, settings: configuration.projections)
            if let dump {
                try FileManager.default.createDirectory(atPath: dump, withIntermediateDirectories: true)
                try Data(report.rebuiltBytes).write(to: URL(fileURLWithPath: dump + "/rebuilt.json"))
                try Data(report.incrementalBytes).write(to: URL(fileURLWithPath: dump + "/incremental.json"))
            }
            let rate = report.seconds > 0 ? Double(report.replayedEvents) / report.seconds : 0
            var out = "replayed \(report.replayedEvents) events in \(String(format: "%.3f", report.seconds)) s (\(Int(rate)) events/s)\n"
            guard let checkpoint = report.checkpointSequence else {
                out += "no checkpoint yet: nothing to compare against\n"
                FileOutput.standardOutput.write(out)
                return
            }
            out += "incremental state: checkpoint at \(checkpoint) + \(report.tailEvents) events after it\n"
            if report.matches {
                out += "OK: identical, \(report.rebuiltBytes.count) bytes\n"
                FileOutput.standardOutput.write(out)
            } else {
                FileOutput.standardOutput.write(out)
                throw CLIError("MISMATCH: the rebuilt state (\(report.rebuiltBytes.count) bytes) differs from the incremental state (\(report.incrementalBytes.count) bytes)")
            }
        }
    }
}
