import ArgumentParser
import Foundation
import VigilEvents
import VigilLog
import VigilNode
import VigilSystem

/// `vigil alert raise|cancel|ack`: alerts raised at this box by its operator — a flooded road, a
/// fire, an evacuation — which the running node puts on the air for other boxes and phones (the
/// SOS has the button), and answers to calls for help heard from other boxes. The node checks
/// each and gives a raised alert its id; without a running node there is no radio to send it,
/// so the command refuses (exit 69) rather than logging what nobody hears.
struct AlertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alert", abstract: "Raise or cancel an alert at this box (it goes on the air).",
        subcommands: [AlertRaise.self, AlertCancel.self, AlertAcknowledge.self, AlertTake.self])
}

/// An alert kind as the command line names it.
struct AlertKindName: ExpressibleByArgument {
    static let kinds: KeyValuePairs<String, AlertKind> = [
        "sos": .sos, "medical": .medical, "fire": .fire, "flood": .flood, "evacuate": .evacuate,
        "road-hazard": .roadHazard, "area-hazard": .areaHazard, "info": .info,
    ]
    let name: String
    let kind: AlertKind

    init?(argument: String) {
        guard let match = Self.kinds.first(where: { $0.key == argument }) else { return nil }
        (name, kind) = (match.key, match.value)
    }

    static var allValueStrings: [String] { kinds.map(\.key) }
}

enum SeverityName: String, ExpressibleByArgument, CaseIterable {
    case info, warning, critical

    var severity: AlertSeverity {
        switch self {
        case .info: .info
        case .warning: .warning
        case .critical: .critical
        }
    }
}

struct AlertRaise: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "raise", abstract: "Raise an alert here: it lasts until it expires or is cancelled (on the air with a shelter key; a call for help goes to the call tree either way).")

    @Argument(help: "sos, medical, fire, flood, evacuate, road-hazard, area-hazard or info.")
    var kind: AlertKindName
    @Option(help: "How long it lasts (at most radio.alerts.max_lifetime).") var expires = "6h"
    @Option(help: "info, warning or critical (default by kind: critical for sos, medical, fire, evacuate).")
    var severity: SeverityName?
    @Option(help: "Where: latitude,longitude in degrees, e.g. 52.5163,13.3777 (sent at about 1 m resolution).")
    var at: String?
    @Option(help: "A note kept in the log (not sent over the air).") var text = ""
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            guard let lifetime = HumanDuration.parseMicroseconds(expires), lifetime >= 60_000_000 else {
                throw CLIError("--expires must be a duration of at least 1m, such as 30m or 6h", code: 64)
            }
            var request = AlertRequest(kind: kind.name, severity: severity?.rawValue, lifetimeMicroseconds: lifetime, text: text)
            if let at {
                let parts = at.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
                guard parts.count == 2, let lat = parts[0], let lon = parts[1], abs(lat) <= 90, abs(lon) <= 180 else {
                    throw CLIError("--at must be latitude,longitude in degrees (latitude within 90, longitude within 180)", code: 64)
                }
                (request.latitude, request.longitude) = (lat, lon)
            }
            let reply = try CommandSender.sendToRunningNode(.raiseAlert(request), dataDirectory: dir)
            let expiry = realtimeMicroseconds() &+ lifetime
            FileOutput.standardOutput.write("raised \(kind.name) alert \(reply.alert ?? "?") (event \(reply.sequence ?? 0)); it lasts until about \(EventFormatting.time(expiry))\n")
        }
    }
}

struct AlertCancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel an alert raised at this box (the cancel goes on the air).")

    @Argument(help: "The alert's id, as `vigil status` prints it (origin:counter).") var id: String
    @Option(help: "Why, kept in the log.") var reason = "cancelled with vigil alert cancel"
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            _ = try parseAlertID(id)
            let reply = try CommandSender.sendToRunningNode(.cancelAlert(AlertCancelRequest(id: id, reason: reason)), dataDirectory: dir)
            FileOutput.standardOutput.write("cancelled alert \(id) (event \(reply.sequence ?? 0))\n")
        }
    }
}

/// "1a2b3c4d:7" (origin in hex, counter), as `vigil status` prints alert ids; bad ids exit 64.
private func parseAlertID(_ text: String) throws -> AlertID {
    guard let id = CommandInterpreter.parseAlertID(text) else {
        throw CLIError("the id must look like 1a2b3c4d:7 (origin in hex, counter)", code: 64)
    }
    return id
}

