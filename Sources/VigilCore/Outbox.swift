import VigilEvents

/// Messages that must reach someone: created by the ladder and by SOS, delivered by notifiers,
/// and settled only by an OutboxAttempt event that says "delivered". Because entries and
/// attempts are both in the log, an entry survives restarts and is never delivered again once
/// delivered; an attempt interrupted by a crash is simply retried.
public struct Outbox: Projection {
    public enum Channel: String, Codable, Sendable {
        /// To the resident (the "are you OK?" prompt).
        case resident
        /// To a resident's contacts.
        case contacts
        /// To the shelter's staff channel (`notify.staff`): the ladder's second step, downtime.
        case staff
        /// Over the air to other boxes and phones (SOS); sent by the radio.
        case broadcast
        /// A call for help to one recipient of the call tree (`CallBook`): one entry per
        /// recipient and step, so each recipient's outcome is its own.
        case call
        /// A call for help to the alarm receiving centre (`arc:`), over SIA DC-09.
        case arc
    }

    public struct Entry: Codable, Equatable, Sendable {
        public var id: String
        public var channel: Channel
        public var recipients: [String]
        public var text: String
        public var createdMicroseconds: UInt64
        public var createdSequence: UInt64
        public var attempts: UInt32
        public var lastAttemptMicroseconds: UInt64
        public var lastError: String
        public var delivered: Bool
        public var deliveredSequence: UInt64
        /// When the first failed attempt was made (event time); nil until one fails.
        public var firstFailedMicroseconds: UInt64?
        /// The notifier of the latest attempt ("none": no way to tell anyone is configured).
        public var lastNotifier: String?
        /// The sequence of the latest attempt, for `vigil why`.
        public var lastAttemptSequence: UInt64?
        /// For the alarm receiving centre's entries (channel `.arc`): what to report.
        public var alarm: AlarmSignal?
        /// For those entries: their number among the centre's reports (1, 2, ...), given when the
        /// entry is made, so every attempt and every start sends the same DC-09 sequence number
        /// and different reports differ.
        public var alarmNumber: UInt64?
    }

    /// Why an undelivered entry counts as "no way to tell anyone".
    public enum Unreachable: Equatable, Sendable {
        /// No notifier is configured: nothing could even be tried.
        case noNotifier
        /// Attempts have failed for at least `unreachableAfterMicroseconds` (first failure to
        /// the latest attempt, event times).
        case failingSince(UInt64)
    }

    public var retryBaseMicroseconds: UInt64 = 5_000_000
    public var retryMaxMicroseconds: UInt64 = 600_000_000
    /// Delivered entries kept for `vigil status`/`why`; older ones are forgotten.
    public var keepDelivered = 200
    /// Failures lasting this long (first failed attempt to the latest attempt) make an entry
    /// "no way to tell anyone". A setting (`notify.unreachable_after`), not state: the node sets
    /// it after restoring, like the retry settings, and it is not in the checkpoint.
    public var unreachableAfterMicroseconds: UInt64 = 900_000_000

    public private(set) var entries: [String: Entry] = [:]
    public private(set) var deliveredTotal: UInt64 = 0
    public private(set) var failedAttempts: UInt64 = 0
    /// Entries for the alarm receiving centre made so far (`Entry.alarmNumber`).
    public private(set) var alarmEntriesMade: UInt64 = 0

    public init() {}

    public mutating func apply(_ input: ProjectionInput) {
        guard case .event(let event) = input, case .outboxAttempt(let attempt) = event.body else { return }
        record(attempt, event: event)
    }

    /// Adds an entry (an id already present is left alone: the same step never sends twice).
    public mutating func add(id: String, channel: Channel, recipients: [String], text: String, event: Event,
                             alarm: AlarmSignal? = nil) {
        guard entries[id] == nil else { return }
        var number: UInt64?
        if alarm != nil {
            alarmEntriesMade += 1
            number = alarmEntriesMade
        }
        entries[id] = Entry(id: id, channel: channel, recipients: recipients, text: text,
                            createdMicroseconds: event.timeMicroseconds, createdSequence: event.sequence,
                            attempts: 0, lastAttemptMicroseconds: 0, lastError: "", delivered: false,
                            deliveredSequence: 0, alarm: alarm, alarmNumber: number)
    }

    /// Drops an entry not yet delivered: what it would say is no longer true (a warning that
    /// ended). An attempt already under way may still deliver it; that attempt stays in the log,
    /// and `vigil why` finds it there.
    public mutating func withdraw(id: String) {
        guard let entry = entries[id], !entry.delivered else { return }
        entries[id] = nil
    }

