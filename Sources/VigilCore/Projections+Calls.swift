import VigilEvents

/// Calls for help: which alert an event names, the call each alert walks, takings, phones that ask,
/// residents' calls and the messages they make (see docs/calls-for-help.md). Its steps are
/// internal rather than private only because they live in this file: `apply` is their one caller.
extension Projections {
    /// The alert id an alert event names (raise, cancel, acknowledgement, expiry, renewal).
    static func alertKey(of body: EventBody) -> String? {
        switch body {
        case .alertRaised(let a), .alertReceived(let a): a.id.text
        case .alertCancelled(let c): c.id.text
        case .alertAcknowledged(let k): k.id.text
        case .alertExpired(let x): x.id.text
        case .alertReaffirmed(let x): x.id.text
        default: nil
        }
    }

    /// Keeps the call of alert `key` in step with the alert book, after an alert event was
    /// applied: a call for help (sos, medical) that is active opens a call; a cancel or an expiry
    /// ends it; an acknowledgement (a person at a box pressed its button, a coordinator at the
    /// hub answered) takes it.
    mutating func followCall(ofAlert key: String, event: Event, cancelReason: String = "") {
        guard let alert = alerts.alerts[key], AlertBook.asksForAnswer(kind: alert.kind) || calls.calls[CallBook.id(alert: key)] != nil else { return }
        let id = CallBook.id(alert: key)
        if calls.calls[id] == nil {
            guard alert.tombstone != true, !alert.cancelled, alert.expired != true,
                  alert.expiresAtMicroseconds == 0 || alert.expiresAtMicroseconds > event.timeMicroseconds else { return }
            // Calls from other boxes are bounded, per box and in all: a box (or a stolen box's
            // credential at the hub) raising thousands must not text the staff thousands of times.
            // What is over the bound stays an alert on the page and in status.
            if !alert.raisedHere {
                let remote = calls.openRemoteOrigins
                guard remote.count < CallBook.maximumRemoteOpen,
                      remote.values.count(where: { $0 == alert.origin }) < CallBook.maximumOpenPerRemoteBox else {
                    calls.noteRefusedRemoteCall()
                    return
                }
            }
            let kind: CallBook.Kind = alert.kind == AlertKind.medical.rawValue ? .medical : .sos
            let text = PrintableText.clean(alert.text, limit: 80)
            let what = (kind == .sos ? "SOS" : "MEDICAL call") + " \(key)" + (text.isEmpty ? "" : " \"\(text)\"")
            let source: String
            if alert.raisedHere {
                source = CallBook.raisedHere
            } else if alert.hops == 0 {
                source = "from box \(String(alert.origin, radix: 16))"
            } else {
                source = "from box \(String(alert.origin, radix: 16)), \(alert.hops) hops away"
            }
            var place: [String] = []
            let site = escalations.context.siteText
            if alert.raisedHere, !site.isEmpty { place.append("at \(site)") }
            if let lat = alert.latitudeE7, let lon = alert.longitudeE7 {
                place.append("location \(Self.degrees(lat)),\(Self.degrees(lon))")
            }
            addCallMessages(calls.open(id: id, kind: kind, alert: key, resident: nil, ladder: nil, source: source, what: what,
                                       place: place.joined(separator: ", "), event: event, origin: alert.origin), event)
        }
        guard let call = calls.calls[id], call.isOpen else { return }
        if alert.cancelled {
            let detail = cancelReason.isEmpty ? "It was cancelled." : "It was cancelled: \(cancelReason.prefix(120))."
            addCallMessages(calls.end(id, reason: "cancelled", detail: detail, event: event), event)
        } else if alert.expired == true {
            addCallMessages(calls.end(id, reason: "ended", detail: "It expired without a cancel.", event: event), event)
        } else if call.taken == nil, case .alertAcknowledged(let k) = event.body, k.id.text == key {
            // Only this event's acknowledgement: one stored before the call opened (heard for an
            // alert id not raised yet) takes nothing. `fromHub` marks the hub's own answers (a
            // coordinator's) as heard from UInt64.max.
            let madeHere = k.heardFrom == 0
            let fromCoordinator = k.heardFrom == UInt64.max
            // Another box's word does not stop this box's own call: a stolen box could silence
            // every SOS. It stops calls raised elsewhere (their own box escalates them).
            guard madeHere || fromCoordinator || !alert.raisedHere else { return }
            let by = madeHere ? "a person at this box"
                : fromCoordinator ? "a coordinator at the hub"
                : "a person at box \(String(k.heardFrom, radix: 16))"
            addCallMessages(calls.take(id, by: by, via: fromCoordinator ? .hub : .button, event: event), event)
        }
    }

