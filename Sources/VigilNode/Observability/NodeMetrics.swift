import CoreMetrics
import VigilCore
import VigilEvents
import VigilRadio

/// The node's metrics (docs/page.md "Metrics"), recorded through swift-metrics' API: `vigil run` hands
/// them to Prometheus's registry and the page serves them at `/metrics`; with no factory they
/// cost a call to a no-op.
///
/// Recorded where things happen (each event appended, by kind; the time from append to durable
/// ack; each ladder step), and every second from the counters the node keeps already (commits,
/// flushes, shed, refused, frames heard, HCI errors, radio state, backlogs), as deltas, so the
/// counters only ever rise. On the loop.
final class NodeMetrics: NodeComponent {
    /// What the other components report, read at each sample (the node gathers it: a component
    /// never reaches another, decision 0008).
    struct Readings {
        var commits: UInt64 = 0
        var flushes: UInt64 = 0
        var shed: UInt64 = 0
        var refused: UInt64 = 0
        /// The HCI radio's hardware errors and command timeouts (0 for another radio).
        var hciErrors: UInt64 = 0
        /// Alert frames, by outcome (`frameOutcomes`).
        var frames: [String: UInt64] = [:]
        /// Nil when the hazard feed is off.
        var hazardFeed: HazardFeedStatus?
        /// Nil when no alarm centre is configured.
        var alarmCentre: AlarmCentreStatus?
        /// Nil when no notifier self-test is configured; else whether it passes.
        var notifierTestPasses: Bool?
        var callbacksTaken: UInt64 = 0
        var callbacksRefused: UInt64 = 0
        var hubJoined = false
    }

    unowned let context: any NodeContext
    private let factory: any MetricsFactory
    private let readings: () -> Readings
    static let timer = Scheduler.Timer("metrics-sample")
    static let sampleNanoseconds: UInt64 = 1_000_000_000

    private var appendedByKind: [Int: Counter] = [:]
    private let ackLatency: CoreMetrics.Timer
    private var ladderSteps: [Int: Counter] = [:]
    private let commits, flushes, shed, refused, hciErrors: Counter
    private let frames: [String: Counter]
    private let radioUp, outboxBacklog, hubBacklog, appliedThrough, residentsEscalating, activeAlerts, feedConnected: Gauge
    /// Public warnings (docs/warnings.md): in force here, by level; whether one's tone sounds.
    private let warningsHere: [String: Gauge]
    private let warningSounding: Gauge
    /// Calls for help (docs/calls-for-help.md): open, unanswered, the oldest unanswered one's age.
    private let callsOpen, callsUnanswered, oldestUnansweredSeconds: Gauge
    /// The alarm centre's link: 1 while its last exchange was acknowledged (or none failed yet);
    /// what its receivers did, by outcome.
    private let alarmCentreUp: Gauge
    private let notifierTestUp: Gauge
    private let alarmCentre: [String: Counter]
    private let callbacks: [String: Counter]
    /// The hazard feed's counters (DriveAZ's debug figures), by what happened to each message.
    private let feed: [String: Counter]
    /// What the counters had reached at the last sample.
    private var last = Sampled()

    struct Sampled {
        var commits: UInt64 = 0, flushes: UInt64 = 0, shed: UInt64 = 0, refused: UInt64 = 0, hciErrors: UInt64 = 0
        var frames: [String: UInt64] = [:]
        var feed: [String: UInt64] = [:]
        var alarmCentre: [String: UInt64] = [:]
        var callbacks: [String: UInt64] = [:]
    }

