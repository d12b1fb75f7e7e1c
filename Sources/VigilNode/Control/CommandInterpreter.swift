import Foundation
import VigilCore
import VigilEvents
import VigilRadio
import VigilSystem

/// Turns a command into the event it stands for, after checking it against the node's state:
/// the one place where requests from outside (CLI, control socket, later HTTP) become events.
///
/// It is a function of its context, with no I/O and no clock of its own, so the running node
/// and the CLI (appending for a stopped node) decide alike, and tests call it directly.
public struct CommandInterpreter {
    /// What a command is judged against.
    struct Context {
        var projections: Projections
        var pending: PendingEvents
        var nodeID: UInt64
        var nowMicroseconds: UInt64
        /// A shelter key is installed: alerts can go on the air.
        var hasShelterKey: Bool
        var maxAlertLifetimeMicroseconds: UInt64
        /// The node is not running (the CLI appends for it): alerts are raised and cancelled only
        /// by a running node, which alone knows the next counter and tells people at once.
        var offline = false
    }

    /// The event a command becomes, or why it is refused.
    public enum Outcome {
        case event(EventBody, alert: String? = nil)
        case refused(NodeReply.Refusal, String)
    }

    let context: Context

    /// Judges commands for a node that is not running (the CLI appends for it): no events are
    /// pending, and nothing can go on the air.
    public static func offline(state: Projections, nowMicroseconds: UInt64) -> CommandInterpreter {
        CommandInterpreter(context: Context(projections: state, pending: PendingEvents(), nodeID: state.health.nodeID,
                                            nowMicroseconds: nowMicroseconds, hasShelterKey: false,
                                            maxAlertLifetimeMicroseconds: 0, offline: true))
    }

    private var notRunning: Outcome {
        .refused(.unavailable, "the node is not running: alerts are raised and cancelled by a running node (start it: systemctl start vigil)")
    }

    public func interpret(_ command: NodeCommand) -> Outcome {
        switch command {
        case .ping, .status, .press, .reloadHubLinks, .chatSend, .chatConnect, .chatDisconnect, .testCalls, .takeCallByCallback,
             .decidePhoneCall:
            return .refused(.invalid, "\(command.name) is answered by the node, not logged")
        case .chatOpen(let r):
            guard let peer = LEAddress(r.peer)?.value else { return .refused(.invalid, "a device is AA:BB:CC:DD:EE:FF, with /random for a random address") }
            guard context.projections.conversations.byPeer[peer] != nil else { return .refused(.conflict, "no chat with \(r.peer)") }
            var opened = ChatOpened()
            opened.peer = peer
            return .event(.chatOpened(opened))
        case .checkIn(let r): return checkIn(r)
        case .enrolResident(let s): return enrol(s)
        case .updateResident(let s): return update(s)
        case .removeResident(let r):
            guard context.projections.escalations.residents[r.id] != nil else { return .refused(.conflict, "no resident \(r.id)") }
            var removed = ResidentRemoved()
            removed.id = r.id
            return .event(.residentRemoved(removed))
        case .silenceAlarms(let s):
            var ack = AlarmAcknowledged()
            ack.by = String(s.by.prefix(32))
            return .event(.alarmAcknowledged(ack))
        case .raiseAlert(let r): return raise(r)
        case .cancelAlert(let r): return cancel(r)
        case .acknowledgeAlert(let r): return acknowledge(r)
        case .recordExposure(let r): return exposure(r)
        case .reportHazard(let r): return hazard(r)
        case .importWarning(let r): return warning(r)
        case .takeCall(let r): return take(r)
        case .recordKeysPublished(let r):
            var p = ExposureKeysPublished()
            p.keys = r.keys
            p.firstInterval = r.firstInterval
            p.lastInterval = r.lastInterval
            p.path = String(r.path.prefix(4_096))
            return .event(.exposureKeysPublished(p))
        }
    }

    // MARK: Hazards

    static let hazardKinds: [String: HazardKind] = [
        "vehicle": .vehicle, "pedestrian": .pedestrian, "cyclist": .cyclist, "traffic-jam": .trafficJam, "work-zone": .workZone,
    ]

