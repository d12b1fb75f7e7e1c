import ArgumentParser
import Foundation
import VigilBoard
import VigilNode
import VigilSystem

/// Exercises a real GPIO board without a node: the VM tests (Tests/vm) and scripts/hil-test
/// use it to check the libgpiod backend on its own. Hidden, like every `debug` tool.
struct DebugGPIO: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gpio", abstract: "Exercise a GPIO board profile directly.", shouldDisplay: false,
        subcommands: [GPIOWatch.self, GPIODrive.self])
}

/// Opens the board of a profile (a name in board/ or a path), with errors as one clear line.
private func openGPIOBoard(_ name: String) throws -> GPIOBoard {
    let profile: BoardProfile
    do {
        profile = try NodeConfiguration.loadBoard(named: name)
    } catch let error as ConfigurationError {
        throw CLIError("board \(error)", code: 78) // EX_CONFIG, as for `run --config`
    }
    if profile.chip == "sim" {
        throw CLIError("board \(profile.name) is the simulated board; give a profile with a real chip", code: 64)
    }
    do {
        return try GPIOBoard(profile: profile)
    } catch {
        throw CLIError("board \(profile.name): \(error)")
    }
}

private func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// `vigil debug gpio watch --board FILE [--count N] [--timeout-ms T]`
///
/// Prints one JSON line when the lines are held ({"ready":true,...,"pressed":<level now>}), then
/// one per button edge, {"line":L,"pressed":B,"ts_ns":T}, from an epoll loop on the board's
/// descriptor (no polling, no sleeping). Exits 0 after N edges (all edges of the last batch are
/// printed, then {"done":true,"edges":N,"dropped_edges":D}, D counting edges reported from the
/// line's level after the kernel's event FIFO overflowed), 124 when the timeout passes first. `--count 0` only opens the board and reports.
struct GPIOWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "watch", abstract: "Print button edges as JSON lines.")

    @Option(help: "Board profile: a name in board/ or a path to a profile file.")
    var board: String

    @Option(help: "Exit after this many edges; 0 opens the board, prints the ready line and exits.")
    var count: Int = 1

    @Option(help: "Give up (exit 124) after this many milliseconds.")
    var timeoutMs: Int = 10_000

    func run() async throws {
        try await reportingErrors {
            guard count >= 0, timeoutMs > 0 else { throw CLIError("--count must be >= 0 and --timeout-ms > 0", code: 64) }
            let gpio = try openGPIOBoard(board)
            defer { gpio.stop() }
            let level = (try? gpio.buttonPressed()).map { "\($0)" } ?? "null"
            FileOutput.standardOutput.write(
                #"{"ready":true,"chip":\#(jsonString(gpio.chipName)),"label":\#(jsonString(gpio.chipLabel)),"line":\#(gpio.profile.button.offset),"pressed":\#(level)}"# + "\n")
            guard count > 0 else { return }

            let epoll = try Epoll()
            try epoll.add(gpio.descriptor, token: 1)
            let deadline = monotonicNanoseconds() + UInt64(timeoutMs) * 1_000_000
            var seen = 0
            var edges: [ButtonEdge] = []
            while seen < count {
                let now = monotonicNanoseconds()
                guard now < deadline else {
                    throw CLIError("timed out after \(timeoutMs) ms with \(seen) of \(count) edges", code: 124)
                }
                let waitMs = Int32(clamping: (deadline - now + 999_999) / 1_000_000)
                guard !(try epoll.wait(timeoutMilliseconds: waitMs)).isEmpty else { continue }
                edges.removeAll(keepingCapacity: true)
                try gpio.readReady(into: &edges)
                for edge in edges {
                    FileOutput.standardOutput.write(#"{"line":\#(edge.line),"pressed":\#(edge.pressed),"ts_ns":\#(edge.kernelTimestampNanoseconds)}"# + "\n")
                }
                seen += edges.count
            }
            // Edges reported from the line's level because the kernel's FIFO overflowed.
            FileOutput.standardOutput.write(#"{"done":true,"edges":\#(seen),"dropped_edges":\#(gpio.droppedEdges)}"# + "\n")
        }
    }
}

/// `vigil debug gpio drive --board FILE [--line red --on|--off] [--hold-ms T]`
///
/// Holds every output of the profile (off) and drives `--line` first. Then it reads commands
/// from standard input, one per line, `<output> on|off` (e.g. `amber on`), answering each with
/// {"line":"amber","on":true} once the line is set, so a test can read the pin in between.
/// It ends when standard input closes or, with `--hold-ms`, when that time passes, whichever comes
/// first (standard input that cannot be watched, such as /dev/null for a job started with `&` in
/// a script, is read through first and then only the time counts); then every
/// output is turned off and released and {"stopped":true} is printed.
struct GPIODrive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "drive", abstract: "Drive outputs and hold them.")

    enum Level: String, EnumerableFlag { case on, off }

    @Option(help: "Board profile: a name in board/ or a path to a profile file.")
    var board: String

    @Option(help: "Output to drive at once: red, amber, green, blue or buzzer.")
    var line: String?

    @Flag(help: "Level for --line.")
    var level: Level = .on

    @Option(help: "Stop after this many milliseconds even if standard input stays open.")
    var holdMs: Int?

    func run() async throws {
        try await reportingErrors {
            if let holdMs, holdMs < 0 { throw CLIError("--hold-ms must be >= 0", code: 64) }
            let first = try line.map { try Self.output($0) }
            let gpio = try openGPIOBoard(board)
            defer {
                gpio.stop()
                FileOutput.standardOutput.write(#"{"stopped":true}"# + "\n")
            }
            if let first { try set(gpio, first, on: level == .on) }
            try hold(gpio)
        }
    }

    private static func output(_ name: String) throws -> OutputLine {
        guard let output = OutputLine(rawValue: name) else {
            throw CLIError("no output \(name); outputs are \(OutputLine.allCases.map(\.rawValue).joined(separator: ", "))", code: 64)
        }
        return output
    }

    private func set(_ gpio: GPIOBoard, _ output: OutputLine, on: Bool) throws {
        guard gpio.profile.outputs[output] != nil else {
            throw CLIError("board \(gpio.profile.name) has no \(output.rawValue) output")
        }
        try gpio.drive(output, on: on, timeMicroseconds: realtimeMicroseconds())
        FileOutput.standardOutput.write(#"{"line":"\#(output.rawValue)","on":\#(on)}"# + "\n")
    }

    /// Runs one stdin command; a bad one is reported on stderr and the rest go on.
    private func command(_ gpio: GPIOBoard, _ text: Substring) {
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        guard !words.isEmpty else { return }
        do {
            guard words.count == 2, words[1] == "on" || words[1] == "off" else {
                throw CLIError("bad command \"\(text)\"; say <output> on|off", code: 64)
            }
            try set(gpio, try Self.output(String(words[0])), on: words[1] == "on")
        } catch {
            printError("\(error)")
        }
    }

    /// Waits for standard input to close or the hold time to pass, with epoll (no sleeping).
    private func hold(_ gpio: GPIOBoard) throws {
        let epoll = try Epoll()
        let stdinToken: UInt64 = 1, timerToken: UInt64 = 2
        var watchingStdin = true
        do {
            try epoll.add(0, token: stdinToken)
        } catch {
            // /dev/null and regular files cannot be watched (EPERM): read them straight through.
            watchingStdin = false
        }
        var timer: TimerFD? // kept alive while the loop waits on it
        if let holdMs {
            let t = try TimerFD()
            try t.arm(afterNanoseconds: UInt64(holdMs) * 1_000_000)
            try epoll.add(t.fd, token: timerToken)
            timer = t
        }
        defer { withExtendedLifetime(timer) {} }
        var pending = Data()
        func consume(_ data: Data) {
            pending.append(data)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                command(gpio, Substring(text))
            }
        }
        func finish() { // a last command without a newline
            if !pending.isEmpty { command(gpio, Substring(String(decoding: pending, as: UTF8.self))) }
        }
        if !watchingStdin {
            while true { // a file or /dev/null: take its commands now
                let data = FileHandle.standardInput.availableData
                if data.isEmpty { break }
                consume(data)
            }
            if timer == nil { return finish() }
        }
        loop: while true {
            for ready in try epoll.wait() {
                if ready.token == timerToken { break loop }
                let data = FileHandle.standardInput.availableData
                if data.isEmpty { break loop } // end of input
                consume(data)
            }
        }
        finish()
    }
}