struct AlertAcknowledge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ack",
        abstract: "Answer a call for help (sos, medical) heard from another box: the acknowledgement goes on the air to it.")

    @Argument(help: "The alert's id, as `vigil status` prints it (origin:counter).") var id: String
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            _ = try parseAlertID(id)
            let reply = try CommandSender.sendToRunningNode(.acknowledgeAlert(AlertReference(id: id)), dataDirectory: dir)
            FileOutput.standardOutput.write("acknowledged alert \(id) (event \(reply.sequence ?? 0)); the acknowledgement goes on the air\n")
        }
    }
}

/// `vigil alert take ID --by NAME`: a person takes a call for help ("I'm on my way"). The call tree
/// stops escalating and everyone told learns who took it (docs/calls-for-help.md). Works with or
/// without a running node, as a check-in does.
struct AlertTake: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "take",
        abstract: "Take a call for help: the call tree stops and everyone told learns who is on the way.")

    @Argument(help: "The call: an alert's id (1a2b3c4d:7), a call's id (resident:room-12/3) or its short code (T4821), as `vigil status` prints them.")
    var call: String
    @Option(help: "Who takes it (a name or a phone number, at most 64 bytes).") var by: String
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            let reply = try CommandSender.send(.takeCall(TakeRequest(call: call, by: by, via: "cli")), dataDirectory: dir)
            FileOutput.standardOutput.write("took call \(call) as \(by) (event \(reply.sequence ?? 0)); everyone told is told\n")
        }
    }
}

/// `vigil calls`: the path calls for help take out of the box.
struct CallsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calls", abstract: "Calls for help: prove the paths to people and the alarm centre.", subcommands: [CallsTest.self, CallsConfirm.self, CallsDismiss.self])
}

/// `vigil calls test`: the self-test now: a test report (Contact ID 602) to the alarm receiving
/// centre and a test message to each of `calls.test_to`; the outcome shows in `vigil status`,
/// `vigil why` (amber "cannot call for help") and `/metrics`.
struct CallsTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test", abstract: "Run the self-test now (the running node): the alarm centre and calls.test_to.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            _ = try CommandSender.sendToRunningNode(.testCalls, dataDirectory: dir)
            FileOutput.standardOutput.write("self-test started; `vigil status` shows its outcome\n")
        }
    }
}

/// `vigil calls confirm CALL --by NAME`: a phone's unverified call for help is real (someone went
/// and saw): it is raised as this box's alert and goes on the air and to the hub.
struct CallsConfirm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "confirm", abstract: "Confirm a phone's call for help: it becomes an alert of the network (on the air, to the hub).")
    @OptionGroup var decision: PhoneCallDecisionOptions

    func run() async throws {
        try await decision.send(confirm: true) { reply in
            "confirmed call \(decision.call): raised as alert \(reply.alert ?? "?") (event \(reply.sequence ?? 0)): the box sends it as its own alert (on the air with a shelter key, to the hub when joined)"
        }
    }
}

/// `vigil calls dismiss CALL --by NAME`: a phone's unverified call is not a call for help.
struct CallsDismiss: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dismiss", abstract: "Dismiss a phone's call for help as not one: it ends, and everyone told is told.")
    @OptionGroup var decision: PhoneCallDecisionOptions

    func run() async throws {
        try await decision.send(confirm: false) { reply in "dismissed call \(decision.call) (event \(reply.sequence ?? 0)); everyone told is told" }
    }
}

/// What `vigil calls confirm` and `dismiss` take: the call and who decides it (a running node only).
struct PhoneCallDecisionOptions: ParsableArguments {
    @Argument(help: "The phone's call: its short code (T4821) or id (phone:...), as `vigil status` prints them.")
    var call: String
    @Option(help: "Who decides it (a name, at most 64 bytes).") var by: String
    @OptionGroup var options: DataOptions

    func send(confirm: Bool, saying: (NodeReply) -> String) async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            let reply = try CommandSender.sendToRunningNode(.decidePhoneCall(PhoneCallDecision(call: call, confirm: confirm, by: by, via: "cli")), dataDirectory: dir)
            FileOutput.standardOutput.write(saying(reply) + "\n")
        }
    }
}
