import VigilEvents

/// Outbox entries whose attempt is appended but not yet applied: until it is, the outbox does not
/// know of the attempt, so the entry must not be tried again. One per component that settles
/// outbox entries (`Deliveries`, `AlarmCentreLink`), fed every applied and refused event.
struct AttemptsInFlight {
    private var entries: Set<String> = []

    func contains(_ entry: String) -> Bool { entries.contains(entry) }

    /// An event applied, or refused by the log: an attempt it carries is no longer in flight.
    mutating func settle(_ event: Event) {
        if case .outboxAttempt(let a) = event.body { entries.remove(a.entry) }
    }

    /// Appends the attempt (`OutboxAttempt`) through `context` and holds the entry until it settles.
    /// An append the node refuses outright (it counts and logs it) keeps the entry held until a
    /// restart: trying again with no record of the attempt would repeat it without back-off.
    mutating func record(on context: any NodeContext, entry: String, attempt: UInt32, delivered: Bool, notifier: String, error: String) {
        var a = OutboxAttempt()
        a.entry = entry
        a.attempt = attempt
        a.delivered = delivered
        a.notifier = notifier
        a.error = String(error.prefix(500))
        entries.insert(entry)
        context.append(.outboxAttempt(a), time: nil)
    }
}
