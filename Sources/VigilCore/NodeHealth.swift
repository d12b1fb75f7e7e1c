import VigilEvents

/// Counters over the whole log: how many events of each kind, how many could not be read,
/// node starts and stops, and the radio's last known state.
public struct NodeHealth: Projection {
    /// Indexed by EventKind raw value; index 0 collects kinds this build does not know.
    /// Indexed by kind number (index 0 counts kinds this build does not know). Grows with the
    /// schema: a checkpoint from an older build has fewer entries.
    public var eventsByKind: [UInt64] = Array(repeating: 0, count: 33)

    /// Retention deletes `count` events of `kind` (counted at the retention event, so the counts
    /// are the same whether or not the deletion has run yet).
    mutating func forget(_ count: UInt64, of kind: EventKind) {
        let k = kind.rawValue
        guard k >= 0, k < eventsByKind.count else { return }
        eventsByKind[k] = eventsByKind[k] > count ? eventsByKind[k] - count : 0
    }

    /// Events of `kind` so far (0 for a kind past the end of an older checkpoint's array).
    public func count(of kind: EventKind) -> UInt64 {
        kind.rawValue >= 0 && kind.rawValue < eventsByKind.count ? eventsByKind[kind.rawValue] : 0
    }
    public var undecodable: UInt64 = 0
    public var unknownKinds: UInt64 = 0
    public var lastUndecodableSequence: UInt64 = 0
    public var starts: UInt64 = 0
    public var stops: UInt64 = 0
    public var nodeID: UInt64 = 0
    public var lastStartMicroseconds: UInt64 = 0
    /// The reason a `RadioStateChanged` gives when the node itself turns the radio off at a stop.
    public static let radioStopReason = "node stopping"
    public var radioState: Int = 0
    public var radioAdapter: String = ""
    public var radioStateSequence: UInt64 = 0
    /// When the radio's state last changed (0 before the first change, or in older checkpoints).
    public var radioStateChangedMicroseconds: UInt64 = 0
    public var firstEventMicroseconds: UInt64 = 0
    public var lastEventMicroseconds: UInt64 = 0
    public var buttonEdges: UInt64 = 0
    /// The last occupancy sample logged (nil before the first; older checkpoints have none).
    public var occupancy: Occupancy?
    /// Times the log was found damaged and salvaged (`LogSalvaged`), and the last of them.
    public var salvages: UInt64 = 0
    public var lastSalvage: Salvage?

    /// What the last salvage kept and lost, for `vigil status`.
    public struct Salvage: Codable, Equatable, Sendable {
        public var sequence: UInt64
        public var timeMicroseconds: UInt64
        public var recovered: UInt64
        public var lostCount: UInt64
        /// The first lost ranges ("120...180, 455"), at most eight, and whether an unknown number
        /// after the highest recovered sequence were lost too.
        public var lost: String
        public var tailUnknown: Bool
        public var keptAside: String
    }

    /// One minute's count of advertisers heard (`OccupancySampled`).
    public struct Occupancy: Codable, Equatable, Sendable {
        public var minuteStartMicroseconds: UInt64
        public var advertisers: UInt32
        public var tags: UInt32
    }

    public init() {}

    public var totalEvents: UInt64 { eventsByKind.reduce(0, +) }

    /// A scan hit read by replay's fast path: the same as `apply` with the event it came from
    /// (a scan hit only counts).
    public mutating func recordScanHit(timeMicroseconds time: UInt64) {
        count(kind: EventKind.scanHit.rawValue, timeMicroseconds: time)
    }

    /// The counters every event moves.
    @inline(__always)
    private mutating func count(kind k: Int, timeMicroseconds time: UInt64) {
        // Only decoded events come here, so `k` is a kind this build knows: an older state's
        // shorter array grows to hold it.
        if k >= eventsByKind.count, k < 256 { eventsByKind += Array(repeating: 0, count: k + 1 - eventsByKind.count) }
        eventsByKind[k >= 0 && k < eventsByKind.count ? k : 0] += 1
        if firstEventMicroseconds == 0 { firstEventMicroseconds = time }
        lastEventMicroseconds = max(lastEventMicroseconds, time)
    }

    public mutating func apply(_ input: ProjectionInput) {
        switch input {
        case .undecodable(let error):
            undecodable += 1
            lastUndecodableSequence = error.sequence
            if case .unknownKind = error.reason { unknownKinds += 1 }
        case .event(let event):
            record(event)
        }
    }

    mutating func record(_ event: Event) {
        count(kind: event.body.kind.rawValue, timeMicroseconds: event.timeMicroseconds)
        switch event.body {
        case .nodeStarted(let started):
            starts += 1
            nodeID = started.nodeID
            lastStartMicroseconds = event.timeMicroseconds
        case .nodeStopped:
            stops += 1
        case .radioStateChanged(let change):
            radioState = change.state.rawValue
            radioAdapter = change.adapter
            radioStateSequence = event.sequence
            radioStateChangedMicroseconds = event.timeMicroseconds
        case .buttonInput:
            buttonEdges += 1
        case .logSalvaged(let s):
            salvages += 1
            let ranges = s.lost.prefix(8).map { $0.first == $0.last ? "\($0.first)" : "\($0.first)...\($0.last)" }
            lastSalvage = Salvage(sequence: event.sequence, timeMicroseconds: event.timeMicroseconds, recovered: s.recovered,
                                  lostCount: s.lostCount, lost: ranges.joined(separator: ", ") + (s.lost.count > 8 ? ", ..." : ""),
                                  tailUnknown: s.tailUnknown, keptAside: s.keptAside)
        case .occupancySampled(let o):
            // The newest in the log (after a clock step back, its minute may be earlier).
            occupancy = Occupancy(minuteStartMicroseconds: o.minuteStartUs, advertisers: o.advertisers, tags: o.tags)
        default:
            break
        }
    }
}
