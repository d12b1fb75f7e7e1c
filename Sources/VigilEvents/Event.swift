import SwiftProtobuf

// The payload types are the generated protobuf messages, named here for what they are.
// The protobuf types are value types (no heap storage), so using them directly as the domain
// model costs no conversion on the replay path.
public typealias ScanHit = Vigil_Events_V1_ScanHit
public typealias AdvertisementSummary = Vigil_Events_V1_AdvertisementSummary
public typealias Alert = Vigil_Events_V1_Alert
public typealias AlertID = Vigil_Events_V1_AlertId
public typealias AlertKind = Vigil_Events_V1_AlertKind
public typealias AlertSeverity = Vigil_Events_V1_Severity
public typealias AlertCancelled = Vigil_Events_V1_AlertCancelled
public typealias Location = Vigil_Events_V1_Location
public typealias CheckIn = Vigil_Events_V1_CheckIn
public typealias CheckInSource = Vigil_Events_V1_CheckInSource
public typealias ButtonInput = Vigil_Events_V1_ButtonInput
public typealias Edge = Vigil_Events_V1_Edge
public typealias NodeStarted = Vigil_Events_V1_NodeStarted
public typealias NodeStopped = Vigil_Events_V1_NodeStopped
public typealias RadioState = Vigil_Events_V1_RadioState
public typealias RadioStateChanged = Vigil_Events_V1_RadioStateChanged
public typealias AddressType = Vigil_Events_V1_AddressType
public typealias EventKind = Vigil_Events_V1_EventKind
public typealias Resident = Vigil_Events_V1_Resident
public typealias ResidentRemoved = Vigil_Events_V1_ResidentRemoved
public typealias Contact = Vigil_Events_V1_Contact
public typealias Pause = Vigil_Events_V1_Pause
public typealias DailyWindow = Vigil_Events_V1_DailyWindow
public typealias CheckInMode = Vigil_Events_V1_CheckInMode
public typealias LadderStep = Vigil_Events_V1_LadderStep
public typealias DeadlineReached = Vigil_Events_V1_DeadlineReached
public typealias AlarmAcknowledged = Vigil_Events_V1_AlarmAcknowledged
public typealias OutboxAttempt = Vigil_Events_V1_OutboxAttempt
public typealias ExposureDetected = Vigil_Events_V1_ExposureDetected
public typealias ContactRetention = Vigil_Events_V1_ContactRetention
public typealias ExposureKeysPublished = Vigil_Events_V1_ExposureKeysPublished
public typealias AlertAcknowledged = Vigil_Events_V1_AlertAcknowledged
public typealias WeeklySlot = Vigil_Events_V1_WeeklySlot
public typealias AlertExpired = Vigil_Events_V1_AlertExpired
public typealias AlertReaffirmed = Vigil_Events_V1_AlertReaffirmed
public typealias DowntimeDetected = Vigil_Events_V1_DowntimeDetected
public typealias HubAcknowledged = Vigil_Events_V1_HubAcknowledged
public typealias HubEpochStarted = Vigil_Events_V1_HubEpochStarted
public typealias HubReceived = Vigil_Events_V1_HubReceived
public typealias OccupancySampled = Vigil_Events_V1_OccupancySampled
public typealias ExposureKeysOffered = Vigil_Events_V1_ExposureKeysOffered
public typealias ExposureKeysMatched = Vigil_Events_V1_ExposureKeysMatched
public typealias HubFeedRewound = Vigil_Events_V1_HubFeedRewound
public typealias LogSalvaged = Vigil_Events_V1_LogSalvaged
public typealias ScanSightings = Vigil_Events_V1_ScanSightings
public typealias SightingTrack = Vigil_Events_V1_SightingTrack
public typealias MinuteSighting = Vigil_Events_V1_MinuteSighting
public typealias ScanBatch = Vigil_Events_V1_ScanBatch
public typealias DeviceStay = Vigil_Events_V1_DeviceStay
public typealias DeviceStays = Vigil_Events_V1_DeviceStays
public typealias LinkChanged = Vigil_Events_V1_LinkChanged
public typealias ChatMessage = Vigil_Events_V1_ChatMessage
public typealias ChatOpened = Vigil_Events_V1_ChatOpened
public typealias HazardReported = Vigil_Events_V1_HazardReported
public typealias HazardDeadline = Vigil_Events_V1_HazardDeadline
public typealias BoxKeyRevoked = Vigil_Events_V1_BoxKeyRevoked
public typealias HazardKind = Vigil_Events_V1_HazardKind
public typealias HazardSource = Vigil_Events_V1_HazardSource
public typealias LinkRole = Vigil_Events_V1_LinkRole
public typealias ChatChannel = Vigil_Events_V1_ChatChannel
public typealias AlertTaken = Vigil_Events_V1_AlertTaken
public typealias TakenVia = Vigil_Events_V1_TakenVia
public typealias CallDeadline = Vigil_Events_V1_CallDeadline
public typealias SMSReceived = Vigil_Events_V1_SmsReceived
public typealias PhoneCallDecided = Vigil_Events_V1_PhoneCallDecided
public typealias SMSReading = Vigil_Events_V1_SmsReading
public typealias WarningReceived = Vigil_Events_V1_WarningReceived
public typealias WarningDeadline = Vigil_Events_V1_WarningDeadline
public typealias WarningHeard = Vigil_Events_V1_WarningHeard