    private func hazard(_ r: HazardRequest) -> Outcome {
        guard let kind = Self.hazardKinds[r.kind] else { return .refused(.invalid, "a hazard is a vehicle, pedestrian, cyclist, traffic-jam or work-zone") }
        guard !r.id.isEmpty, r.id.utf8.count <= 64 else { return .refused(.invalid, "a hazard's id is 1 to 64 bytes") }
        guard r.latitude.isFinite, r.longitude.isFinite, (-90...90).contains(r.latitude), (-180...180).contains(r.longitude) else {
            return .refused(.invalid, "a position is a latitude (-90 to 90) and a longitude (-180 to 180)")
        }
        var h = HazardReported()
        h.id = r.id
        h.kind = kind
        h.source = .staff
        h.messageType = "staff"
        h.latitudeE7 = Int32((r.latitude * 1e7).rounded())
        h.longitudeE7 = Int32((r.longitude * 1e7).rounded())
        if let heading = r.headingDegrees {
            guard heading.isFinite, (0...360).contains(heading) else { return .refused(.invalid, "a heading is 0 to 360 degrees") }
            h.headingCentidegrees = UInt32((heading * 100).rounded()) % 36_000
        }
        if let speed = r.speedMetersPerSecond {
            guard speed.isFinite, (0...100).contains(speed) else { return .refused(.invalid, "a speed is 0 to 100 m/s") }
            h.speedCmPerS = UInt32((speed * 100).rounded())
        }
        if let lifetime = r.lifetimeMicroseconds {
            guard kind == .workZone || kind == .trafficJam else { return .refused(.invalid, "only work zones and jams last as long as their report says; road users, 10 s") }
            guard (1_000_000...HazardBook.maximumZoneLifetimeMicroseconds).contains(lifetime) else { return .refused(.invalid, "a zone lasts 1 s to 7 days") }
            h.expiresUs = context.nowMicroseconds &+ lifetime
        }
        return .event(.hazardReported(h))
    }

    // MARK: Residents

    private func checkIn(_ r: CheckInRequest) -> Outcome {
        guard Self.validResidentID(r.resident) else { return .refused(.invalid, Self.residentIDRule) }
        var c = CheckIn()
        c.resident = r.resident
        c.source = r.heartRate == nil ? .checkInCli : .checkInHeartRate
        if let rate = r.heartRate {
            guard rate.isFinite else { return .refused(.invalid, "the heart rate must be a number") }
            c.value = rate
        }
        if let flags = r.heartRateFlags { c.heartRateFlags = flags & 0xFF }
        return .event(.checkIn(c))
    }

    static let residentIDRule = "a resident id is 1-64 characters without spaces"
    static func validResidentID(_ id: String) -> Bool { !id.isEmpty && !id.contains(" ") && id.count <= 64 }

    private func enrol(_ s: ResidentSettings) -> Outcome {
        guard Self.validResidentID(s.id) else { return .refused(.invalid, Self.residentIDRule) }
        guard context.projections.escalations.residents[s.id] == nil else {
            return .refused(.conflict, "resident \(s.id) exists; use `vigil resident set \(s.id)`")
        }
        var r = Resident()
        r.id = s.id
        r.mode = .time
        r.intervalUs = 4 * 3_600_000_000
        if let refusal = Self.apply(s, to: &r) { return .refused(.invalid, refusal) }
        if let owner = sensorOwner(of: r) { return .refused(.conflict, "that heart-rate sensor is \(owner)'s: one pulse must not keep two residents' ladders quiet") }
        return .event(.residentEnrolled(r))
    }

    /// Another resident enrolled with `r`'s heart-rate sensor, if any.
    private func sensorOwner(of r: Resident) -> String? {
        let sensor = r.heartRateSensor & 0xFFFF_FFFF_FFFF
        guard sensor != 0 else { return nil }
        return context.projections.escalations.residents.values
            .filter { $0.id != r.id && $0.heartRateSensor == sensor }.map(\.id).min()
    }

    private func update(_ s: ResidentSettings) -> Outcome {
        guard let existing = context.projections.escalations.residents[s.id] else { return .refused(.conflict, "no resident \(s.id)") }
        var r = Resident(existing)
        if let refusal = Self.apply(s, to: &r) { return .refused(.invalid, refusal) }
        if s.heartRateSensor != nil, let owner = sensorOwner(of: r) {
            return .refused(.conflict, "that heart-rate sensor is \(owner)'s: one pulse must not keep two residents' ladders quiet")
        }
        return .event(.residentUpdated(r))
    }

