import VigilEvents

/// Alerts by id: raised here or received over the air, with duplicates dropped and
/// cancellations applied. Expiry is judged against the newest event time seen, never a clock.
public struct AlertBook: Projection {
    public struct Entry: Codable, Equatable, Sendable {
        public var origin: UInt64
        public var counter: UInt32
        public var kind: Int
        public var severity: Int
        public var raisedHere: Bool
        public var firstSequence: UInt64
        public var firstMicroseconds: UInt64
        public var expiresAtMicroseconds: UInt64
        public var hops: UInt32
        public var latitudeE7: Int32?
        public var longitudeE7: Int32?
        public var text: String
        public var cancelled: Bool
        public var cancelledMicroseconds: UInt64?
        public var duplicates: UInt64
        /// Relays so far of the cancel (0 = cancelled here); nil while not cancelled.
        public var cancelHops: UInt32?
        /// The cancel was made at this box (a long press, the CLI), not heard over the air.
        public var cancelledHere: Bool?
        /// Known only from a cancel heard over the air: the alert itself was never heard. Kept so
        /// the alert, if it arrives late, is recognised as already cancelled, and so the cancel
        /// can be relayed.
        public var tombstone: Bool?
        /// An `AlertExpired` said the alert ended at its expiry (`expiresAtMicroseconds`): it stays
        /// ended even if a later event carries an earlier time (a wall clock stepped back), until
        /// a renewal or re-affirmation moves the expiry on. Nil while not expired by an event.
        public var expired: Bool?

        public var idText: String { AlertID(origin: origin, counter: counter).text }
    }

    /// An alert acknowledged ("we know; help is on the way"): an `AlertAcknowledged` made here
    /// (a short press or `vigil alert ack` answering a call for help received from another box;
    /// `heard_from` 0) or heard over the air. One per alert: the frame does not say who
    /// acknowledged, so the first one is what there is to know.
    public struct Acknowledgement: Codable, Equatable, Sendable {
        public var origin: UInt64
        public var counter: UInt32
        public var severity: Int
        /// The acknowledged alert's expiry (0 = none): the acknowledgement ends with it.
        public var expiresAtMicroseconds: UInt64
        /// Relays so far when heard (0 = made here, or heard from the box that made it).
        public var hops: UInt32
        public var madeHere: Bool
        /// The AlertAcknowledged event that made it.
        public var sequence: UInt64
        public var timeMicroseconds: UInt64

        public var idText: String { AlertID(origin: origin, counter: counter).text }
    }

    public private(set) var alerts: [String: Entry] = [:]
    /// Acknowledgements by alert id.
    public private(set) var acknowledgements: [String: Acknowledgement] = [:]
    public private(set) var duplicatesDropped: UInt64 = 0
    public private(set) var cancellationsForUnknown: UInt64 = 0
    /// The time of the latest event applied: "now" for expiry. Not the highest time ever seen:
    /// after the wall clock is stepped back (an RTC-less Pi corrected by NTP), a maximum would
    /// make every new SOS born expired; the latest time can only make an alert last longer.
    public private(set) var newestMicroseconds: UInt64 = 0
    /// The highest counter of the alerts raised here: the next one gets a higher one, even after
    /// the alerts themselves are forgotten (an alert id must never repeat).
    public private(set) var highestCounterRaisedHere: UInt32 = 0
    /// Alerts and acknowledgements forgotten because they ended long ago (see `prune`).
    public private(set) var forgotten: UInt64 = 0
    private var lastPruneMicroseconds: UInt64 = 0

    /// How long after its end an alert is remembered: longer than any linger on the air, and
    /// frames of an ended alert are refused as stale anyway, so after this nothing can need it.
    static let rememberAfterEndMicroseconds: UInt64 = 3_600_000_000
    /// An alert without expiry ends only when cancelled; a box that missed the cancel may renew
    /// it for a while, so its cancellation is remembered longer.
    static let rememberCancelledWithoutExpiryMicroseconds: UInt64 = 7 * 86_400_000_000

    public init() {}

    public mutating func apply(_ input: ProjectionInput) {
        guard case .event(let event) = input else { return }
        observe(time: event.timeMicroseconds)
        apply(alertEvent: event)
    }

