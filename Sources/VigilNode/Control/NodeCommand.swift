import Foundation
import VigilCore

/// A request to a running node: the one model the CLI, the control socket and (later) the HTTP
/// API share. Commands are plain values, never event payloads: the node checks each against
/// its state (`CommandInterpreter`) and turns it into events itself.
///
/// On the control socket a command is one JSON object on one line,
/// `{"command":"check-in","arguments":{"resident":"room-12"}}`, answered by one `NodeReply` line.
public enum NodeCommand: Sendable, Equatable {
    case ping
    case status
    /// Press the simulated board's SOS button, or a resident's check-in button.
    case press(ButtonPress)
    /// "I'm OK", or a heart-rate datum judged by its sensor-contact flags.
    case checkIn(CheckInRequest)
    case enrolResident(ResidentSettings)
    /// Changes the settings given; those left nil keep their value.
    case updateResident(ResidentSettings)
    case removeResident(ResidentReference)
    /// Silences the alarms sounding now (what a short press does while an alarm sounds).
    case silenceAlarms(SilenceRequest)
    /// Raises an alert at this box; it goes on the air with this box's id.
    case raiseAlert(AlertRequest)
    case cancelAlert(AlertCancelRequest)
    /// Answers a call for help heard from another box.
    case acknowledgeAlert(AlertReference)
    /// Records an exposure window found by matching published keys (or a withdrawal).
    case recordExposure(ExposureRecord)
    /// Records that the box's own keys were published.
    case recordKeysPublished(KeysPublishedRecord)
    /// `DATA/hub.json` changed (`vigil hub join`, `add`): the hub sync starts again with it.
    case reloadHubLinks
    /// Sends a chat message to a connected device (`vigil chat send`).
    case chatSend(ChatSendRequest)
    /// Opens a device's chat: its unread count goes back to 0 (`vigil chat open`).
    case chatOpen(ChatPeerReference)
    /// Opens the box's one chat link to a device, closing any other (`vigil chat connect`).
    case chatConnect(ChatPeerReference)
    /// Closes the box's chat link (`vigil chat disconnect`).
    case chatDisconnect(ChatPeerReference)
    /// A road user, work zone or jam staff saw (`vigil hazard report`).
    case reportHazard(HazardRequest)
    /// A person takes a call for help ("I'm on my way"): `AlertTaken`.
    case takeCall(TakeRequest)
    /// A webhook recipient takes a call with the token its message carried (the box's
    /// `/api/v1/callbacks/take`); judged by the node, which holds the key (`WebhookCallbackRule`).
    case takeCallByCallback(CallbackTakeRequest)
    /// Sends a test report to the alarm receiving centre now (`vigil calls test`).
    case testCalls
    /// Staff's word on a phone's unverified call for help: confirmed, it becomes an alert of the
    /// network (on the air, to the hub); dismissed, it ends (`PhoneCallDecided`).
    case decidePhoneCall(PhoneCallDecision)
    /// A CAP 1.2 document handed to the box by hand (`vigil warning import`; docs/warnings.md).
    case importWarning(WarningImport)

    /// The command's name on the wire.
    public var name: String {
        switch self {
        case .ping: "ping"
        case .status: "status"
        case .press: "press"
        case .checkIn: "check-in"
        case .enrolResident: "enrol-resident"
        case .updateResident: "update-resident"
        case .removeResident: "remove-resident"
        case .silenceAlarms: "silence-alarms"
        case .raiseAlert: "raise-alert"
        case .cancelAlert: "cancel-alert"
        case .acknowledgeAlert: "acknowledge-alert"
        case .recordExposure: "record-exposure"
        case .recordKeysPublished: "record-keys-published"
        case .reloadHubLinks: "reload-hub-links"
        case .chatSend: "chat-send"
        case .chatOpen: "chat-open"
        case .chatConnect: "chat-connect"
        case .chatDisconnect: "chat-disconnect"
        case .reportHazard: "report-hazard"
        case .takeCall: "take-call"
        case .takeCallByCallback: "take-call-by-callback"
        case .testCalls: "test-calls"
        case .decidePhoneCall: "decide-phone-call"
        case .importWarning: "import-warning"
        }
    }
}

/// A CAP 1.2 document, base64, and where it came from (recorded as the warning's feed).
/// Documents up to `maximumBytes` fit a control request; larger ones come from feeds.
public struct WarningImport: Codable, Sendable, Equatable {
    public var document: String
    public var source: String
    public static let maximumBytes = 40 * 1024

    public init(document: [UInt8], source: String) {
        self.document = Data(document).base64EncodedString()
        self.source = source
    }
}