    /// Applies the settings given; returns why they are refused, if they are.
    static func apply(_ s: ResidentSettings, to r: inout Resident) -> String? {
        if let name = s.name {
            guard name.utf8.count <= 200 else { return "the name is longer than 200 bytes" }
            r.name = name
        }
        if let mode = s.mode {
            switch mode {
            case .time: r.mode = .time
            case .pulse: r.mode = .pulse
            case .off: r.mode = .off
            }
        }
        for (value, name) in [(s.intervalMicroseconds, "interval"), (s.confirmMicroseconds, "confirm"),
                              (s.textToAlarmMicroseconds, "text-to-alarm"), (s.alarmToNotifyMicroseconds, "alarm-to-notify")] {
            if let v = value, v < 1_000_000 || v > 366 * 86_400_000_000 {
                return "\(name) must be a duration between 1s and 366d"
            }
        }
        if let v = s.intervalMicroseconds { r.intervalUs = v }
        if let v = s.confirmMicroseconds { r.confirmUs = v }
        if let v = s.textToAlarmMicroseconds { r.textToAlarmUs = v }
        if let v = s.alarmToNotifyMicroseconds { r.alarmToNotifyUs = v }
        if let contacts = s.contacts {
            guard contacts.count <= 32, contacts.allSatisfy({ !$0.address.isEmpty && $0.address.utf8.count <= 200 && $0.name.utf8.count <= 200 }) else {
                return "contacts need an address (at most 32 contacts, 200 bytes each)"
            }
            var checked: [Contact] = []
            for contact in contacts {
                // Checked and normalised at enrolment (E.164 for phone numbers), so a typo shows
                // now, not when the emergency message reaches nobody.
                do {
                    var c = Contact()
                    c.name = contact.name
                    c.address = try ContactAddress.parse(contact.address).text
                    checked.append(c)
                } catch {
                    return "contact \(contact.name): \(error)"
                }
            }
            r.contacts = checked
        }
        if s.clearNight == true { r.clearNight() }
        if let night = s.night {
            guard night.startMinute < 1_440, night.endMinute < 1_440 else { return "the night window's times must be within a day" }
            r.night.startMinute = night.startMinute
            r.night.endMinute = night.endMinute
        }
        if let offset = s.utcOffsetMinutes {
            guard (-840...840).contains(offset) else { return "the UTC offset must be within ±840 minutes" }
            r.night.utcOffsetMinutes = offset
        }
        if let pauses = s.pauses {
            guard pauses.count <= 64, pauses.allSatisfy({ $0.endMicroseconds > $0.startMicroseconds }) else {
                return "each pause must end after it starts (at most 64)"
            }
            r.pauses = pauses.map { var p = Pause(); p.startUs = $0.startMicroseconds; p.endUs = $0.endMicroseconds; return p }
        }
        if let tag = s.tag {
            guard tag <= 0xFFFF_FFFF_FFFF else { return "a tag address has 48 bits" }
            r.bleTag = tag
        }
        if let address = s.ownAddress {
            guard address.utf8.count <= 200 else { return "the address is longer than 200 bytes" }
            if address.isEmpty {
                r.ownAddress = ""
            } else {
                do { r.ownAddress = try ContactAddress.parse(address).text } catch { return "--address: \(error)" }
            }
        }
        if let room = s.room {
            guard room.utf8.count <= 100 else { return "the room is longer than 100 bytes" }
            r.room = room
        }
        if let weekly = s.weekly {
            guard weekly.count <= 32, weekly.allSatisfy({ (1...0x7F).contains($0.days) && $0.startMinute < 1_440 && $0.endMinute < 1_440 && $0.startMinute != $0.endMinute }) else {
                return "weekly pauses need days, and a start and an end within a day that differ (at most 32)"
            }
            r.weeklyPauses = weekly.map { var w = WeeklySlot(); w.days = $0.days; w.startMinute = $0.startMinute; w.endMinute = $0.endMinute; return w }
        }
        if let sensor = s.heartRateSensor {
            if sensor.isEmpty {
                r.heartRateSensor = 0
                r.heartRateSensorType = .addressPublic
            } else {
                guard let address = LEAddress(sensor), address.value != 0 else {
                    return "a heart-rate sensor is an address like C0:11:22:33:44:55, with /random for a random one"
                }
                // A private address changes: the box could neither find the sensor again nor bond.
                guard address.isIdentity else {
                    return "a heart-rate sensor's random address must be static (its first byte C0 to FF)"
                }
                r.heartRateSensor = address.value
                r.heartRateSensorType = address.kind == .random ? .addressRandom : .addressPublic
            }
        }
        if let zone = s.timeZone {
            // The CLI checks the name against the tz database; here only its shape (no I/O).
            guard zone.isEmpty || TimeZoneFiles.isPlausibleName(zone) else { return "\(zone) is not a time zone name (Europe/Madrid)" }
            r.timeZone = zone
        }
        return nil
    }

