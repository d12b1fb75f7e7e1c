import ArgumentParser
import Foundation
import CoreMetrics
import Logging
import Prometheus
import ServiceLifecycle
import VigilBoard
import VigilNode
import VigilRadio
import VigilSystem
import VigilWeb

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a node (the simulated board and radio unless the configuration names real ones).")

    @OptionGroup var options: DataOptions

    @Option(help: "Stop after this long (e.g. 10s, 5m); default: run until SIGINT/SIGTERM.")
    var duration: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String?

    @Option(help: "Board profile name or file (overrides the configuration), e.g. sim, rpi4, board/vm.yaml.")
    var board: String?

    @Option(help: "Radio: sim, a BlueZ adapter (hci0) or its address (overrides the configuration).")
    var radio: String?

    @Option(help: "HCI channel for a BlueZ adapter: raw (shares it with bluetoothd) or user (exclusive).")
    var channel: String?

    @Option(help: "Write every HCI packet to this btsnoop file (rotated; Wireshark and tshark open it).")
    var capture: String?

    @Option(help: "Run the node's clock this many times faster than real time (demonstrations: 60 shows a 30-minute ladder in 30 s).")
    var timeScale: Double?

    @Option(help: ArgumentHelp("Serve the box's page and API on HOST:PORT (overrides http.listen), e.g. 0.0.0.0:8443.", valueName: "host:port"))
    var http: String?

    @Flag(help: "Serve the page over plain HTTP instead of HTTPS (passwords and cookies cross the network readable).")
    var httpPlain = false

    func run() async throws {
        try await reportingErrors {
            var configuration = try options.load().configuration
            if let http {
                guard HTTPSettings.parseListen(http) != nil else { throw CLIError("--http must be HOST:PORT, such as 0.0.0.0:8443", code: 64) }
                configuration.http.listen = http
            }
            if httpPlain { configuration.http.tls = false }
            if let board {
                do {
                    configuration.board = try NodeConfiguration.loadBoard(named: board)
                    configuration.boardName = board
                } catch {
                    throw CLIError("\(error)", code: 78)
                }
            }
            guard configuration.boardChosen else {
                throw CLIError("no board profile is chosen (board: is empty in \(configuration.source)): "
                               + "run `sudo vigil setup`, or give --board rpi4|rpi5|zero2w|sim or a profile's path", code: 78)
            }
            if let radio {
                guard radio == "sim" || isAdapterSelector(radio) else {
                    throw CLIError("--radio must be sim, an adapter name (hci0) or an address (AA:BB:CC:DD:EE:FF)", code: 64)
                }
                configuration.radio = radio
            }
            if let channel {
                guard let c = HCIChannel(rawValue: channel) else { throw CLIError("--channel must be raw or user", code: 64) }
                configuration.hci.channel = c
            }
            // A real board with the simulated radio is a box set up by hand from the example
            // file: it would hear nobody and log people who are not there.
            if configuration.board.chip != BoardProfile.simulated.chip, configuration.radio == "sim", radio == nil {
                throw CLIError("the board is \(configuration.boardName), a real one, and radio.adapter is sim: a simulated radio "
                               + "on a real box hears nobody and logs people who are not there; set radio.adapter to the "
                               + "Bluetooth adapter (hci0; `sudo vigil setup` asks), or give --radio sim to try the board alone", code: 78)
            }
            if let capture { configuration.hci.snoopPath = capture }
            if let timeScale {
                guard timeScale >= 1, timeScale <= 10_000 else { throw CLIError("--time-scale must be between 1 and 10000", code: 64) }
            }
            let durationMicroseconds = try duration.map { text -> UInt64 in
                guard let us = HumanDuration.parseMicroseconds(text), us > 0 else {
                    throw CLIError("--duration must be a duration such as 10s or 5m, not \(text)", code: 64)
                }
                return us
            }
            let level = Logger.Level(rawValue: logLevel ?? configuration.logLevel) ?? .info
            // Under systemd, the journal gets each message's metadata as fields of its own.
            let journal = JournalLogHandler.standardErrorIsJournal()
            LoggingSystem.bootstrap { label in
                if journal {
                    var handler = JournalLogHandler(label: label)
                    handler.logLevel = level
                    return handler
                }
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            let logger = Logger(label: "vigil")
            // The node's metrics, served by its page at /metrics.
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            // The log is checked and salvaged by this program in processes of their own, so a
            // damaged page can crash only them.
            configuration.logCheckExecutable = configuration.logCheckExecutable ?? "/proc/self/exe"
            // systemd's notification socket and watchdog are this process's alone: read, then
            // taken out of the environment the node's child processes inherit.
            configuration.serviceManager = ServiceManagerSettings.from(environment: ProcessInfo.processInfo.environment, pid: getpid())
            for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(name) }
            let node: Node
            do {
                let clock: any WallClock = try timeScale.map {
                    ScaledClock(rate: $0, originMicroseconds: try simulationOrigin(configuration.dataDirectory))
                } ?? SystemClock()
                node = try Node(configuration: configuration, clock: clock, logger: logger)
            } catch {
                throw CLIError("\(error)")
            }
            // The page holds the handle; the service takes the node to its loop.
            let handle = node.handle
            let service = NodeService(node: node, duration: durationMicroseconds, logger: logger)
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
                .init(service: service, successTerminationBehavior: .gracefullyShutdownGroup),
            ]
            // The page after the node: a graceful shutdown stops it (and its live streams) first.
            // A page that cannot be served (its port taken) is logged and the node runs on.
            if configuration.http.listen != nil {
                services.append(.init(service: WebServer(node: handle, settings: configuration.http, dataDirectory: configuration.dataDirectory,
                                                         logger: logger, metrics: registry),
                                      successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore))
            }
            let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            do {
                try await group.run()
            } catch let error as NodeError {
                throw CLIError("\(error)")
            }
        }
    }
}

/// The origin of sped-up time for this data directory, kept so that simulated time goes on
/// where it left off (see ScaledClock).
func simulationOrigin(_ dir: String) throws -> UInt64 {
    let path = dir + "/sim-clock-origin"
    if let text = try? String(contentsOfFile: path, encoding: .utf8),
       let origin = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
        return origin
    }
    let origin = realtimeMicroseconds()
    do {
        try FileSystem.createDirectory(dir)
        try "\(origin)\n".write(toFile: path, atomically: true, encoding: .utf8)
    } catch {
        throw CLIError("cannot keep the simulated clock's origin in \(path): \(error)")
    }
    return origin
}