public struct HazardRequest: Codable, Sendable, Equatable {
    /// vehicle, pedestrian, cyclist, traffic-jam or work-zone.
    public var kind: String
    /// One hazard per kind and id: a report with the same id moves it.
    public var id: String
    public var latitude: Double
    public var longitude: Double
    /// Course over ground, degrees clockwise from north (road users).
    public var headingDegrees: Double?
    /// Metres a second (road users; 0 or nil: not moving).
    public var speedMetersPerSecond: Double?
    /// How long a work zone or jam lasts from now (nil: an hour).
    public var lifetimeMicroseconds: UInt64?

    public init(kind: String, id: String, latitude: Double, longitude: Double, headingDegrees: Double? = nil,
                speedMetersPerSecond: Double? = nil, lifetimeMicroseconds: UInt64? = nil) {
        self.kind = kind
        self.id = id
        self.latitude = latitude
        self.longitude = longitude
        self.headingDegrees = headingDegrees
        self.speedMetersPerSecond = speedMetersPerSecond
        self.lifetimeMicroseconds = lifetimeMicroseconds
    }
}

public struct ChatSendRequest: Codable, Sendable, Equatable {
    /// The device: "AA:BB:CC:DD:EE:FF" (as `vigil chat list` shows it).
    public var peer: String
    public var text: String
    public init(peer: String, text: String) { self.peer = peer; self.text = text }
}

public struct ChatPeerReference: Codable, Sendable, Equatable {
    public var peer: String
    public init(peer: String) { self.peer = peer }
}

public struct ButtonPress: Codable, Sendable, Equatable {
    public var holdMicroseconds: UInt64
    public var bounces: Int
    /// A resident's check-in button instead of the SOS button.
    public var resident: String?
    public init(holdMicroseconds: UInt64, bounces: Int = 0, resident: String? = nil) {
        self.holdMicroseconds = holdMicroseconds
        self.bounces = bounces
        self.resident = resident
    }
}

public struct CheckInRequest: Codable, Sendable, Equatable {
    public var resident: String
    public var heartRate: Double?
    /// The Heart Rate Measurement flags byte that came with the reading.
    public var heartRateFlags: UInt32?
    public init(resident: String, heartRate: Double? = nil, heartRateFlags: UInt32? = nil) {
        self.resident = resident
        self.heartRate = heartRate
        self.heartRateFlags = heartRateFlags
    }
}

/// A resident's settings; in an update, nil keeps the current value.
public struct ResidentSettings: Codable, Sendable, Equatable {
    public struct Contact: Codable, Sendable, Equatable {
        public var name: String
        public var address: String
        public init(name: String, address: String) { self.name = name; self.address = address }
    }
    public struct Night: Codable, Sendable, Equatable {
        public var startMinute: UInt32
        public var endMinute: UInt32
        public init(startMinute: UInt32, endMinute: UInt32) { self.startMinute = startMinute; self.endMinute = endMinute }
    }
    public struct Pause: Codable, Sendable, Equatable {
        public var startMicroseconds: UInt64
        public var endMicroseconds: UInt64
        public init(startMicroseconds: UInt64, endMicroseconds: UInt64) {
            self.startMicroseconds = startMicroseconds
            self.endMicroseconds = endMicroseconds
        }
    }
    /// A recurring pause: days (bit 0 = Monday ... bit 6 = Sunday) and local minutes; an end
    /// before the start runs past midnight.
    public struct Weekly: Codable, Sendable, Equatable {
        public var days: UInt32
        public var startMinute: UInt32
        public var endMinute: UInt32
        public init(days: UInt32, startMinute: UInt32, endMinute: UInt32) {
            self.days = days; self.startMinute = startMinute; self.endMinute = endMinute
        }
    }
    public enum Mode: String, Codable, Sendable, Equatable { case time, pulse, off }

    public var id: String
    public var name: String?
    public var mode: Mode?
    public var intervalMicroseconds: UInt64?
    public var confirmMicroseconds: UInt64?
    public var textToAlarmMicroseconds: UInt64?
    public var alarmToNotifyMicroseconds: UInt64?
    /// Replaces the list.
    public var contacts: [Contact]?
    public var night: Night?
    /// Removes the night window.
    public var clearNight: Bool?
    public var utcOffsetMinutes: Int32?
    /// Replaces the list.
    public var pauses: [Pause]?
    /// The resident's BLE tag address (48 bits).
    public var tag: UInt64?
    /// The resident's own address for texts ("" clears).
    public var ownAddress: String?
    /// Room or bed ("" clears).
    public var room: String?
    /// Replaces the list ([] clears).
    public var weekly: [Weekly]?
    /// IANA zone name for quiet times ("" clears).
    public var timeZone: String?
    /// The resident's heart-rate sensor, "AA:BB:CC:DD:EE:FF" with an optional "/random"
    /// ("" clears): the box links to it and logs its readings as check-ins.
    public var heartRateSensor: String?