/// What happened. One case per event kind in the catalogue (docs/events.md "Event catalogue").
public enum EventBody: Sendable, Equatable {
    case scanHit(ScanHit)
    case alertReceived(Alert)
    case alertRaised(Alert)
    case alertCancelled(AlertCancelled)
    case checkIn(CheckIn)
    case buttonInput(ButtonInput)
    case nodeStarted(NodeStarted)
    case nodeStopped(NodeStopped)
    case radioStateChanged(RadioStateChanged)
    case residentEnrolled(Resident)
    case residentUpdated(Resident)
    case residentRemoved(ResidentRemoved)
    case deadlineReached(DeadlineReached)
    case alarmAcknowledged(AlarmAcknowledged)
    case outboxAttempt(OutboxAttempt)
    case exposureDetected(ExposureDetected)
    case contactRetention(ContactRetention)
    case exposureKeysPublished(ExposureKeysPublished)
    case alertAcknowledged(AlertAcknowledged)
    case alertExpired(AlertExpired)
    case alertReaffirmed(AlertReaffirmed)
    case downtimeDetected(DowntimeDetected)
    case hubAcknowledged(HubAcknowledged)
    case hubEpochStarted(HubEpochStarted)
    case hubReceived(HubReceived)
    case occupancySampled(OccupancySampled)
    case exposureKeysOffered(ExposureKeysOffered)
    case exposureKeysMatched(ExposureKeysMatched)
    case hubFeedRewound(HubFeedRewound)
    case logSalvaged(LogSalvaged)
    case scanSightings(ScanSightings)
    case scanBatch(ScanBatch)
    case linkChanged(LinkChanged)
    case chatMessage(ChatMessage)
    case chatOpened(ChatOpened)
    case hazardReported(HazardReported)
    case hazardDeadline(HazardDeadline)
    case alertTaken(AlertTaken)
    case callDeadline(CallDeadline)
    case smsReceived(SMSReceived)
    case phoneCallDecided(PhoneCallDecided)
    case boxKeyRevoked(BoxKeyRevoked)
    case warningReceived(WarningReceived)
    case warningDeadline(WarningDeadline)
    case warningHeard(WarningHeard)

    public var kind: EventKind {
        switch self {
        case .scanHit: .scanHit
        case .alertReceived: .alertReceived
        case .alertRaised: .alertRaised
        case .alertCancelled: .alertCancelled
        case .checkIn: .checkIn
        case .buttonInput: .buttonInput
        case .nodeStarted: .nodeStarted
        case .nodeStopped: .nodeStopped
        case .radioStateChanged: .radioStateChanged
        case .residentEnrolled: .residentEnrolled
        case .residentUpdated: .residentUpdated
        case .residentRemoved: .residentRemoved
        case .deadlineReached: .deadlineReached
        case .alarmAcknowledged: .alarmAcknowledged
        case .outboxAttempt: .outboxAttempt
        case .exposureDetected: .exposureDetected
        case .contactRetention: .contactRetention
        case .exposureKeysPublished: .exposureKeysPublished
        case .alertAcknowledged: .alertAcknowledged
        case .alertExpired: .alertExpired
        case .alertReaffirmed: .alertReaffirmed
        case .downtimeDetected: .downtimeDetected
        case .hubAcknowledged: .hubAcknowledged
        case .hubEpochStarted: .hubEpochStarted
        case .hubReceived: .hubReceived
        case .occupancySampled: .occupancySampled
        case .exposureKeysOffered: .exposureKeysOffered
        case .exposureKeysMatched: .exposureKeysMatched
        case .hubFeedRewound: .hubFeedRewound
        case .logSalvaged: .logSalvaged
        case .scanSightings: .scanSightings
        case .scanBatch: .scanBatch
        case .linkChanged: .linkChanged
        case .chatMessage: .chatMessage
        case .chatOpened: .chatOpened
        case .hazardReported: .hazardReported
        case .hazardDeadline: .hazardDeadline
        case .alertTaken: .alertTaken
        case .callDeadline: .callDeadline
        case .smsReceived: .smsReceived
        case .phoneCallDecided: .phoneCallDecided
        case .boxKeyRevoked: .boxKeyRevoked
        case .warningReceived: .warningReceived
        case .warningDeadline: .warningDeadline
        case .warningHeard: .warningHeard
        }
    }

