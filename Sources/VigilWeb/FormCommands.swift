import Foundation
import VigilNode

/// Staff's forms on the page, as the `NodeCommand`s the CLI and the control socket send: the
/// node judges them alike, whoever sends them.
enum FormCommands {
    struct Refusal: Error {
        var message: String
    }

    static func command(_ action: String, _ form: [String: String]) -> Result<NodeCommand, Refusal> {
        func field(_ name: String) -> String? {
            guard let v = form[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty else { return nil }
            return v
        }
        switch action {
        case "check-in":
            guard let resident = field("resident") else { return .failure(.init(message: "Which resident?")) }
            return .success(.checkIn(CheckInRequest(resident: resident)))
        case "silence":
            return .success(.silenceAlarms(SilenceRequest(by: "web")))
        case "acknowledge":
            guard let id = field("alert") else { return .failure(.init(message: "Which alert?")) }
            return .success(.acknowledgeAlert(AlertReference(id: id)))
        case "take":
            guard let call = field("call") else { return .failure(.init(message: "Which call?")) }
            guard let by = field("by") else { return .failure(.init(message: "Who takes it? Give your name, so the others know who is on the way.")) }
            return .success(.takeCall(TakeRequest(call: call, by: by, via: "page")))
        case "confirm", "dismiss":
            guard let call = field("call") else { return .failure(.init(message: "Which call?")) }
            guard let by = field("by") else { return .failure(.init(message: "Who decides? Give your name, so the others know who saw it.")) }
            return .success(.decidePhoneCall(PhoneCallDecision(call: call, confirm: action == "confirm", by: by, via: "page")))
        case "cancel":
            guard let id = field("alert") else { return .failure(.init(message: "Which alert?")) }
            return .success(.cancelAlert(AlertCancelRequest(id: id, reason: field("reason") ?? "cancelled on the box's page")))
        case "raise":
            guard let kind = field("kind") else { return .failure(.init(message: "Which kind of alert?")) }
            guard let hours = field("hours").flatMap(UInt64.init), (1...24).contains(hours) else {
                return .failure(.init(message: "An alert lasts 1 to 24 hours."))
            }
            let text = field("text") ?? ""
            guard text.utf8.count <= 200 else { return .failure(.init(message: "The note is longer than 200 bytes.")) }
            return .success(.raiseAlert(AlertRequest(kind: kind, lifetimeMicroseconds: hours * 3_600_000_000, text: text)))
        case "enrol", "edit":
            guard let id = field("id") else { return .failure(.init(message: "A resident needs an id.")) }
            var settings = ResidentSettings(id: id)
            if let name = form["name"] { settings.name = name.trimmingCharacters(in: .whitespacesAndNewlines) }
            if let room = form["room"] { settings.room = room.trimmingCharacters(in: .whitespacesAndNewlines) }
            if let mode = field("mode") {
                guard let m = ResidentSettings.Mode(rawValue: mode) else { return .failure(.init(message: "Check-ins are time, pulse or off.")) }
                settings.mode = m
            }
            if let interval = field("interval") {
                guard let us = HumanDuration.parseMicroseconds(interval), us >= 60_000_000 else {
                    return .failure(.init(message: "A check-in interval is a duration such as 8h."))
                }
                settings.intervalMicroseconds = us
            }
            return .success(action == "enrol" ? .enrolResident(settings) : .updateResident(settings))
        case "chat-send":
            guard let device = field("device") else { return .failure(.init(message: "Which device?")) }
            guard let text = field("text") else { return .failure(.init(message: "Write a message first.")) }
            guard text.utf8.count <= 1_024 else { return .failure(.init(message: "A message is at most 1024 bytes.")) }
            return .success(.chatSend(ChatSendRequest(peer: device, text: text)))
        case "chat-open":
            guard let device = field("device") else { return .failure(.init(message: "Which device?")) }
            return .success(.chatOpen(ChatPeerReference(peer: device)))
        case "remove":
            guard let id = field("id") else { return .failure(.init(message: "Which resident?")) }
            return .success(.removeResident(ResidentReference(id: id)))
        default:
            return .failure(.init(message: "The page has no action \(action.prefix(40))."))
        }
    }
}