    /// An `AlertTaken`: of an alert's call, or (made here) of a resident's.
    mutating func take(_ t: AlertTaken, event: Event) {
        let id: String
        if t.hasID {
            id = CallBook.id(alert: t.id.text)
        } else if !t.call.isEmpty {
            // A phone's call is this box's own, like a resident's.
            guard t.heardFrom == 0, t.call.hasPrefix(CallBook.phoneCallPrefix) else { return }
            id = t.call
        } else {
            // A resident's call is this box's own: a taking heard from elsewhere names another box's.
            guard t.heardFrom == 0, !t.resident.isEmpty else { return }
            id = CallBook.id(resident: t.resident, ladder: t.ladder)
        }
        var by = t.by.isEmpty ? "someone" : PrintableText.clean(t.by, limit: 64)
        var via = t.via
        if t.heardFrom != 0 {
            // Heard from the hub's feed: another box's word. It never stops this box's own call
            // (see followCall), and how it was taken is that box's claim, said as such.
            if let alert = alerts.alerts[t.id.text], alert.raisedHere { return }
            by = "\(by) at box \(String(t.heardFrom, radix: 16))"
            via = .hub
        }
        addCallMessages(calls.take(id, by: by, via: via, event: event), event)
    }

    /// A phone's sos or medical message (EchoAlert's categories) asks for help at this box: a call
    /// "from a phone, unverified" for staff, never an alert of the network by itself (issue 28).
    /// Other categories (fire, evacuate, ...) stay messages for staff on the page.
    mutating func phoneAsked(_ m: ChatMessage, event: Event) {
        guard !m.outgoing, m.channel == .message, !m.messageID.isEmpty else { return }
        let kind: CallBook.Kind
        switch m.category {
        case "sos": kind = .sos
        case "medical": kind = .medical
        default: return
        }
        let site = escalations.context.siteText
        addCallMessages(calls.phoneAsked(kind: kind, messageID: m.messageID, peer: formatAddress(m.peer) + (m.peerType == .addressRandom ? "/random" : ""),
                                         text: m.text, place: site.isEmpty ? "" : "at \(site)", event: event), event)
    }

    /// Residents' calls after a ladder event: the alarm step opens one; an "I'm OK", a removal or
    /// a new ladder ends it.
    mutating func followResidentCalls(_ event: Event) {
        if case .deadlineReached(let d) = event.body, d.step == .alarm, let r = escalations.residents[d.resident],
           r.ladderStep == .alarm, r.ladder == d.ladder, r.stepSequence == event.sequence {
            let who = r.name.isEmpty ? r.id : r.name
            var place: [String] = []
            let site = escalations.context.siteText
            if !site.isEmpty { place.append("at \(site)") }
            if !r.room.isEmpty { place.append("room \(r.room)") }
            addCallMessages(calls.open(id: CallBook.id(resident: r.id, ladder: r.ladder), kind: .resident, alert: nil,
                                       resident: r.id, ladder: r.ladder, source: "resident of this box",
                                       what: "ALARM: \(who) has not answered \"are you OK?\"", place: place.joined(separator: ", "),
                                       event: event), event)
            return
        }
        for call in calls.openResidentCalls {
            guard let rid = call.resident else { continue }
            guard let r = escalations.residents[rid] else {
                addCallMessages(calls.end(call.id, reason: "ended", detail: "The resident was removed from the box.", event: event), event)
                continue
            }
            if r.ladder != call.ladder || r.step == 0 {
                let who = r.name.isEmpty ? r.id : r.name
                addCallMessages(calls.end(call.id, reason: "resolved", detail: "\(who) checked in and is OK.", event: event), event)
            }
        }
    }

    mutating func addCallMessages(_ messages: [CallBook.Message], _ event: Event) {
        for m in messages {
            outbox.add(id: m.id, channel: m.recipient == CallBook.alarmCentre ? .arc : .call,
                       recipients: m.recipient.isEmpty ? [] : [m.recipient], text: m.text, event: event, alarm: m.alarm)
        }
    }

    static func degrees(_ e7: Int32) -> String {
        let v = Double(e7) / 1e7
        return String((v * 10_000).rounded() / 10_000)
    }
}