    /// Every event's time moves "now" for expiry.
    @inline(__always)
    mutating func observe(time: UInt64) {
        newestMicroseconds = time
        // Hourly by event time (and again after the clock was stepped back), so the book stays
        // bounded however long the box runs; deterministic, so replay forgets the same things.
        if time >= lastPruneMicroseconds &+ 3_600_000_000 || time &+ 3_600_000_000 < lastPruneMicroseconds {
            prune(now: time)
        }
    }

    /// Forgets alerts and acknowledgements that ended long ago. Alerts without expiry stay until
    /// cancelled (they are active); the counter of alerts raised here is kept apart.
    mutating func prune(now: UInt64) {
        lastPruneMicroseconds = now
        func ended(expiresAt: UInt64, cancelledAt: UInt64?) -> Bool {
            if expiresAt != 0 { return expiresAt &+ Self.rememberAfterEndMicroseconds < now }
            guard let cancelledAt else { return false }
            return cancelledAt &+ Self.rememberCancelledWithoutExpiryMicroseconds < now
        }
        let before = alerts.count + acknowledgements.count
        alerts = alerts.filter { !ended(expiresAt: $0.value.expiresAtMicroseconds, cancelledAt: $0.value.cancelledMicroseconds) }
        acknowledgements = acknowledgements.filter { key, ack in
            if let alert = alerts[key] {
                return !ended(expiresAt: alert.expiresAtMicroseconds, cancelledAt: alert.cancelledMicroseconds)
            }
            // The alert is forgotten or was never heard: the acknowledgement's own expiry, or a
            // week for one without.
            return ack.expiresAtMicroseconds != 0
                ? ack.expiresAtMicroseconds &+ Self.rememberAfterEndMicroseconds >= now
                : ack.timeMicroseconds &+ Self.rememberCancelledWithoutExpiryMicroseconds >= now
        }
        forgotten &+= UInt64(before - alerts.count - acknowledgements.count)
    }

    mutating func apply(alertEvent event: Event) {
        switch event.body {
        case .alertRaised(let alert): record(alert, event: event, raisedHere: true)
        case .alertReceived(let alert): record(alert, event: event, raisedHere: false)
        case .alertCancelled(let cancel):
            let key = cancel.id.text
            if var entry = alerts[key] {
                if !entry.cancelled {
                    entry.cancelled = true
                    entry.cancelledMicroseconds = event.timeMicroseconds
                    entry.cancelHops = cancel.hops
                    entry.cancelledHere = cancel.heardFrom == 0
                    alerts[key] = entry
                }
            } else {
                cancellationsForUnknown += 1
                alerts[key] = Entry(origin: cancel.id.origin, counter: cancel.id.counter, kind: 0,
                                    severity: cancel.severity.rawValue, raisedHere: false, firstSequence: event.sequence,
                                    firstMicroseconds: event.timeMicroseconds, expiresAtMicroseconds: cancel.expiresAtUs,
                                    hops: cancel.hops, latitudeE7: nil, longitudeE7: nil, text: "", cancelled: true,
                                    cancelledMicroseconds: event.timeMicroseconds, duplicates: 0, cancelHops: cancel.hops,
                                    cancelledHere: cancel.heardFrom == 0, tombstone: true)
            }
        case .alertExpired(let expiry):
            // Only the expiry the event names: a renewal applied since then moved it on, and the
            // alert is alive again (a stale AlertExpired must not end it).
            let key = expiry.id.text
            if var entry = alerts[key], !entry.cancelled, entry.expiresAtMicroseconds != 0,
               entry.expiresAtMicroseconds <= expiry.expiresAtUs {
                entry.expired = true
                alerts[key] = entry
            }
        case .alertReaffirmed(let again):
            // Someone confirmed at this box that the call for help still stands: its expiry moves
            // on (never back), and an alert that had expired is active again.
            let key = again.id.text
            if var entry = alerts[key], !entry.cancelled, entry.expiresAtMicroseconds != 0,
               again.expiresAtUs > entry.expiresAtMicroseconds {
                entry.expiresAtMicroseconds = again.expiresAtUs
                entry.expired = nil
                alerts[key] = entry
            }
        case .alertAcknowledged(let ack):
            let key = ack.id.text
            guard acknowledgements[key] == nil else { break }
            let expiry = alerts[key].map { $0.expiresAtMicroseconds != 0 ? max($0.expiresAtMicroseconds, ack.expiresAtUs) : 0 }
                ?? ack.expiresAtUs
            let madeHere = ack.heardFrom == 0
            acknowledgements[key] = Acknowledgement(origin: ack.id.origin, counter: ack.id.counter, severity: ack.severity.rawValue,
                                                    expiresAtMicroseconds: expiry, hops: madeHere ? 0 : ack.hops, madeHere: madeHere,
                                                    sequence: event.sequence, timeMicroseconds: event.timeMicroseconds)
        default: break
        }
    }

