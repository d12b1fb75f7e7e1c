import ArgumentParser
import Foundation
import VigilCAP
import VigilCore
import VigilNode

/// `vigil warning import|list`: public warnings (CAP 1.2; docs/warnings.md). Feeds bring them;
/// staff may hand the box one they hold (an authority's email, a USB stick) with `import`.
struct WarningCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "warning", abstract: "Hand the box a CAP 1.2 warning; list the public warnings in force.",
        subcommands: [WarningImportCommand.self, WarningList.self])
}

struct WarningImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Read a CAP 1.2 document from a file (or - for standard input) as a feed's would be read.")

    @Argument(help: "The CAP 1.2 document (at most 40 KiB), or - for standard input.") var file: String
    @Option(help: "Where it came from, recorded with it (default: the file's path).") var source: String?
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            let data: Data
            if file == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let d = FileManager.default.contents(atPath: file) else { throw CLIError("cannot read \(file)", code: 66) }
                data = d
            }
            guard data.count <= WarningImport.maximumBytes else {
                throw CLIError("\(file) is \(data.count) bytes; a warning imported by hand is at most \(WarningImport.maximumBytes / 1024) KiB", code: 65)
            }
            let request = WarningImport(document: [UInt8](data), source: source ?? (file == "-" ? "standard input" : "file:" + file))
            let reply = try CommandSender.send(.importWarning(request), dataDirectory: dir)
            FileOutput.standardOutput.write("imported (event \(reply.sequence ?? 0))\n")
        }
    }
}

struct WarningList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The public warnings in force, loudest first.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let state = try Replay.currentState(try openForReading(configuration.dataDirectory), settings: configuration.projections)
            FileOutput.standardOutput.write(warningText(state.warnings))
        }
    }
}

func warningText(_ book: WarningBook) -> String {
    let here = book.inForceHere
    var out = "public warnings: \(here.count) in force here, \(book.warnings.current.count - book.warnings.inForceHere.count) elsewhere"
    if book.settings.site == nil && book.settings.geocodes.isEmpty { out += "; no site.location or warnings.geocodes: only warnings without an area apply" }
    if book.unreadable > 0 { out += "; \(book.unreadable) unreadable documents in the log" }
    out += "\n"
    for w in here {
        let status = w.alert.status == .actual ? "" : " [\(w.alert.status.rawValue.uppercased())]"
        out += "  \(w.level.rawValue.uppercased())\(status): \(OutputPolicy.warningText(w))\n"
        if let info = w.infos.first {
            if let instruction = info.instruction { out += "    do: \(CAPText.oneLine(instruction, limit: 300))\n" }
            let areas = info.areas.map { CAPText.oneLine($0.description, limit: 80) }.joined(separator: "; ")
            if !areas.isEmpty { out += "    area: \(areas)\n" }
        }
        if let source = book.source(of: w.key) {
            out += "    from \(CAPText.oneLine(source.feed, limit: 120)) (event \(source.sequence)\(source.signatureVerified ? ", signature verified" : ""))\n"
        }
    }
    return out
}