    // MARK: Alerts

    /// "1a2b3c4d:7" (origin in hex, counter), as `vigil status` prints alert ids.
    public static func parseAlertID(_ text: String) -> AlertID? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let origin = UInt64(parts[0], radix: 16), let counter = UInt32(parts[1]) else { return nil }
        return AlertID(origin: origin, counter: counter)
    }

    static let alertKinds: [String: AlertKind] = [
        "sos": .sos, "medical": .medical, "fire": .fire, "flood": .flood, "evacuate": .evacuate,
        "road-hazard": .roadHazard, "area-hazard": .areaHazard, "info": .info,
    ]

    /// The severity an alert raised here gets when none is given.
    static func defaultSeverity(_ kind: AlertKind) -> AlertSeverity {
        switch kind {
        case .sos, .medical, .fire, .evacuate: .critical
        case .flood, .roadHazard, .areaHazard: .warning
        default: .info
        }
    }

    private var noKey: Outcome {
        .refused(.unavailable, "this box has no shelter key (radio.alerts.key_file) and is not certified (vigil keys certify), so nothing would go on the air")
    }

    /// A raised alert gets its id here (origin and the next counter: only the node knows it).
    func raise(_ r: AlertRequest) -> Outcome {
        guard !context.offline else { return notRunning }
        guard let kind = Self.alertKinds[r.kind], AlertFrame.FrameType(kind: kind) != nil else {
            return .refused(.invalid, "unknown alert kind \(r.kind)")
        }
        // A call for help goes to people (the call tree) whether or not it can go on the air, as
        // the button's does (issue 27): only warnings, which exist to be heard by other boxes,
        // need the shelter key.
        guard context.hasShelterKey || AlertBook.asksForAnswer(kind: kind.rawValue) else { return noKey }
        var alert = Alert()
        alert.kind = kind
        switch r.severity {
        case nil: alert.severity = Self.defaultSeverity(kind)
        case "info": alert.severity = .info
        case "warning": alert.severity = .warning
        case "critical": alert.severity = .critical
        case let other?: return .refused(.invalid, "unknown severity \(other)")
        }
        guard r.lifetimeMicroseconds > 0, r.lifetimeMicroseconds <= context.maxAlertLifetimeMicroseconds else {
            return .refused(.invalid, "the expiry must be in the future and within radio.alerts.max_lifetime")
        }
        alert.expiresAtUs = context.nowMicroseconds &+ r.lifetimeMicroseconds
        switch (r.latitude, r.longitude) {
        case (nil, nil): break
        case (let lat?, let lon?):
            guard lat.isFinite, lon.isFinite, abs(lat) <= 90, abs(lon) <= 180 else {
                return .refused(.invalid, "latitude must be within 90 and longitude within 180 degrees")
            }
            var location = Location()
            location.latitudeE7 = Int32((lat * 1e7).rounded())
            location.longitudeE7 = Int32((lon * 1e7).rounded())
            alert.location = location
        default:
            return .refused(.invalid, "a place needs both latitude and longitude")
        }
        guard r.text.utf8.count <= 500 else { return .refused(.invalid, "the text is longer than 500 bytes") }
        alert.text = r.text
        let counter = context.pending.nextAlertCounter(context.projections.alerts, origin: context.nodeID)
        guard counter <= AlertFrame.maximumCounter else {
            return .refused(.unavailable, "this box has used every alert counter a frame can carry")
        }
        alert.id = AlertID(origin: context.nodeID, counter: counter)
        alert.hops = 0
        alert.heardFrom = 0
        return .event(.alertRaised(alert), alert: alert.id.text)
    }

    /// A cancel must name an active alert raised here, not cancelled already.
    private func cancel(_ r: AlertCancelRequest) -> Outcome {
        guard !context.offline else { return notRunning }
        // No key needed: only alerts raised here are cancelled, and without a key those are
        // calls for help that never went on the air.
        guard let id = Self.parseAlertID(r.id) else { return .refused(.invalid, "the id must look like 1a2b3c4d:7 (origin in hex, counter)") }
        let raisedHere = context.projections.alerts.active.contains { $0.raisedHere && $0.idText == id.text }
            || context.pending.containsRaised(id)
        guard raisedHere, !context.pending.containsCancel(id) else {
            return .refused(.conflict, "no active alert raised at this box has that id")
        }
        var cancel = AlertCancelled()
        cancel.id = id
        cancel.by = context.nodeID
        cancel.reason = String(r.reason.prefix(500))
        cancel.hops = 0
        cancel.heardFrom = 0
        return .event(.alertCancelled(cancel), alert: id.text)
    }

    /// An acknowledgement must name an active call for help received from another box, not
    /// yet acknowledged.
    private func acknowledge(_ r: AlertReference) -> Outcome {
        guard context.hasShelterKey else { return noKey }
        guard let id = Self.parseAlertID(r.id) else { return .refused(.invalid, "the id must look like 1a2b3c4d:7 (origin in hex, counter)") }
        guard let entry = context.projections.alerts.active.first(where: { $0.idText == id.text }), !entry.raisedHere,
              AlertBook.asksForAnswer(kind: entry.kind) else {
            return .refused(.conflict, "no active call for help (sos or medical) received from another box has that id")
        }
        guard context.projections.alerts.acknowledgements[entry.idText] == nil, !context.pending.containsAcknowledgement(id) else {
            return .refused(.conflict, "that alert is already acknowledged")
        }
        return .event(.alertAcknowledged(Self.acknowledgementMadeHere(entry)), alert: id.text)
    }

    // MARK: Calls for help

    /// The ways a command may name. SMS and webhook takings are made by the node itself
    /// (`SMSReplyRule`), never claimed by a caller.
    static let takenVia: [String: TakenVia] = ["cli": .cli, "page": .page, "api": .api]

    private func take(_ r: TakeRequest) -> Outcome {
        guard let via = Self.takenVia[r.via] else { return .refused(.invalid, "a call is taken by cli, page or api") }
        return take(r, via: via)
    }

    /// A person takes a call: found by alert id, call id or short code; open and not yet taken.
    func take(_ r: TakeRequest, via: TakenVia) -> Outcome {
        let by = PrintableText.clean(r.by, limit: 64).trimmingCharacters(in: .whitespaces)
        guard !by.isEmpty, by.utf8.count <= 256 else {
            return .refused(.invalid, "who takes the call is a name of 1 to 64 bytes (--by NAME)")
        }
        guard let call = context.projections.calls.call(named: r.call) else {
            return .refused(.conflict, "no call for help has the id or code \(r.call.trimmingCharacters(in: .whitespaces).prefix(64))")
        }
        if let taken = call.taken {
            return .refused(.conflict, "call \(call.code) is already taken by \(taken.by) (\(CallBook.viaText(TakenVia(rawValue: taken.via) ?? .unspecified)))")
        }
        guard call.isOpen else { return .refused(.conflict, "call \(call.code) has ended (\(call.ended?.reason ?? "ended"))") }
        guard !context.pending.containsTaking(of: call) else { return .refused(.conflict, "call \(call.code) is being taken already") }
        var t = AlertTaken()
        if let alert = call.alert, let id = Self.parseAlertID(alert) {
            t.id = id
        } else if call.phone != nil {
            t.call = call.id
        } else {
            t.resident = call.resident ?? ""
            t.ladder = call.ladder ?? 0
        }
        t.by = by
        t.via = via
        return .event(.alertTaken(t), alert: call.alert)
    }

    static func acknowledgementMadeHere(_ entry: AlertBook.Entry) -> AlertAcknowledged {
        var ack = AlertAcknowledged()
        ack.id = AlertID(origin: entry.origin, counter: entry.counter)
        ack.hops = 0
        ack.heardFrom = 0
        ack.expiresAtUs = entry.expiresAtMicroseconds
        ack.severity = AlertSeverity(rawValue: entry.severity) ?? .unspecified
        return ack
    }

}
