import VigilBoard
import VigilCore
import VigilLog
import VigilRadio

/// What the loop counts besides the projections.
public struct NodeCounters: Sendable, Codable, Equatable {
    public var reports: UInt64 = 0
    public var appended: UInt64 = 0
    /// Scan hits the log took, in batches or on their own (a batch is one record of many).
    public var scanHitsLogged: UInt64 = 0
    /// Scan records (batches, single hits) and hazard-feed reports shed because the log writer
    /// was over its queue limit.
    public var shed: UInt64 = 0
    /// Events the log refused (full at its cap, or a write error).
    public var refused: UInt64 = 0
    public var checkpoints: UInt64 = 0
    public var radioErrors: UInt64 = 0
    public var boardErrors: UInt64 = 0
}

/// The live part of `vigil status`, answered by a running node over its control socket.
public struct LiveStatus: Sendable, Codable {
    public var nodeID: String
    public var uptimeSeconds: Double
    public var board: String
    public var radio: String
    public var log: LogStatistics
    public var pending: Int
    public var counters: NodeCounters
    public var appliedThrough: UInt64
    public var outputs: [String: Bool]
    public var openWindowAdvertisers: Int
    public var air: AirCounters
    /// Alert frames being advertised ("cancel " prefix for cancels).
    public var onAir: [String]
    public var hci: HCIRadioCounters?
    /// Signed frames and the clock (nil from a node before them).
    public var signing: SigningStatus?
    /// What the hub sync keeps failing at (nil: nothing, or no hub).
    public var hubProblem: String?
    /// The last check of the log this run (nil: none yet): "sound", or what it found.
    public var logCheck: String?
    /// Set when the log stopped taking writes and the node runs on from memory.
    public var fromMemory: FromMemoryStatus?
    /// Set while the log is being checked and opened after an unclean stop (decision 0002).
    public var logOpening: LogOpeningStatus?
    /// GATT links (nil: `connections` is off).
    public var connections: ConnectionsStatus?
    /// Residents' heart-rate sensors (nil: none enrolled).
    public var sensors: [SensorStatus]?
    /// The regional hazard feed (nil: `hazards.feed` has no brokers).
    public var hazardFeed: HazardFeedStatus?
    /// The alarm receiving centre's link (nil: no `arc:`).
    public var alarmCentre: AlarmCentreStatus?
    /// Webhook callbacks this run (nil: none came).
    public var webhookCallbacks: WebhookCallbackStatus?
    /// The notifier's self-test (nil: no `calls.test_to`).
    public var notifierTest: NotifierTestStatus?
    /// Why the box cannot call for help now (the centre's link, a failed self-test); nil: no path
    /// is known to fail.
    public var callPathProblem: String?
    /// Public warnings feeds (nil: no `warnings.feeds`).
    public var warningFeeds: [WarningFeedStatus]? = nil
}

/// The box's GATT links, as `vigil status` shows them.
public struct ConnectionsStatus: Sendable, Codable, Equatable {
    /// Listening for links on the adapter's ATT channel.
    public var serving: Bool
    /// The peers linked now ("AA:BB:CC:DD:EE:FF", "/random" after a random address).
    public var links: [String]
    public var maximumLinks: Int
    /// The box's own chat link (`vigil chat connect`): its peer, and "ready" or "connecting".
    public var chatLink: String?
    public var counters: ConnectionCounters
}

/// A node running from memory, as `vigil status` shows it.
public struct FromMemoryStatus: Sendable, Codable, Equatable {
    /// When the log failed (µs since the epoch) and why.
    public var sinceMicroseconds: UInt64
    public var failure: String
    /// Events taken in memory (not stored), and how many of them were critical.
    public var events: UInt64
    public var critical: UInt64
}

public enum VigilVersion {
    public static let current = "0.1.0"
}

extension Node {
    /// Callbacks taken and refused, the page's refusals of malformed ones included; nil: none came.
    var webhookCallbackStatus: WebhookCallbackStatus? {
        var status = control.callbacks
        let malformed = malformedCallbacks.withLock { $0 }
        if malformed > 0 {
            status.refused &+= malformed
            if status.lastRefusal == nil { status.lastRefusal = "malformed (refused by the page)" }
        }
        return status == WebhookCallbackStatus() ? nil : status
    }

    /// The live status, read on the loop (the control handler runs there).
    public func liveStatus() -> LiveStatus {
        loop.owner.check("liveStatus")
        return LiveStatus(
            nodeID: String(nodeID, radix: 16), uptimeSeconds: uptimeSeconds,
            board: board.profile.name, radio: radio.name, log: log.statistics, pending: pending.count,
            counters: counters, appliedThrough: projections.appliedThrough,
            outputs: (board as? SimulatedBoard).map { b in
                Dictionary(uniqueKeysWithValues: OutputLine.allCases.map { ($0.rawValue, b.level($0)) })
            } ?? [:],
            openWindowAdvertisers: intake.scanWindow.pendingAdvertisers, air: airAlerts.air.counters,
            onAir: airAlerts.onAirDescriptions, hci: (radio as? HCIRadio)?.counters, signing: airAlerts.signingStatus,
            hubProblem: uplink.problems.summary,
            logCheck: logIntegrity.last,
            fromMemory: fromMemory.map { FromMemoryStatus(sinceMicroseconds: $0.since, failure: $0.failure, events: $0.taken, critical: $0.criticalTaken) },
            logOpening: opening.map { LogOpeningStatus(seconds: Double(monotonic.nowNanoseconds() &- $0.startedNanoseconds) / 1e9,
                                                       held: $0.held.count) },
            connections: connections.status,
            sensors: { let s = heartRateSensors.status; return s.isEmpty ? nil : s }(),
            hazardFeed: hazardFeed.status,
            alarmCentre: configuration.alarmCentre == nil ? nil : alarmCentre.status,
            webhookCallbacks: webhookCallbackStatus,
            notifierTest: notifierTest.configured ? notifierTest.status : nil,
            callPathProblem: callPathProblem,
            warningFeeds: configuration.warningFeeds.isEmpty ? nil : warningFeeds.status)
    }
}

/// A start checking and opening its log while the loop already runs (`LogOpening`).
public struct LogOpeningStatus: Sendable, Codable, Equatable {
    /// Since the process started.
    public var seconds: Double
    /// Events taken meanwhile, to be appended to the log once it is open.
    public var held: Int
}
