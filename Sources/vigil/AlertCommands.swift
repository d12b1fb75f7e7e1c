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
        subcommands: [AlertRaise.self, AlertCancel.self, AlertAcknowledge.self])
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

/// Sends an alert event to the running node, which appends it once checked; returns the sequence.
private func sendToRunningNode(_ body: EventBody, dataDirectory dir: String) throws -> UInt64 {
    guard FileSystem.exists(dir + "/control.sock") else {
        throw CLIError("no node is running on \(dir): alerts go on the air, so start it first (`vigil run --data \(dir)`)", code: 69)
    }
    let (kind, payload) = EventCodec.encode(body)
    let reply: String
    do {
        reply = try ControlClient.send(.append(kind: kind, payload: payload), dataDirectory: dir, timeoutMilliseconds: 10_000)
    } catch {
        throw CLIError("the node on \(dir) does not answer: \(error)", code: 69)
    }
    guard let object = try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any] else {
        throw CLIError("the node answered something unreadable: \(reply)")
    }
    guard object["ok"] as? Bool == true, let seq = object["seq"] as? Int, seq > 0 else {
        throw CLIError("the node refused: \(object["error"] as? String ?? reply)", code: 65)
    }
    return UInt64(seq)
}

struct AlertRaise: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "raise", abstract: "Raise an alert here: it goes on the air until it expires or is cancelled.")

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
            var alert = Alert()
            alert.kind = kind.kind
            if let severity { alert.severity = severity.severity }
            alert.expiresAtUs = realtimeMicroseconds() &+ lifetime
            alert.text = text
            if let at {
                let parts = at.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
                guard parts.count == 2, let lat = parts[0], let lon = parts[1], abs(lat) <= 90, abs(lon) <= 180 else {
                    throw CLIError("--at must be latitude,longitude in degrees (latitude within 90, longitude within 180)", code: 64)
                }
                var location = Location()
                location.latitudeE7 = Int32((lat * 1e7).rounded())
                location.longitudeE7 = Int32((lon * 1e7).rounded())
                alert.location = location
            }
            let seq = try sendToRunningNode(.alertRaised(alert), dataDirectory: dir)
            // The node chose the id: read it back from the log.
            let log = try openForReading(dir)
            var id = "?"
            try log.read { txn in
                try txn.forEach(from: seq) { result in
                    if case .event(let e) = Replay.input(result), e.sequence == seq, case .alertRaised(let a) = e.body { id = a.id.text }
                    return false
                }
            }
            FileOutput.standardOutput.write("raised \(kind.name) alert \(id) (event \(seq)); on the air until \(EventFormatting.time(alert.expiresAtUs))\n")
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
            var cancel = AlertCancelled()
            cancel.id = try parseAlertID(id)
            cancel.reason = reason
            let seq = try sendToRunningNode(.alertCancelled(cancel), dataDirectory: dir)
            FileOutput.standardOutput.write("cancelled alert \(id) (event \(seq))\n")
        }
    }
}

/// "1a2b3c4d:7" (origin in hex, counter), as `vigil status` prints alert ids.
private func parseAlertID(_ text: String) throws -> AlertID {
    let parts = text.split(separator: ":")
    guard parts.count == 2, let origin = UInt64(parts[0], radix: 16), let counter = UInt32(parts[1]) else {
        throw CLIError("the id must look like 1a2b3c4d:7 (origin in hex, counter)", code: 64)
    }
    return AlertID(origin: origin, counter: counter)
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
            var ack = AlertAcknowledged()
            ack.id = try parseAlertID(id)
            let seq = try sendToRunningNode(.alertAcknowledged(ack), dataDirectory: dir)
            FileOutput.standardOutput.write("acknowledged alert \(id) (event \(seq)); the acknowledgement goes on the air\n")
        }
    }
}
