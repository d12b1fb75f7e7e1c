import VigilEvents

/// What leaves a box for the hub (docs/hub.md "Hub"): the shelter's safety record, never contact data.
///
/// Calls for help and alerts, the escalation ladder and its messages, check-ins, residents,
/// the node's health and radio state go up. Scan hits, exposure data and anything heard about
/// other people's devices never do; nor do the box's own bookkeeping of the sync. Residents'
/// contacts (phone numbers, addresses of relatives) stay on the box unless the shelter chooses
/// to share them (`hub.share_contacts`).
public struct SharePolicy: Sendable, Equatable {
    public var shareContacts: Bool
    /// The per-minute count of advertisers heard (on by default: a number, never an address).
    public var shareOccupancy: Bool

    public init(shareContacts: Bool = false, shareOccupancy: Bool = true) {
        self.shareContacts = shareContacts
        self.shareOccupancy = shareOccupancy
    }

    /// Calls for help and their cancels go before anything else in a backlog.
    public static func isUrgent(_ kind: EventKind) -> Bool {
        switch kind {
        case .alertRaised, .alertCancelled, .alertReaffirmed: true
        default: false
        }
    }

    /// The prefix of a phone's call's id (VigilCore's `CallBook.phoneCallPrefix`).
    static let phoneCallPrefix = "phone:"

    /// The body as it is uploaded: a resident's contacts removed unless shared. nil when the
    /// event does not leave the box.
    public func uploaded(_ body: EventBody) -> EventBody? {
        guard body.kind.leavesBox else { return nil }
        switch body {
        case .residentEnrolled(let r) where !shareContacts:
            return .residentEnrolled(Self.redacted(r))
        case .residentUpdated(let r) where !shareContacts:
            return .residentUpdated(Self.redacted(r))
        case .occupancySampled where !shareOccupancy:
            return nil
        case .alertTaken(let t) where !t.call.isEmpty:
            // A phone's call is this box's, about what a phone nearby wrote: it stays here (a
            // confirmed one leaves as the alert raised from it), with its steps and messages.
            return nil
        case .callDeadline(let d) where d.call.hasPrefix(Self.phoneCallPrefix):
            return nil
        case .outboxAttempt(let a) where a.entry.hasPrefix("call/" + Self.phoneCallPrefix):
            return nil
        default:
            return body
        }
    }

    /// Contacts' names stay (a coordinator sees who is to be called); their addresses and the
    /// resident's own do not.
    static func redacted(_ resident: Resident) -> Resident {
        var r = resident
        r.contacts = r.contacts.map { contact in
            var c = contact
            c.address = c.address.isEmpty ? "" : Self.kept
            return c
        }
        if !r.ownAddress.isEmpty { r.ownAddress = Self.kept }
        return r
    }

    /// What an address that stayed on the box reads as at the hub.
    public static let kept = "(kept on the box)"
}