    public init(id: String) { self.id = id }
}

public struct ResidentReference: Codable, Sendable, Equatable {
    public var id: String
    public init(id: String) { self.id = id }
}

public struct SilenceRequest: Codable, Sendable, Equatable {
    /// Who silenced ("cli", "button", "web"), for the log.
    public var by: String
    public init(by: String) { self.by = by }
}

public struct AlertRequest: Codable, Sendable, Equatable {
    /// sos, medical, fire, flood, evacuate, road-hazard, area-hazard, info.
    public var kind: String
    /// info, warning or critical; nil takes the kind's default.
    public var severity: String?
    /// How long it lasts from now (at most radio.alerts.max_lifetime).
    public var lifetimeMicroseconds: UInt64
    public var latitude: Double?
    public var longitude: Double?
    /// A note kept in the log (not sent over the air).
    public var text: String
    public init(kind: String, severity: String? = nil, lifetimeMicroseconds: UInt64, latitude: Double? = nil,
                longitude: Double? = nil, text: String = "") {
        self.kind = kind
        self.severity = severity
        self.lifetimeMicroseconds = lifetimeMicroseconds
        self.latitude = latitude
        self.longitude = longitude
        self.text = text
    }
}

public struct AlertCancelRequest: Codable, Sendable, Equatable {
    /// The alert's id as `ORIGIN-COUNTER` in hex (`vigil status` shows it).
    public var id: String
    public var reason: String
    public init(id: String, reason: String = "") { self.id = id; self.reason = reason }
}

/// A call for help to take: an alert's id (1a2b3c4d:7), a call's id (resident:room-12/3) or the
/// short code its messages gave (T4821); who takes it and how.
public struct TakeRequest: Codable, Sendable, Equatable {
    public var call: String
    public var by: String
    /// "cli", "page", "api", "sms", "webhook".
    public var via: String
    public init(call: String, by: String, via: String) {
        self.call = call
        self.by = by
        self.via = via
    }
}

/// Staff confirm or dismiss a phone's call, found by its id or short code.
public struct PhoneCallDecision: Codable, Sendable, Equatable {
    public var call: String
    public var confirm: Bool
    public var by: String
    /// "cli", "page" or "api".
    public var via: String
    public init(call: String, confirm: Bool, by: String, via: String) {
        self.call = call
        self.confirm = confirm
        self.by = by
        self.via = via
    }
}

/// A webhook's callback: the call and recipient its message's take link named, the token that
/// came with it, and who takes the call (optional: the webhook's host otherwise).
public struct CallbackTakeRequest: Codable, Sendable, Equatable {
    public var call: String
    public var recipient: String
    public var token: String
    public var by: String?
    public init(call: String, recipient: String, token: String, by: String? = nil) {
        self.call = call
        self.recipient = recipient
        self.token = token
        self.by = by
    }
}

public struct AlertReference: Codable, Sendable, Equatable {
    public var id: String
    public init(id: String) { self.id = id }
}

/// An exposure window found by matching (or, with `withdrawn`, the withdrawal of a key's windows).
public struct ExposureRecord: Codable, Sendable, Equatable {
    public var identifierHex: String
    public var diagnosisKeyHex: String
    public var rollingStart: UInt32
    public var rollingPeriod: UInt32
    public var transmissionRiskLevel: UInt32
    public var reportType: UInt32
    public var firstSeenMicroseconds: UInt64
    public var lastSeenMicroseconds: UInt64
    public var secondsByBucket: [UInt32]
    public var txPower: Int32
    public var minAttenuation: Int32
    public var weightedMinutesMilli: UInt32
    public var highRisk: Bool
    public var source: String
    public var scanInstances: UInt32
    public var withdrawn: Bool
}

public struct KeysPublishedRecord: Codable, Sendable, Equatable {
    public var keys: UInt32
    public var firstInterval: UInt32
    public var lastInterval: UInt32
    public var path: String
    public init(keys: UInt32, firstInterval: UInt32, lastInterval: UInt32, path: String) {
        self.keys = keys
        self.firstInterval = firstInterval
        self.lastInterval = lastInterval
        self.path = path
    }
}

/// The node's answer to one command.
public struct NodeReply: Codable, Sendable {
    /// Why a command was refused; the CLI maps these to exit codes.
    public enum Refusal: String, Codable, Sendable {
        /// The command is malformed or its values are out of range (exit 65).
        case invalid
        /// What it names does not exist (or already exists, for an enrolment) (exit 65).
        case conflict
        /// The node cannot do it now: no shelter key, not a simulated board, stopping (exit 69).
        case unavailable
        /// The log refused the event (full, or failing) (exit 1).
        case logRefused = "log-refused"
    }

