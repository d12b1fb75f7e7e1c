import VigilEvents

/// Where the box stands with its hub, folded from `HubAcknowledged` and `HubEpochStarted`
/// (docs/hub.md "Hub"). Events at or below `syncedThrough` are synced; later ones that leave the box
/// (`EventKind.leavesBox`) are pending.
public struct HubSyncBook: Projection {
    /// The hub's identity (its certificate's SHA-256, hex); empty before the first acknowledgement.
    public private(set) var hub: String = ""
    public private(set) var epoch: UInt32 = 0
    /// The first sequence uploaded under `epoch`.
    public private(set) var epochFirstSequence: UInt64 = 1
    public private(set) var syncedThrough: UInt64 = 0
    public private(set) var lastAcknowledgedMicroseconds: UInt64 = 0
    public private(set) var lastAcknowledgementSequence: UInt64 = 0
    public private(set) var acknowledgements: UInt64 = 0
    /// Events the hub stored new, over all acknowledgements.
    public private(set) var accepted: UInt64 = 0
    public private(set) var epochsStarted: UInt64 = 0
    /// Epochs started because the hub held different content at one of this box's identities.
    public private(set) var conflicts: UInt64 = 0
    /// Events that leave the box, over the whole log.
    public private(set) var shareableEvents: UInt64 = 0
    /// The hub feed's position this box has taken everything up to (each item once).
    public private(set) var feedCursor: UInt64 = 0
    /// The fingerprint of the item taken at `feedCursor` (`FeedItemDigest`; 0 at the start).
    public private(set) var feedCursorDigest: UInt64 = 0
    /// Items taken from the feed.
    public private(set) var received: UInt64 = 0
    /// Times the hub's feed was found given out again (`HubFeedRewound`).
    public private(set) var feedRewinds: UInt64 = 0

    public init() {}

    public mutating func apply(_ input: ProjectionInput) {
        guard case .event(let event) = input else { return }
        apply(event)
    }

    public mutating func apply(_ event: Event) {
        switch event.body {
        case .hubAcknowledged(let a):
            if a.hub != hub { hub = a.hub }
            // The hub's mark is the truth: it may move back (a hub restored from a backup).
            if a.epoch == epoch { syncedThrough = a.throughSequence }
            lastAcknowledgedMicroseconds = event.timeMicroseconds
            lastAcknowledgementSequence = event.sequence
            acknowledgements += 1
            accepted &+= a.accepted
        case .hubEpochStarted(let e):
            if e.hub != hub { hub = e.hub }
            epoch = e.epoch
            epochFirstSequence = e.firstSequence
            syncedThrough = e.firstSequence > 0 ? e.firstSequence - 1 : 0
            epochsStarted += 1
            if e.reason == .conflict { conflicts += 1 }
        case .hubReceived(let r):
            if r.position > feedCursor {
                feedCursor = r.position
                feedCursorDigest = FeedItemDigest.of(kind: r.kind, timeMicroseconds: r.timeUs, payload: r.payload)
            }
            received += 1
        case .hubFeedRewound:
            // Everything is read again; what was taken before is merged, not applied twice.
            feedCursor = 0
            feedCursorDigest = 0
            feedRewinds += 1
        default:
            countIfShared(event.body.kind)
        }
    }

    @inline(__always)
    mutating func countIfShared(_ kind: EventKind) {
        if kind.leavesBox { shareableEvents += 1 }
    }
}
