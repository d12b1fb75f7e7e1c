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
    /// v5: issue 10: `vigil ack` also silences the chirp of calls for help received from other
    /// boxes (an old log's AlarmAcknowledged now silences more), alerts end with AlertExpired and
    /// are extended by AlertReaffirmed.
    public static let checkpointName = "projections.v5"

    public init(settings: ProjectionSettings = ProjectionSettings()) {
        devices = DeviceList(pruneAfterMicroseconds: settings.devicePruneAfterMicroseconds)
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
            devices.fold(hit, time: time)
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

    private mutating func addMessages(_ messages: [EscalationBook.Message], _ event: Event) {
        for m in messages {
            outbox.add(id: m.id, channel: m.audience == .resident ? .resident : .contacts, recipients: m.recipients,
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
