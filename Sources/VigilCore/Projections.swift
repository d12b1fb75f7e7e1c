#if canImport(FoundationEssentials)
import FoundationEssentials // Data and JSON for checkpoints: value types, no I/O
#else
import Foundation
#endif
import VigilEvents

/// Settings the reducers depend on. They are part of the state so a reducer stays a function of
/// (state, event); a changed setting applies from the moment the node loads it.
public struct ProjectionSettings: Sendable, Equatable {
    public var devicePruneAfterMicroseconds: UInt64 = 300_000_000
    /// The ladder's view of the shelter: site, staff channel, zone rules (`site.*`, `notify.staff`).
    public var ladder = LadderContext()
    public init() {}
}

/// All projections of a node, and the last sequence they include.
public struct Projections: Projection {
    public var appliedThrough: UInt64 = 0
    public var health = NodeHealth()
    public var devices: DeviceList
    public var alerts = AlertBook()
    public var checkIns = CheckInBook()
    public var escalations = EscalationBook()
    public var outbox = Outbox()
    public var alarms = AlarmState()
    public var exposures = ExposureBook()

    /// The checkpoint's name in the log.
    /// v3: schema 4 added the exposure book (an older checkpoint is ignored: the log is replayed).
    /// v4: schema 5 added acknowledgements to the alert book, and the book forgets long-ended
    /// alerts.
    /// v5: schema 6 gave residents their own address, room, weekly pauses and time zone, and the
    /// ladder keeps its start time and the shelter's settings (older checkpoints cannot hold them);
    /// `vigil ack` also silences the chirp of calls for help received from other boxes (an old
    /// log's AlarmAcknowledged now silences more); alerts end with AlertExpired and are extended
    /// by AlertReaffirmed.
    public static let checkpointName = "projections.v5"

    public init(settings: ProjectionSettings = ProjectionSettings()) {
        devices = DeviceList(pruneAfterMicroseconds: settings.devicePruneAfterMicroseconds)
        escalations.context = settings.ladder
    }

    /// Same result as applying `input` to each projection in turn; dispatches on the event once
    /// so the replay hot path does not copy every event into all four projections.
    public mutating func apply(_ input: ProjectionInput) {
        switch input {
        case .undecodable(let error):
            appliedThrough = max(appliedThrough, error.sequence)
            health.apply(input)
        case .event(let event):
            apply(event)
        }
    }

    public mutating func apply(_ event: Event) {
        appliedThrough = max(appliedThrough, event.sequence)
        health.record(event)
        let time = event.timeMicroseconds
        devices.observe(time: time)
        alerts.observe(time: time)
        switch event.body {
        case .scanHit(let hit):
            devices.fold(ScanHitFields(hit), time: time)
            if escalations.hasTags { addMessages(escalations.apply(event), event) }
        case .alertRaised(let alert):
            alerts.apply(alertEvent: event)
            if alert.kind == .sos {
                outbox.add(id: "sos/\(alert.id.text)/raised", channel: .broadcast, recipients: [],
                           text: "SOS \(alert.id.text)", event: event)
            }
            settleAlarms()
        case .alertCancelled(let cancel):
            // Only an SOS raised here has broadcast outbox entries (a hazard raised here has none).
            let ours = alerts.alerts[cancel.id.text].map { $0.raisedHere && $0.kind == AlertKind.sos.rawValue } == true
            alerts.apply(alertEvent: event)
            if ours {
                outbox.add(id: "sos/\(cancel.id.text)/cancelled", channel: .broadcast, recipients: [],
                           text: "SOS \(cancel.id.text) cancelled", event: event)
            }
            settleAlarms()
        case .alertReceived, .alertAcknowledged:
            alerts.apply(alertEvent: event)
            settleAlarms()
        case .alertExpired:
            alerts.apply(alertEvent: event)
            settleAlarms()
        case .alertReaffirmed:
            alerts.apply(alertEvent: event)
            alarms.reaffirmed(event)
            settleAlarms()
        case .checkIn:
            checkIns.apply(.event(event))
            addMessages(escalations.apply(event), event)
            settleAlarms()
        case .residentEnrolled, .residentUpdated, .residentRemoved, .deadlineReached:
            addMessages(escalations.apply(event), event)
            settleAlarms()
        case .buttonInput:
            alarms.apply(.event(event))
        case .alarmAcknowledged:
            alarms.acknowledge(sounding: OutputPolicy.soundingAlarms(self), event: event)
        case .outboxAttempt:
            outbox.apply(.event(event))
        case .downtimeDetected(let d):
            // The box's own downtime, told to the staff once (issue 10, item 7).
            let staff = escalations.context.staff
            if !staff.isEmpty {
                outbox.add(id: "downtime/\(event.sequence)", channel: .staff, recipients: staff,
                           text: escalations.downtimeText(d), event: event)
            }
        case .contactRetention:
            // Contact data (scan hits) before the cutoff is being deleted: what it built goes too,
            // at this event, whether the deletion has happened yet or not — replay stays equal.
            devices.forgetForRetention()
            health.forgetScanHits()
            exposures.apply(.event(event))
        case .exposureDetected, .exposureKeysPublished:
            exposures.apply(.event(event))
        default:
            break
        }
    }

    /// Whether a scan hit must be applied as its whole event (`apply(_:)`) rather than as its
    /// fields: when it is the sighting of a resident's tag, the escalation ladder takes the event.
    /// Tags are every address in `everTagAddresses` (a superset of the current ones), so this is
    /// false for every other hit.
    @inline(__always)
    public func needsWholeEvent(forScanHit hit: ScanHitFields) -> Bool {
        escalations.hasTags && hit.count > 0 && escalations.everTagAddresses.contains(hit.address & 0xFFFF_FFFF_FFFF)
    }

    /// The replay hot path for the hot kind: a ScanHit as the fields replay decoded, without the
    /// generated message. The same result as `apply(_:)` with the whole event, for every hit for
    /// which `needsWholeEvent(forScanHit:)` is false (the caller applies the event otherwise).
    public mutating func apply(scanHit hit: ScanHitFields, sequence: UInt64, timeMicroseconds time: UInt64) {
        appliedThrough = max(appliedThrough, sequence)
        health.recordScanHit(timeMicroseconds: time)
        devices.observe(time: time)
        alerts.observe(time: time)
        devices.fold(hit, time: time)
    }

    private mutating func addMessages(_ messages: [EscalationBook.Message], _ event: Event) {
        for m in messages {
            let channel: Outbox.Channel = switch m.audience {
            case .resident: .resident
            case .contacts: .contacts
            case .staff: .staff
            }
            outbox.add(id: m.id, channel: channel, recipients: m.recipients,
                       text: m.text, event: event)
        }
    }

    /// Silenced alarms that are over are forgotten, so a new alarm for the same cause sounds.
    private mutating func settleAlarms() {
        guard !alarms.silenced.isEmpty else { return }
        let ladder = escalations.alarming.map(AlarmKey.ladder)
        let sos = alerts.active.filter { $0.raisedHere }.map(AlarmKey.sos)
        let calls = alerts.awaitingAcknowledgement.map(AlarmKey.received)
        alarms.keepOnly(Set(ladder + sos + calls))
    }

    /// Deterministic encoding (sorted keys, sorted collections): equal states give equal bytes,
    /// which is what `vigil replay` compares.
    public func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(self))
    }

    public static func decoded(_ bytes: [UInt8]) throws -> Projections {
        try JSONDecoder().decode(Projections.self, from: Data(bytes))
    }
}
