import ArgumentParser
import Foundation
import VigilCore
import VigilEvents
import VigilNode

/// `vigil hazard report|list`: road users, work zones and jams near the shelter (docs/hazards.md
/// "Active hazards"). Staff report what they see; the box's feeds report the rest. A report that makes a
/// hazard relevant to the site (`site.location`) sounds the hazard warning.
struct HazardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hazard", abstract: "Report a road user, work zone or jam; list the active hazards.",
        subcommands: [HazardReport.self, HazardList.self])
}

struct HazardReport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Report a road user (it leaves 10 s after its last report), a work zone or a jam.")

    @Argument(help: "vehicle, pedestrian, cyclist, traffic-jam or work-zone.") var kind: String
    @Option(help: "Its id: a report with the same kind and id moves it (default: the kind).") var id: String?
    @Option(help: "Where: latitude,longitude in degrees.") var at: String
    @Option(help: "Course over ground, degrees clockwise from north (road users).") var heading: Double?
    @Option(help: "Speed in metres a second (road users).") var speed: Double?
    @Option(help: "How long a work zone or jam lasts, e.g. 2h (default 1h).") var lasts: String?
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            let parts = at.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, let lat = parts[0], let lon = parts[1] else {
                throw CLIError("--at must be latitude,longitude in degrees", code: 64)
            }
            var lifetime: UInt64?
            if let lasts {
                guard let us = HumanDuration.parseMicroseconds(lasts) else { throw CLIError("--lasts must be a duration such as 30m or 2h", code: 64) }
                lifetime = us
            }
            let request = HazardRequest(kind: kind, id: id ?? kind, latitude: lat, longitude: lon, headingDegrees: heading,
                                        speedMetersPerSecond: speed, lifetimeMicroseconds: lifetime)
            let reply = try CommandSender.send(.reportHazard(request), dataDirectory: dir)
            FileOutput.standardOutput.write("reported \(kind) \(request.id) (event \(reply.sequence ?? 0))\n")
        }
    }
}

struct HazardList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The active hazards, and the warning if one sounds.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            // The configured site, as the node judges hazards with it.
            let state = try Replay.currentState(try openForReading(configuration.dataDirectory), settings: configuration.projections)
            FileOutput.standardOutput.write(hazardText(state.hazards, alerts: state.alerts))
        }
    }
}

/// The hazard book and the alert book's road and area hazards, as `vigil status` and `vigil
/// hazard list` show them.
func hazardText(_ h: HazardBook, alerts: AlertBook) -> String {
    let roadAlerts = alerts.active.filter { $0.kind == AlertKind.roadHazard.rawValue || $0.kind == AlertKind.areaHazard.rawValue }
    var out = "hazards: \(h.hazards.count) active, \(roadAlerts.count) road or area hazard alerts; \(h.warningsStarted) warnings, \(h.warningsHeldBack) held back (one per 35 s)"
    if h.dropped > 0 { out += ", \(h.dropped) dropped (over \(HazardBook.limit))" }
    if h.site == nil { out += "; no site.location: nothing is judged relevant" }
    out += "\n"
    if let w = h.warning {
        out += "  WARNING until \(EventFormatting.time(w.endsMicroseconds)): \(HazardKind(rawValue: w.kind)?.displayName ?? "hazard") \(Int(w.distanceFeet.rounded())) ft from the site\n"
    }
    for hazard in h.active.prefix(20) {
        let course = hazard.headingCentidegrees.map { String(format: ", heading %.0f°", Double($0) / 100) } ?? ""
        let speed = hazard.speedCentimetersPerSecond.map { String(format: ", %.1f m/s", Double($0) / 100) } ?? ""
        out += "  \(hazard.hazardKind.displayName) \(ChatText.printable(hazard.id, limit: 64)) at "
            + String(format: "%.6f,%.6f", Double(hazard.latitudeE7) / 1e7, Double(hazard.longitudeE7) / 1e7)
            + "\(course)\(speed), from \((HazardSource(rawValue: hazard.source) ?? .unspecified).displayName) (\(ChatText.printable(hazard.messageType, limit: 16))), "
            + "\(hazard.messages) messages since \(EventFormatting.time(hazard.firstMicroseconds)), until \(EventFormatting.time(hazard.expiresMicroseconds))\n"
    }
    if h.hazards.count > 20 { out += "  ... \(h.hazards.count - 20) more\n" }
    for a in roadAlerts {
        out += "  alert \(a.idText): \(a.kind == AlertKind.roadHazard.rawValue ? "road hazard" : "area hazard")"
            + (a.latitudeE7.map { lat in a.longitudeE7.map { String(format: " at %.6f,%.6f", Double(lat) / 1e7, Double($0) / 1e7) } ?? "" } ?? "")
            + (a.raisedHere ? " (raised here)" : " (\(a.hops) hops)") + "\n"
    }
    return out
}
