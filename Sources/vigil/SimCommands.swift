import ArgumentParser
import Foundation
import VigilNode

struct Sim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Drive the simulated board of a running node.", subcommands: [Press.self])
}

struct Press: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Press the simulated button: sos (long) or ack (short).")

    enum Gesture: String, ExpressibleByArgument, CaseIterable { case sos, ack, checkin }

    @Argument(help: "sos (held 2.5 s unless --hold), ack (a short press), or checkin (a resident's own button).")
    var gesture: Gesture

    @Option(help: "With checkin: the resident whose check-in button to press.")
    var resident: String?

    @Option(help: "How long to hold, e.g. 2.5s or 300ms.")
    var hold: String?

    @Option(help: "Extra contact-bounce edge pairs after the press.")
    var bounces: Int = 0

    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            let defaultHold: UInt64 = gesture == .sos ? 2_500_000 : 200_000
            if gesture == .checkin && resident == nil { throw CLIError("checkin needs --resident ID", code: 64) }
            var holdMicroseconds = defaultHold
            if let hold {
                guard let us = HumanDuration.parseMicroseconds(hold), us > 0, us <= 60_000_000 else {
                    throw CLIError("--hold must be a duration up to 60s, such as 2.5s", code: 64)
                }
                holdMicroseconds = us
            }
            let reply: NodeReply
            do throws(ControlClientError) {
                reply = try ControlClient.send(.press(ButtonPress(holdMicroseconds: holdMicroseconds, bounces: bounces,
                                                                  resident: gesture == .checkin ? resident : nil)), dataDirectory: dir)
            } catch .noAnswer {
                throw CLIError("the node on \(dir) runs but did not answer: its loop is busy or stuck")
            } catch {
                throw CLIError("no node is running with data directory \(dir) (\(error))")
            }
            _ = try CommandSender.accepted(reply)
            FileOutput.standardOutput.write("pressed \(gesture.rawValue) for \(HumanDuration.format(microseconds: holdMicroseconds))\n")
        }
    }
}
