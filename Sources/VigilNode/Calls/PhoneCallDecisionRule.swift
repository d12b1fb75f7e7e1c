import VigilCore
import VigilEvents

extension CommandInterpreter {
    /// What staff's word on a phone's call becomes: the alert raised from it (confirmed) and the
    /// decision, appended in that order, or why it is refused.
    enum PhoneCallOutcome {
        case decided(raised: EventBody?, decision: PhoneCallDecided, alert: String?)
        case refused(NodeReply.Refusal, String)
    }

    /// Staff confirm or dismiss a phone's unverified call for help (issue 28): found by id or
    /// short code, open, not decided already. Confirmed, it is raised as this box's alert (its
    /// kind, its text marked as a phone's and who confirmed it), so it goes on the air and to the
    /// hub as any alert staff raise; the call itself ends as "confirmed" and names that alert.
    func decidePhoneCall(_ r: PhoneCallDecision) -> PhoneCallOutcome {
        guard !context.offline else { return .refused(.unavailable, "the node is not running: a phone's call is decided by a running node (start it: systemctl start vigil)") }
        guard let via = Self.takenVia[r.via] else { return .refused(.invalid, "a phone's call is decided by cli, page or api") }
        let by = PrintableText.clean(r.by, limit: 64).trimmingCharacters(in: .whitespaces)
        guard !by.isEmpty else { return .refused(.invalid, "who decides is a name of 1 to 64 bytes (--by NAME)") }
        let book = context.projections.calls
        guard let call = book.call(named: r.call) else {
            return .refused(.conflict, "no call for help has the id or code \(r.call.trimmingCharacters(in: .whitespaces).prefix(64))")
        }
        guard let phone = call.phone else {
            return .refused(.conflict, "call \(call.code) is not a phone's: only a phone's unverified call is confirmed or dismissed")
        }
        guard call.isOpen else { return .refused(.conflict, "call \(call.code) has ended (\(call.ended?.reason ?? "ended"))") }
        // Past its lifetime it is ending (its deadline is on its way): not confirmed from memory.
        if let expiry = book.expiry(of: call), context.nowMicroseconds >= expiry.dueMicroseconds {
            return .refused(.conflict, "call \(call.code) has ended (nobody decided it within \(CallBook.phoneCallLifetimeMicroseconds / 3_600_000_000) hours)")
        }
        guard !context.pending.containsDecision(of: call.id) else { return .refused(.conflict, "call \(call.code) is being decided already") }
        var decision = PhoneCallDecided()
        decision.call = call.id
        decision.confirmed = r.confirm
        decision.by = by
        decision.via = via
        guard r.confirm else { return .decided(raised: nil, decision: decision, alert: nil) }
        var text = "from a phone, confirmed by \(by)"
        if !phone.text.isEmpty { text += ": " + phone.text }
        while text.utf8.count > 500 { text.removeLast() }
        let lifetime = min(Self.confirmedPhoneCallLifetimeMicroseconds, context.maxAlertLifetimeMicroseconds)
        switch raise(AlertRequest(kind: call.kind == .medical ? "medical" : "sos", severity: nil, lifetimeMicroseconds: lifetime, text: text)) {
        case .refused(let why, let message):
            return .refused(why, "cannot raise it: \(message)")
        case .event(let body, let alert):
            guard case .alertRaised(let raised) = body else { return .refused(.unavailable, "cannot raise it") }
            decision.alert = raised.id
            return .decided(raised: body, decision: decision, alert: alert)
        }
    }

    /// How long a confirmed phone's call lasts as an alert (as `vigil alert raise` by default).
    static let confirmedPhoneCallLifetimeMicroseconds: UInt64 = 6 * 3_600_000_000
}