    init(context: any NodeContext, factory: any MetricsFactory, readings: @escaping () -> Readings) {
        self.context = context
        self.factory = factory
        self.readings = readings
        func counter(_ label: String, _ dimensions: [(String, String)] = []) -> Counter {
            Counter(label: label, dimensions: dimensions, factory: factory)
        }
        func gauge(_ label: String) -> Gauge { Gauge(label: label, dimensions: [], factory: factory) }
        ackLatency = CoreMetrics.Timer(label: "vigil_log_ack_latency_seconds", dimensions: [], factory: factory)
        commits = counter("vigil_log_commits_total")
        flushes = counter("vigil_log_flushes_total")
        shed = counter("vigil_scan_records_shed_total")
        refused = counter("vigil_events_refused_total")
        hciErrors = counter("vigil_hci_errors_total")
        frames = Dictionary(uniqueKeysWithValues: Self.frameOutcomes.map {
            ($0, counter("vigil_alert_frames_total", [("outcome", $0)]))
        })
        radioUp = gauge("vigil_radio_up")
        outboxBacklog = gauge("vigil_outbox_backlog_messages")
        hubBacklog = gauge("vigil_hub_backlog_events")
        appliedThrough = gauge("vigil_log_applied_sequence")
        residentsEscalating = gauge("vigil_residents_escalating")
        activeAlerts = gauge("vigil_alerts_active")
        feedConnected = gauge("vigil_hazard_feed_connected")
        warningsHere = Dictionary(uniqueKeysWithValues: ["listed", "shown", "sounds"].map {
            ($0, Gauge(label: "vigil_public_warnings_here", dimensions: [("level", $0)], factory: factory))
        })
        warningSounding = gauge("vigil_public_warning_sounding")
        callsOpen = gauge("vigil_calls_open")
        callsUnanswered = gauge("vigil_calls_unanswered")
        oldestUnansweredSeconds = gauge("vigil_call_oldest_unanswered_seconds")
        alarmCentreUp = gauge("vigil_alarm_centre_up")
        notifierTestUp = gauge("vigil_notifier_test_up")
        alarmCentre = Dictionary(uniqueKeysWithValues: Self.alarmCentreOutcomes.map {
            ($0, counter("vigil_alarm_centre_replies_total", [("outcome", $0)]))
        })
        callbacks = Dictionary(uniqueKeysWithValues: ["taken", "refused"].map {
            ($0, counter("vigil_webhook_callbacks_total", [("outcome", $0)]))
        })
        feed = Dictionary(uniqueKeysWithValues: Self.feedOutcomes.map { ($0, counter("vigil_hazard_feed_messages_total", [("outcome", $0)])) })
    }

    static let feedOutcomes = ["psm", "tim", "other", "undecodable-psm", "undecodable-tim", "unknown-topic", "logged", "coalesced", "shed",
                               "ignored", "sent", "send-failed"]

    static let frameOutcomes = ["accepted", "duplicate", "forged", "stale", "malformed", "own-echo", "relayed", "forged-certificate", "revoked",
                                "impersonation", "too-old", "shed", "unsigned", "over-rate", "public-warning"]

    /// The air link's counters by outcome, with the relays begun.
    static func frameFigures(_ air: AirCounters, relaysStarted: UInt64) -> [String: UInt64] {
        ["accepted": air.accepted, "duplicate": air.duplicates, "forged": air.forged, "stale": air.stale,
         "malformed": air.malformed, "own-echo": air.ownEchoes, "relayed": relaysStarted,
         "forged-certificate": air.forgedCertificates, "revoked": air.revoked, "impersonation": air.impersonations,
         "too-old": air.tooOld, "shed": air.shed, "unsigned": air.unsigned, "over-rate": air.overRate,
         "public-warning": air.warnings]
    }

    static let alarmCentreOutcomes = ["ack", "nak", "duh", "garbage", "silent", "closed", "unreachable"]

    static func alarmCentreFigures(_ s: AlarmCentreStatus) -> [String: UInt64] {
        ["ack": s.acknowledged, "nak": s.negative, "duh": s.notUnderstood, "garbage": s.garbage, "silent": s.silent,
         "closed": s.closed, "unreachable": s.unreachable]
    }

    static func feedFigures(_ k: HazardFeedCounters) -> [String: UInt64] {
        ["psm": k.receivedPSM, "tim": k.receivedTIM, "other": k.receivedOther, "undecodable-psm": k.undecodablePSM,
         "undecodable-tim": k.undecodableTIM, "unknown-topic": k.unknownTopics, "logged": k.logged, "coalesced": k.coalesced,
         "shed": k.shed, "ignored": k.ignored, "sent": k.sent, "send-failed": k.sendFailures]
    }

    func start() throws(NodeError) {
        context.scheduler.register(Self.timer) { [unowned self] in
            sample()
            context.scheduler.schedule(Self.timer, afterNanoseconds: Self.sampleNanoseconds)
        }
        sample()
        context.scheduler.schedule(Self.timer, afterNanoseconds: Self.sampleNanoseconds)
    }

