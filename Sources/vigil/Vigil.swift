import ArgumentParser
import VigilSystem

@main
struct Vigil: AsyncParsableCommand {
    static func main() async {
        ignoreBrokenPipes() // `vigil log tail | head` must end quietly, not with SIGPIPE
        await Self.main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "vigil",
        abstract: "A headless edge node for disaster shelters: BLE scanning, an LMDB event log, alarms.",
        subcommands: [Run.self, Status.self, LogCommand.self, ReplayCommand.self, Why.self, ResidentCommand.self,
                      CheckInCommand.self, AcknowledgeCommand.self, AlertCommand.self, RadioCommand.self, KeysCommand.self, ExposureCommand.self, Sim.self,
                      HubCommand.self, HTTPCommand.self, ChatCommand.self, HazardCommand.self, WarningCommand.self, CallsCommand.self, SetupCommand.self, Debug.self]
    )
}

/// Options every command that touches a data directory shares.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "Data directory holding the event log (default: ./var, or `data:` from --config).")
    var data: String?

    @Option(name: .long, help: "Configuration file (YAML).")
    var config: String?

    func load() throws -> NodeConfigurationLoad {
        var configuration = NodeConfiguration()
        if let config {
            do {
                configuration = try NodeConfiguration.load(file: config)
            } catch let error as ConfigurationError {
                // EX_IOERR for a file that is there and cannot be read (the unit restarts it),
                // EX_CONFIG for a mistake in it (which a restart would not mend).
                throw CLIError("config \(error)", code: error.unreadable ? 74 : 78)
            }
        }
        if let data { configuration.dataDirectory = data }
        return NodeConfigurationLoad(configuration: configuration)
    }
}

import VigilNode

struct NodeConfigurationLoad {
    var configuration: NodeConfiguration
}

/// A failure the user can act on: printed as one line, with a non-zero exit code.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    let code: Int32
    init(_ message: String, code: Int32 = 1) {
        description = message
        self.code = code
    }
}

/// Runs a command body, turning known errors into one clear line on stderr and an exit code.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as CLIError {
        printError(error.description)
        throw ExitCode(error.code)
    } catch let error as ExitCode {
        throw error
    } catch let error as CleanExit {
        throw error
    } catch {
        printError("\(error)")
        throw ExitCode(1)
    }
}

func printError(_ message: String) {
    FileOutput.standardError.write("vigil: \(message)\n")
}