    public var ok: Bool
    /// The event the command became, once durable.
    public var sequence: UInt64?
    /// The id the node gave a raised alert.
    public var alert: String?
    public var status: LiveStatus?
    public var refusal: Refusal?
    public var error: String?
    /// The node runs from memory (its log stopped taking writes): the command took effect, but
    /// nothing was stored (nil: stored as usual).
    public var unlogged: Bool?

    public static let done = NodeReply(ok: true)
    public static func durable(_ sequence: UInt64, alert: String? = nil) -> NodeReply {
        NodeReply(ok: true, sequence: sequence, alert: alert)
    }
    public static func refused(_ refusal: Refusal, _ message: String) -> NodeReply {
        NodeReply(ok: false, refusal: refusal, error: message)
    }
}

extension NodeCommand: Codable {
    private enum Key: String, CodingKey { case command, arguments }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let name = try c.decode(String.self, forKey: .command)
        func arguments<T: Decodable>(_ type: T.Type) throws -> T { try c.decode(T.self, forKey: .arguments) }
        switch name {
        case "ping": self = .ping
        case "status": self = .status
        case "press": self = .press(try arguments(ButtonPress.self))
        case "check-in": self = .checkIn(try arguments(CheckInRequest.self))
        case "enrol-resident": self = .enrolResident(try arguments(ResidentSettings.self))
        case "update-resident": self = .updateResident(try arguments(ResidentSettings.self))
        case "remove-resident": self = .removeResident(try arguments(ResidentReference.self))
        case "silence-alarms": self = .silenceAlarms(try arguments(SilenceRequest.self))
        case "raise-alert": self = .raiseAlert(try arguments(AlertRequest.self))
        case "cancel-alert": self = .cancelAlert(try arguments(AlertCancelRequest.self))
        case "acknowledge-alert": self = .acknowledgeAlert(try arguments(AlertReference.self))
        case "record-exposure": self = .recordExposure(try arguments(ExposureRecord.self))
        case "record-keys-published": self = .recordKeysPublished(try arguments(KeysPublishedRecord.self))
        case "reload-hub-links": self = .reloadHubLinks
        case "chat-send": self = .chatSend(try arguments(ChatSendRequest.self))
        case "chat-open": self = .chatOpen(try arguments(ChatPeerReference.self))
        case "chat-connect": self = .chatConnect(try arguments(ChatPeerReference.self))
        case "chat-disconnect": self = .chatDisconnect(try arguments(ChatPeerReference.self))
        case "report-hazard": self = .reportHazard(try arguments(HazardRequest.self))
        case "take-call": self = .takeCall(try arguments(TakeRequest.self))
        case "take-call-by-callback": self = .takeCallByCallback(try arguments(CallbackTakeRequest.self))
        case "test-calls": self = .testCalls
        case "decide-phone-call": self = .decidePhoneCall(try arguments(PhoneCallDecision.self))
        case "import-warning": self = .importWarning(try arguments(WarningImport.self))
        default:
            throw DecodingError.dataCorruptedError(forKey: .command, in: c, debugDescription: "unknown command \(name)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(name, forKey: .command)
        switch self {
        case .ping, .status, .reloadHubLinks, .testCalls: break
        case .press(let a): try c.encode(a, forKey: .arguments)
        case .checkIn(let a): try c.encode(a, forKey: .arguments)
        case .enrolResident(let a), .updateResident(let a): try c.encode(a, forKey: .arguments)
        case .removeResident(let a): try c.encode(a, forKey: .arguments)
        case .silenceAlarms(let a): try c.encode(a, forKey: .arguments)
        case .raiseAlert(let a): try c.encode(a, forKey: .arguments)
        case .cancelAlert(let a): try c.encode(a, forKey: .arguments)
        case .acknowledgeAlert(let a): try c.encode(a, forKey: .arguments)
        case .recordExposure(let a): try c.encode(a, forKey: .arguments)
        case .recordKeysPublished(let a): try c.encode(a, forKey: .arguments)
        case .chatSend(let a): try c.encode(a, forKey: .arguments)
        case .chatOpen(let a): try c.encode(a, forKey: .arguments)
        case .chatConnect(let a), .chatDisconnect(let a): try c.encode(a, forKey: .arguments)
        case .reportHazard(let a): try c.encode(a, forKey: .arguments)
        case .takeCall(let a): try c.encode(a, forKey: .arguments)
        case .takeCallByCallback(let a): try c.encode(a, forKey: .arguments)
        case .decidePhoneCall(let a): try c.encode(a, forKey: .arguments)
        case .importWarning(let a): try c.encode(a, forKey: .arguments)
        }
    }
}