    func stop() {
        context.scheduler.cancel(Self.timer)
        sample()
    }

    /// An event was appended (before it is durable).
    func appended(_ kind: EventKind) {
        let raw = kind.rawValue
        if let c = appendedByKind[raw] { c.increment(); return }
        // A bounded set: one counter per kind this version knows (and one for the rest).
        let name = EventKind.known.contains(kind) ? kind.name : "unknown"
        let c = Counter(label: "vigil_events_appended_total", dimensions: [("kind", name)], factory: factory)
        appendedByKind[raw] = c
        c.increment()
    }

    /// An event became durable `nanoseconds` after it was appended.
    func acknowledged(afterNanoseconds nanoseconds: UInt64) {
        ackLatency.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    func applied(_ event: Event) {
        guard case .deadlineReached(let d) = event.body else { return }
        let step = d.step.rawValue
        let c = ladderSteps[step] ?? {
            let made = Counter(label: "vigil_ladder_steps_total", dimensions: [("step", NodeSnapshot.name(d.step))], factory: factory)
            ladderSteps[step] = made
            return made
        }()
        c.increment()
    }

    /// The node's own counters, as deltas of what they had reached.
    private func sample() {
        let r = readings()
        var now = Sampled(commits: r.commits, flushes: r.flushes, shed: r.shed, refused: r.refused, hciErrors: r.hciErrors)
        now.frames = r.frames
        func add(_ counter: Counter, _ new: UInt64, _ old: UInt64) {
            if new > old { counter.increment(by: Int64(clamping: new - old)) }
        }
        add(commits, now.commits, last.commits)
        add(flushes, now.flushes, last.flushes)
        add(shed, now.shed, last.shed)
        add(refused, now.refused, last.refused)
        add(hciErrors, now.hciErrors, last.hciErrors)
        for (outcome, counter) in frames { add(counter, now.frames[outcome] ?? 0, last.frames[outcome] ?? 0) }
        if let status = r.hazardFeed {
            now.feed = Self.feedFigures(status.counters)
            for (outcome, counter) in feed { add(counter, now.feed[outcome] ?? 0, last.feed[outcome] ?? 0) }
            feedConnected.record(status.connected ? 1 : 0)
        }
        if let status = r.alarmCentre {
            now.alarmCentre = Self.alarmCentreFigures(status)
            for (outcome, counter) in alarmCentre { add(counter, now.alarmCentre[outcome] ?? 0, last.alarmCentre[outcome] ?? 0) }
            alarmCentreUp.record(status.problem == nil ? 1 : 0)
        }
        if let passes = r.notifierTestPasses { notifierTestUp.record(passes ? 1 : 0) }
        now.callbacks = ["taken": r.callbacksTaken, "refused": r.callbacksRefused]
        for (outcome, counter) in callbacks { add(counter, now.callbacks[outcome] ?? 0, last.callbacks[outcome] ?? 0) }
        last = now

        let p = context.projections
        radioUp.record(p.health.radioState == RadioState.on.rawValue ? 1 : 0)
        outboxBacklog.record(p.outbox.pending.count { $0.channel != .broadcast })
        // What the box tells its hub as its backlog: log positions no acknowledgement covers yet.
        hubBacklog.record(p.hub.hub.isEmpty && !r.hubJoined ? 0 : Int64(clamping: p.appliedThrough &- min(p.appliedThrough, p.hub.syncedThrough)))
        appliedThrough.record(Int64(clamping: p.appliedThrough))
        residentsEscalating.record(p.escalations.residents.values.count { $0.isEscalating || $0.step >= 3 })
        activeAlerts.record(p.alerts.active.count)
        let here = p.warnings.inForceHere
        for (level, g) in warningsHere { g.record(here.count { $0.level.rawValue == level }) }
        warningSounding.record(OutputPolicy.soundingWarnings(p).isEmpty ? 0 : 1)
        let open = p.calls.open
        let unanswered = open.filter(\.isUnanswered)
        callsOpen.record(open.count)
        callsUnanswered.record(unanswered.count)
        let nowUs = context.clock.nowMicroseconds()
        oldestUnansweredSeconds.record(Int64(clamping: unanswered.map { nowUs &- min(nowUs, $0.startedMicroseconds) }.max().map { $0 / 1_000_000 } ?? 0))
    }
}
