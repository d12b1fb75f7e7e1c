import VigilCore
import VigilEvents

/// Events appended to the log and not yet reported durable, oldest first.
///
/// The projections only ever see durable events, so a decision that must not repeat itself
/// ("is this alert already known?", "which counter comes next?") looks at the projections *and*
/// here. The queries below are those questions, asked in one place.
struct PendingEvents {
    private var storage: [Event] = []
    /// When each was appended (monotonic ns), beside `storage`: the durable ack's latency.
    private var appendedAt: [UInt64] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }
    var first: Event? { isEmpty ? nil : storage[head] }
    var last: Event? { isEmpty ? nil : storage[storage.count - 1] }
    /// The queued events, oldest first.
    var elements: ArraySlice<Event> { storage[head...] }

    mutating func append(_ event: Event, atNanoseconds: UInt64 = 0) {
        storage.append(event)
        appendedAt.append(atNanoseconds)
    }

    /// When the first was appended (monotonic ns).
    var firstAppendedAt: UInt64? { isEmpty ? nil : appendedAt[head] }

    mutating func removeFirst() -> Event? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        head += 1
        // Reclaim the consumed prefix once it dominates, keeping pops amortised O(1).
        if head > 1_024 && head * 2 > storage.count {
            storage.removeFirst(head)
            appendedAt.removeFirst(head)
            head = 0
        }
        return element
    }

    // MARK: Questions about alerts not yet durable

    /// Whether an alert (raised or received), a cancel or an acknowledgement of `id` waits here.
    func contains(alert id: AlertID, cancel: Bool, acknowledgement: Bool) -> Bool {
        elements.contains { e in
            switch e.body {
            case .alertReceived(let a), .alertRaised(let a): !cancel && !acknowledgement && a.id == id
            case .alertCancelled(let c): cancel && c.id == id
            case .alertAcknowledged(let a): acknowledgement && a.id == id
            default: false
            }
        }
    }

    /// Whether a word of `digest` from `signer`, heard on the air, is on its way to the log.
    func containsWarningHeard(signer: UInt32, digest: UInt64) -> Bool {
        elements.contains { if case .warningHeard(let h) = $0.body { h.signer == signer && h.digest == digest } else { false } }
    }

    func containsReceived(_ id: AlertID) -> Bool {
        elements.contains { if case .alertReceived(let a) = $0.body { a.id == id } else { false } }
    }

    func containsRaised(_ id: AlertID) -> Bool {
        elements.contains { if case .alertRaised(let a) = $0.body { a.id == id } else { false } }
    }

    func containsCancel(_ id: AlertID) -> Bool {
        elements.contains { if case .alertCancelled(let c) = $0.body { c.id == id } else { false } }
    }

    /// Whether a taking of `call` is on its way to the log (a second one would claim a taking
    /// the call book ignores).
    func containsTaking(of call: CallBook.Call) -> Bool {
        elements.contains { e in
            guard case .alertTaken(let t) = e.body else { return false }
            return t.hasID ? CallBook.id(alert: t.id.text) == call.id
                : !t.call.isEmpty ? t.call == call.id
                : CallBook.id(resident: t.resident, ladder: t.ladder) == call.id
        }
    }

    func containsDecision(of call: String) -> Bool {
        elements.contains { if case .phoneCallDecided(let d) = $0.body { d.call == call } else { false } }
    }

    func containsAcknowledgement(_ id: AlertID) -> Bool {
        elements.contains { if case .alertAcknowledged(let a) = $0.body { a.id == id } else { false } }
    }

    /// An `AlertExpired` for `id` (a refused one is gone from here, so it is tried again).
    func containsExpiry(_ id: AlertID) -> Bool {
        elements.contains { if case .alertExpired(let e) = $0.body { e.id == id } else { false } }
    }

    /// This box's newest active SOS, counting events not yet durable.
    func ownActiveSOS(_ alerts: AlertBook) -> AlertID? {
        var active: [String: AlertID] = [:]
        for a in alerts.active where a.raisedHere && a.kind == AlertKind.sos.rawValue {
            active[a.idText] = AlertID(origin: a.origin, counter: a.counter)
        }
        for e in elements {
            switch e.body {
            case .alertRaised(let a) where a.kind == .sos: active[a.id.text] = a.id
            case .alertCancelled(let c): active[c.id.text] = nil
            default: break
            }
        }
        return active.values.max { $0.counter < $1.counter }
    }

    /// Counters up to here may have been used by this box, as far as the log cannot say
    /// (`AlertCounterFloor`): set by the node, never part of the projections (replay must give
    /// the same state without it).
    var alertCounterFloor: UInt32 = 0

    /// The next alert counter of `origin`: ids are (node, counter) and never repeat, so it
    /// continues from the log (the book keeps the highest apart from the alerts it forgets) and
    /// from the floor kept outside it.
    func nextAlertCounter(_ alerts: AlertBook, origin: UInt64) -> UInt32 {
        var highest = max(alerts.highestCounterRaisedHere, alertCounterFloor)
        for e in elements {
            if case .alertRaised(let a) = e.body, a.id.origin == origin { highest = max(highest, a.id.counter) }
        }
        return highest &+ 1
    }
}