    /// Kinds that call for an answer: someone needs help. Warnings (fire, flood, hazards,
    /// evacuation, info) are for everyone to heed, not to answer.
    public static func asksForAnswer(kind: Int) -> Bool {
        kind == AlertKind.sos.rawValue || kind == AlertKind.medical.rawValue
    }

    /// Active calls for help received from other boxes that nobody has acknowledged yet (as far
    /// as this box knows): what a short press at this box answers.
    public var awaitingAcknowledgement: [Entry] {
        active.filter { !$0.raisedHere && $0.tombstone != true && Self.asksForAnswer(kind: $0.kind) && acknowledgements[$0.idText] == nil }
    }

    /// The acknowledgement of an alert, if any, while that alert is active.
    public func acknowledgement(of entry: Entry) -> Acknowledgement? { acknowledgements[entry.idText] }

    private mutating func record(_ alert: Alert, event: Event, raisedHere: Bool) {
        let key = alert.id.text
        if var existing = alerts[key] {
            existing.duplicates += 1
            existing.hops = min(existing.hops, alert.hops)
            // A renewal: an alert without a fixed end goes on the air with a rolling expiry, and a
            // box hearing a later one keeps the alert alive (a cancelled one stays cancelled).
            if !existing.cancelled, existing.expiresAtMicroseconds != 0, alert.expiresAtUs > existing.expiresAtMicroseconds {
                existing.expiresAtMicroseconds = alert.expiresAtUs
                existing.expired = nil
            }
            alerts[key] = existing
            duplicatesDropped += 1
            return
        }
        alerts[key] = Entry(origin: alert.id.origin, counter: alert.id.counter, kind: alert.kind.rawValue,
                            severity: alert.severity.rawValue, raisedHere: raisedHere,
                            firstSequence: event.sequence, firstMicroseconds: event.timeMicroseconds,
                            expiresAtMicroseconds: alert.expiresAtUs, hops: alert.hops,
                            latitudeE7: alert.hasLocation ? alert.location.latitudeE7 : nil,
                            longitudeE7: alert.hasLocation ? alert.location.longitudeE7 : nil,
                            text: alert.text, cancelled: false, cancelledMicroseconds: nil, duplicates: 0,
                            cancelHops: nil, cancelledHere: nil, tombstone: nil)
        if raisedHere { highestCounterRaisedHere = max(highestCounterRaisedHere, alert.id.counter) }
    }

    /// Alerts neither cancelled nor expired as of the newest event, oldest first.
    public var active: [Entry] {
        alerts.values
            .filter(isActive)
            .sorted { ($0.firstSequence, $0.idText) < ($1.firstSequence, $1.idText) }
    }

    private func isActive(_ e: Entry) -> Bool {
        !e.cancelled && e.expired != true && (e.expiresAtMicroseconds == 0 || e.expiresAtMicroseconds > newestMicroseconds)
    }

    /// The alert whose expiry comes first among those still active (raised here or received;
    /// their acknowledgements end with them): what `AlertExpired` must be appended for next, when
    /// its time comes. Ties go to the lower id, so the choice is deterministic.
    public var earliestExpiry: (id: AlertID, expiresAtMicroseconds: UInt64)? {
        var best: Entry?
        for e in alerts.values where e.expiresAtMicroseconds != 0 && isActive(e) {
            if let b = best, (b.expiresAtMicroseconds, b.idText) <= (e.expiresAtMicroseconds, e.idText) { continue }
            best = e
        }
        return best.map { (AlertID(origin: $0.origin, counter: $0.counter), $0.expiresAtMicroseconds) }
    }
}
