/// The hazard feed's counters and status, as `vigil status`, `/metrics` and the page read them.

/// What the hazard feed counted since the node started (DriveAZ's debug screen, and more).
public struct HazardFeedCounters: Sendable, Codable, Equatable {
    /// Messages on the feed's topics, whatever they held.
    public var received: UInt64 = 0
    public var receivedPSM: UInt64 = 0
    public var receivedTIM: UInt64 = 0
    /// Sound frames of kinds the box does not read (a BSM, a MAP).
    public var receivedOther: UInt64 = 0
    public var undecodablePSM: UInt64 = 0
    public var undecodableTIM: UInt64 = 0
    /// Topics outside DriveAZ's grammar.
    public var unknownTopics: UInt64 = 0
    /// Decoded, but nothing the projection holds: no position, an animal, a TIM that is neither a
    /// work zone nor a queue, a zone not started or already over, the box's own PSM.
    public var ignored: UInt64 = 0
    /// `HazardReported` appended.
    public var logged: UInt64 = 0
    /// Repeats not logged by design: a road user's within a second of its last, a zone's unchanged.
    public var coalesced: UInt64 = 0
    /// Reports dropped under load: too many still on their way to the card, or the log shed them.
    public var shed: UInt64 = 0
    /// The most reports on their way to the card at once, this run.
    public var maximumInFlight: Int = 0
    /// PSMs sent (VRU mode) and sends that failed.
    public var sent: UInt64 = 0
    public var sendFailures: UInt64 = 0
    public var connects: UInt64 = 0
    public var connectFailures: UInt64 = 0
    public var disconnects: UInt64 = 0
    public var failovers: UInt64 = 0
    /// Subscriptions the broker refused (a vendor channel this box's certificate may not read).
    public var subscriptionsRefused: UInt64 = 0
}

/// A message the feed saw, for the debug list (newest first).
public struct FeedSighting: Sendable, Codable, Equatable {
    /// "PSM", "TIM", "frame 20", or "PSM (undecodable)".
    public var type: String
    public var id: String
    public var timeMicroseconds: UInt64
}

/// The feed as `vigil status` and the page show it.
public struct HazardFeedStatus: Sendable, Codable, Equatable {
    public var connected: Bool
    /// Connected, and every subscription answered by the broker.
    public var subscribed: Bool
    /// "NAME (HOST:PORT)": the broker in use or being tried.
    public var broker: String?
    /// "connected", "connecting", "retrying in 4 s".
    public var state: String
    public var lastError: String?
    /// Sending PSMs for the people at the box now.
    public var vruActive: Bool
    public var counters: HazardFeedCounters
    public var seen: [FeedSighting]
}
