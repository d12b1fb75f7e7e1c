import VigilEvents

/// A node whose log stopped taking writes (docs/log.md "Failing safe"). A card at the end of its life
/// often turns read-only or fails every write; exiting would leave the box in a restart loop
/// with its button dead. So the node goes on: events take sequences in memory, are applied as
/// if durable, and drive the outputs and the radio; commands are answered "not logged"; no
/// checkpoint is written (it would hold events the log does not). Amber flashes and `vigil
/// status` says so.
struct RunningFromMemory: Sendable {
    /// When the log failed (wall clock, µs), and why.
    let since: UInt64
    let failure: String
    /// The last sequence stored in the log: everything after it is held only here.
    let lastStored: UInt64
    /// Events taken in memory, and how many of them a restart would lose to someone's harm
    /// (`mattersToPeople`).
    private(set) var taken: UInt64 = 0
    private(set) var criticalTaken: UInt64 = 0
    private var lastSequence: UInt64 = 0

    init(since: UInt64, failure: String, lastStored: UInt64) {
        self.since = since
        self.failure = failure
        self.lastStored = lastStored
    }

    /// The next sequence for an event kept in memory: above everything the log or memory gave.
    mutating func nextSequence(after highest: UInt64) -> UInt64 {
        lastSequence = max(lastSequence, highest) &+ 1
        return lastSequence
    }

    /// `sheddable`: appended as sheddable (a feed's report the feed sends again), so it never
    /// keeps the node from restarting.
    mutating func took(_ event: Event, sheddable: Bool = false) {
        taken &+= 1
        if !sheddable, Self.mattersToPeople(event.body.kind) { criticalTaken &+= 1 }
        lastSequence = max(lastSequence, event.sequence)
    }

    /// Whether a restart losing an event of this kind would hurt someone: an alert, an SOS or its
    /// gesture, a check-in, the ladder's steps and messages, a resident's settings. The node's own
    /// housekeeping (starts, stops, radio state, occupancy, scan hits, the hub's bookkeeping) is
    /// made again or does not matter, so it does not keep a failed node from restarting.
    static func mattersToPeople(_ kind: EventKind) -> Bool {
        switch kind {
        case .scanHit, .scanBatch, .nodeStarted, .nodeStopped, .radioStateChanged, .occupancySampled, .downtimeDetected, .logSalvaged,
             .contactRetention, .scanSightings, .hubAcknowledged, .hubEpochStarted, .hubReceived, .hubFeedRewound, .exposureKeysOffered,
             .boxKeyRevoked,
             // A feed serves its warnings again at the next poll; the deadline is made again.
             .warningReceived, .warningDeadline:
            false
        default:
            true
        }
    }
}