    /// Scan data may be shed under overload; nothing else ever is.
    public var isSheddable: Bool {
        switch self {
        case .scanHit, .scanBatch: true
        default: false
        }
    }
}

/// An event as stored: its place in the log, when it happened, and what happened.
public struct Event: Sendable, Equatable {
    public var sequence: UInt64
    public var timeMicroseconds: UInt64
    public var body: EventBody

    public init(sequence: UInt64, timeMicroseconds: UInt64, body: EventBody) {
        self.sequence = sequence
        self.timeMicroseconds = timeMicroseconds
        self.body = body
    }
}

extension EventKind {
    /// Stable lower-case names used by the CLI (`--kind scan-hit`) and JSON output.
    public var name: String {
        switch self {
        case .unspecified: "unspecified"
        case .scanHit: "scan-hit"
        case .alertReceived: "alert-received"
        case .alertRaised: "alert-raised"
        case .alertCancelled: "alert-cancelled"
        case .checkIn: "check-in"
        case .buttonInput: "button-input"
        case .nodeStarted: "node-started"
        case .nodeStopped: "node-stopped"
        case .radioStateChanged: "radio-state-changed"
        case .residentEnrolled: "resident-enrolled"
        case .residentUpdated: "resident-updated"
        case .residentRemoved: "resident-removed"
        case .deadlineReached: "deadline-reached"
        case .alarmAcknowledged: "alarm-acknowledged"
        case .outboxAttempt: "outbox-attempt"
        case .exposureDetected: "exposure-detected"
        case .contactRetention: "contact-retention"
        case .exposureKeysPublished: "exposure-keys-published"
        case .alertAcknowledged: "alert-acknowledged"
        case .alertExpired: "alert-expired"
        case .alertReaffirmed: "alert-reaffirmed"
        case .downtimeDetected: "downtime-detected"
        case .hubAcknowledged: "hub-acknowledged"
        case .hubEpochStarted: "hub-epoch-started"
        case .hubReceived: "hub-received"
        case .occupancySampled: "occupancy-sampled"
        case .exposureKeysOffered: "exposure-keys-offered"
        case .exposureKeysMatched: "exposure-keys-matched"
        case .hubFeedRewound: "hub-feed-rewound"
        case .logSalvaged: "log-salvaged"
        case .scanSightings: "scan-sightings"
        case .scanBatch: "scan-batch"
        case .linkChanged: "link-changed"
        case .chatMessage: "chat-message"
        case .chatOpened: "chat-opened"
        case .hazardReported: "hazard-reported"
        case .hazardDeadline: "hazard-deadline"
        case .alertTaken: "alert-taken"
        case .callDeadline: "call-deadline"
        case .smsReceived: "sms-received"
        case .phoneCallDecided: "phone-call-decided"
        case .boxKeyRevoked: "box-key-revoked"
        case .warningReceived: "warning-received"
        case .warningDeadline: "warning-deadline"
        case .warningHeard: "warning-heard"
        case .UNRECOGNIZED(let n): "kind-\(n)"
        }
    }