    mutating func record(_ attempt: OutboxAttempt, event: Event) {
        guard var entry = entries[attempt.entry], !entry.delivered else { return }
        entry.attempts = max(entry.attempts, attempt.attempt)
        entry.lastAttemptMicroseconds = event.timeMicroseconds
        entry.lastAttemptSequence = event.sequence
        entry.lastNotifier = attempt.notifier
        if attempt.delivered {
            entry.delivered = true
            entry.deliveredSequence = event.sequence
            entry.lastError = ""
            deliveredTotal += 1
        } else {
            entry.lastError = attempt.error
            if entry.firstFailedMicroseconds == nil { entry.firstFailedMicroseconds = event.timeMicroseconds }
            failedAttempts += 1
        }
        entries[attempt.entry] = entry
        if attempt.delivered { forgetOldDelivered() }
    }

    private mutating func forgetOldDelivered() {
        let delivered = entries.values.filter(\.delivered)
        guard delivered.count > keepDelivered else { return }
        for old in delivered.sorted(by: { $0.deliveredSequence < $1.deliveredSequence }).prefix(delivered.count - keepDelivered) {
            entries[old.id] = nil
        }
    }

    /// Undelivered entries, oldest first.
    public var pending: [Entry] {
        entries.values.filter { !$0.delivered }.sorted { ($0.createdSequence, $0.id) < ($1.createdSequence, $1.id) }
    }

    /// Why `entry` counts as "no way to tell anyone", if it does: undelivered, and either its
    /// latest attempt found no notifier configured, or its attempts have failed for
    /// `unreachableAfterMicroseconds`. Broadcasts (the radio's) never count.
    public func unreachable(_ entry: Entry) -> Unreachable? {
        guard !entry.delivered, entry.channel != .broadcast, entry.attempts > 0 else { return nil }
        if entry.lastNotifier == "none" { return .noNotifier }
        if let first = entry.firstFailedMicroseconds, entry.lastAttemptMicroseconds >= first,
           entry.lastAttemptMicroseconds - first >= unreachableAfterMicroseconds {
            return .failingSince(first)
        }
        return nil
    }

    /// Undelivered entries that nobody can be told about (see `unreachable(_:)`), oldest first.
    public var unreachableEntries: [(entry: Entry, why: Unreachable)] {
        pending.compactMap { e in unreachable(e).map { (e, $0) } }
    }

    /// The retry rule: `retryBaseMicroseconds` doubling up to `retryMaxMicroseconds`.
    public var retry: Backoff { Backoff(base: retryBaseMicroseconds, max: retryMaxMicroseconds) }

    /// When the next attempt of `entry` is due: at once for a new entry, then with exponential
    /// backoff after each failure (5 s, 10 s, 20 s ... up to 10 min). Computed from the entry
    /// (its attempts are in the log), not counted here, so a replay gives the same answer.
    public func nextAttemptMicroseconds(_ entry: Entry) -> UInt64 {
        guard entry.attempts > 0 else { return entry.createdMicroseconds }
        return entry.lastAttemptMicroseconds &+ retry.delay(afterFailures: entry.attempts)
    }

    enum CodingKeys: String, CodingKey {
        case retryBaseMicroseconds, retryMaxMicroseconds, keepDelivered, entries, deliveredTotal, failedAttempts, alarmEntriesMade
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        retryBaseMicroseconds = try c.decode(UInt64.self, forKey: .retryBaseMicroseconds)
        retryMaxMicroseconds = try c.decode(UInt64.self, forKey: .retryMaxMicroseconds)
        keepDelivered = try c.decode(Int.self, forKey: .keepDelivered)
        let list = try c.decode([Entry].self, forKey: .entries)
        entries = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        deliveredTotal = try c.decode(UInt64.self, forKey: .deliveredTotal)
        failedAttempts = try c.decode(UInt64.self, forKey: .failedAttempts)
        alarmEntriesMade = try c.decode(UInt64.self, forKey: .alarmEntriesMade)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(retryBaseMicroseconds, forKey: .retryBaseMicroseconds)
        try c.encode(retryMaxMicroseconds, forKey: .retryMaxMicroseconds)
        try c.encode(keepDelivered, forKey: .keepDelivered)
        try c.encode(entries.values.sorted { $0.id < $1.id }, forKey: .entries)
        try c.encode(deliveredTotal, forKey: .deliveredTotal)
        try c.encode(failedAttempts, forKey: .failedAttempts)
        try c.encode(alarmEntriesMade, forKey: .alarmEntriesMade)
    }
}