    public static let known: [EventKind] = [
        .scanHit, .alertReceived, .alertRaised, .alertCancelled, .checkIn,
        .buttonInput, .nodeStarted, .nodeStopped, .radioStateChanged,
        .residentEnrolled, .residentUpdated, .residentRemoved, .deadlineReached, .alarmAcknowledged, .outboxAttempt,
        .exposureDetected, .contactRetention, .exposureKeysPublished, .alertAcknowledged,
        .alertExpired, .alertReaffirmed, .downtimeDetected, .hubAcknowledged, .hubEpochStarted, .hubReceived,
        .occupancySampled, .exposureKeysOffered, .exposureKeysMatched, .hubFeedRewound, .logSalvaged,
        .scanSightings, .scanBatch, .linkChanged, .chatMessage, .chatOpened, .hazardReported, .hazardDeadline,
        .alertTaken, .callDeadline, .smsReceived, .phoneCallDecided, .boxKeyRevoked, .warningReceived, .warningDeadline, .warningHeard,
    ]

    public init?(name: String) {
        guard let match = EventKind.known.first(where: { $0.name == name }) else { return nil }
        self = match
    }

    /// Whether events of this kind go to the hub (docs/hub.md "What leaves the box"): calls for
    /// help and alerts, the escalation ladder and its messages, check-ins, residents, the node's
    /// health and radio state. Never scan hits, exposure data, raw button edges, or the sync's
    /// own bookkeeping.
    public var leavesBox: Bool {
        switch self {
        case .alertRaised, .alertReceived, .alertCancelled, .alertAcknowledged, .alertExpired, .alertReaffirmed,
             .deadlineReached, .outboxAttempt, .alarmAcknowledged, .checkIn,
             .residentEnrolled, .residentUpdated, .residentRemoved,
             .nodeStarted, .nodeStopped, .radioStateChanged, .downtimeDetected, .occupancySampled,
             // Who took a call for help: every box, coordinator and recipient learns it.
             .alertTaken, .callDeadline:
            true
        case .scanHit, .exposureDetected, .contactRetention, .exposureKeysPublished, .exposureKeysOffered, .exposureKeysMatched,
             .buttonInput, .hubAcknowledged, .hubEpochStarted, .hubReceived, .hubFeedRewound, .logSalvaged, .scanSightings, .scanBatch, .unspecified, .UNRECOGNIZED,
             // What phones say to the box stays at the box: unauthenticated, and about people nearby.
             .linkChanged, .chatMessage, .chatOpened,
             // Road users' positions are the region's feed's already, and about people moving.
             .hazardReported, .hazardDeadline,
             // Who texted the box, and what, stays at the box: a taking or a check-in it caused
             // leaves as that event's effect in the box's state, not as the SMS.
             .smsReceived,
             // A phone's unverified call and staff's word on it: a confirmed one leaves as the
             // alert raised from it.
             .phoneCallDecided,
             // The hub's own statement, carried to boxes inside a HubReceived; never a box's.
             .boxKeyRevoked,
             // Public warnings are the authorities' own documents, read from their feeds.
             .warningReceived, .warningDeadline,
             // A neighbour's word on the air, which every box hears for itself.
             .warningHeard:
            false
        }
    }
}

extension ScanHit {
    public var meanRSSI: Double { count == 0 ? 0 : Double(rssiSum) / Double(count) }
    public func firstSeenMicroseconds(eventTime: UInt64) -> UInt64 { eventTime &- firstOffsetUs }
    public func lastSeenMicroseconds(eventTime: UInt64) -> UInt64 { eventTime &- lastOffsetUs }
}

extension AlertID {
    public init(origin: UInt64, counter: UInt32) {
        self.init()
        self.origin = origin
        self.counter = counter
    }
    /// "origin:counter" in hex, as printed by the CLI.
    public var text: String { String(origin, radix: 16) + ":" + String(counter) }
}

/// Formats a 48-bit device address as AA:BB:CC:DD:EE:FF.
public func formatAddress(_ address: UInt64) -> String {
    (0..<6).map { i -> String in
        let byte = UInt8(truncatingIfNeeded: address >> UInt64((5 - i) * 8))
        let hex = String(byte, radix: 16, uppercase: true)
        return hex.count == 1 ? "0" + hex : hex
    }.joined(separator: ":")
}

extension HazardKind {
    /// The kind as people read it (status, the page, `vigil log`).
    public var displayName: String {
        switch self {
        case .vehicle: "vehicle"
        case .pedestrian: "pedestrian"
        case .cyclist: "cyclist"
        case .trafficJam: "traffic jam"
        case .workZone: "work zone"
        default: "hazard"
        }
    }
}

extension HazardSource {
    public var displayName: String {
        switch self {
        case .air: "air"
        case .hub: "hub"
        case .mqtt: "MQTT"
        case .staff: "staff"
        default: "unknown"
        }
    }
}
