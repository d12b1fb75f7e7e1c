import CoreMetrics
import Logging
import VigilBoard
import VigilCore
import VigilEvents
import VigilHubProtocol
import VigilLog
import VigilRadio
import VigilSystem

/// A running Vigil node: one event loop on one thread owns all state.
///
/// The node itself does three things: it appends events, applies them to the projections once
/// the log reports them durable, and drives the outputs from the projections. Everything else is
/// a `NodeComponent` with one job (ARCHITECTURE.md lists them): the radio intake, alerts over the
/// air, the buttons, the ladder, deliveries, retention, checkpoints and the control socket.
///
/// Flow of an event: a component appends it → it waits in `pending` → the writer commits it
/// durably and reports through an eventfd → the node applies it to the projections, tells the
/// components, and reconciles outputs. So projections, outputs and checkpoints only ever
/// reflect durable events.
public final class Node: @unchecked Sendable {
    public let configuration: NodeConfiguration
    public let nodeID: UInt64
    let clock: any WallClock
    let monotonic: any MonotonicClock
    let logger: Logger
    /// The log: a scratch one while a start checks and opens the real one (`LogOpening`), then
    /// the real one. Loop-owned once the loop runs.
    private(set) var log: EventLog
    private let lockFile: FileDescriptor
    public let radio: any RadioAdapter
    public let board: any BoardAdapter
    /// Signs and checks the take links of messages to webhooks (`WebhookCallbackRule`).
    let callbackKey: CallbackKey
    let loop: EventLoop
    let scheduler: Scheduler

    // Loop-owned state.
    public internal(set) var projections: Projections
    var pending = PendingEvents()
    public internal(set) var counters = NodeCounters()
    private(set) var stopping = false
    private var finished = false
    private var startedMonotonic: UInt64 = 0
    private(set) var patterns = PatternDriver()
    /// Set when the node cannot go on safely (the log failed, the button died, the loop's own
    /// timer or epoll failed); `run` then stops and throws it, so the process exits non-zero and
    /// systemd restarts it from disk.
    private var fatal: NodeError?
    /// Waiting for nothing to be pending (`whenSettled`).
    private var settledWaiters: [@Sendable (Node) -> Void] = []
    private var stateWaiters: [(holds: @Sendable (Node) -> Bool, done: @Sendable (Node) -> Void)] = []

    // The components. Lazy because each holds the node, which exists only once every stored
    // property is set; `init` makes them all, in this order, before returning.
    private let initialAir: AirLink
    private(set) lazy var intake = RadioIntake(context: self, radio: radio, airAlerts: airAlerts,
                                               scanWindowMicroseconds: configuration.scanWindowMicroseconds,
                                               vigilUUID: configuration.airAlerts.serviceUUID)
    private(set) lazy var airAlerts: AirAlerts = AirAlerts(context: self, air: initialAir, settings: configuration.airAlerts,
                                                dataDirectory: configuration.dataDirectory, radio: radio, deliveries: deliveries,
                                                connectableAdvertisement: { [unowned self] in connections.connectableAdvertisement })
    private(set) lazy var buttons = Buttons(context: self, board: board, gestures: configuration.gestures,
                                            sosExpiryMicroseconds: configuration.sosExpiryMicroseconds,
                                            readFailed: { [unowned self] in counters.boardErrors += 1 })
    private(set) lazy var ladder = LadderScheduler(context: self)
    private(set) lazy var expiries = Expiries(context: self)
    private(set) lazy var hazardClock = HazardClock(context: self)
    private(set) lazy var callClock = CallClock(context: self)
    private(set) lazy var smsInbox = SMSInbox(context: self, settings: configuration.smsInbox,
                                              interpreter: { [unowned self] in control.interpreter })
    private(set) lazy var deliveries = Deliveries(context: self, notifier: configuration.notifier, callbackKey: callbackKey,
                                                  publicURL: configuration.http.publicURL)
    private(set) lazy var alarmCentre = AlarmCentreLink(context: self, settings: configuration.alarmCentre)
    private(set) lazy var notifierTest = NotifierSelfTest(context: self, settings: .init(
        recipients: configuration.callTestRecipients, everyMicroseconds: configuration.callTestEveryMicroseconds,
        notifier: configuration.notifier, siteName: configuration.projections.ladder.siteName))
    private(set) lazy var retention = Retention(context: self, firstCheckMicroseconds: configuration.exposure.retentionFirstCheckMicroseconds,
                                                   keepMicroseconds: configuration.exposure.contacts.retentionMicroseconds)
    private(set) lazy var compaction = Compaction(context: self, afterMicroseconds: configuration.compactAfterMicroseconds,
                                                  tags: configuration.exposure.contacts.tags)
    private(set) lazy var checkpoints = Checkpoints(context: self, intervalMicroseconds: configuration.checkpointIntervalMicroseconds,
                                                       everyEvents: configuration.checkpointEveryEvents)
    private(set) lazy var control = ControlHandler(
        context: self,
        settings: .init(dataDirectory: configuration.dataDirectory, alarmCentreConfigured: configuration.alarmCentre != nil,
                        maxAlertLifetimeMicroseconds: configuration.airAlerts.maxLifetimeMicroseconds),
        targets: .init(connections: connections, chatCentral: chatCentral, alarmCentre: alarmCentre, notifierTest: notifierTest, uplink: uplink,
                       board: board, callbackKey: callbackKey, hasShelterKey: { [unowned self] in airAlerts.hasKey },
                       liveStatus: { [unowned self] in liveStatus() }, opening: { [unowned self] in opening }))
    private(set) lazy var downtime = DowntimeReport(context: self, reportAfterMicroseconds: configuration.downtimeReportAfterMicroseconds)
    private(set) lazy var zones = TimeZoneWatch(context: self, refreshLadderContext: { [unowned self] in refreshLadderContext() })
    private(set) lazy var uplink = HubUplink(
        context: self,
        settings: .init(dataDirectory: configuration.dataDirectory,
                        site: (configuration.projections.ladder.siteName, configuration.projections.ladder.siteLocation),
                        policy: SharePolicy(shareContacts: configuration.hubShareContacts, shareOccupancy: configuration.hubShareOccupancy),
                        exposure: configuration.exposure),
        heardTime: { [weak self] microseconds in self?.onLoop { $0.airAlerts.hubTime(microseconds) } },
        problemsChanged: { [weak self] in self?.onLoop { $0.recheckState() } })
    private(set) lazy var occupancy = OccupancySampler(context: self)
    private(set) lazy var logIntegrity = LogIntegrity(context: self, settings: .init(executable: configuration.logCheckExecutable,
                                                                                     dataDirectory: configuration.dataDirectory,
                                                                                     intervalMicroseconds: configuration.logCheckIntervalMicroseconds))
    private(set) lazy var serviceManager = ServiceNotifications(context: self, settings: configuration.serviceManager)
    private(set) lazy var publisher = SnapshotPublisher(context: self, feed: snapshots, outputs: { [unowned self] in patterns.decisions },
                                                        snapshot: { [unowned self] in snapshot() })
    private(set) lazy var linkLedger = LinkLedger(context: self)
    private var linkAdapter: LinkAdapter { LinkAdapter(radio: configuration.radio, channel: configuration.hci.channel) }
    private(set) lazy var connections: GATTLinks = GATTLinks(context: self, settings: configuration.connections, adapter: linkAdapter, ledger: linkLedger,
                                                  chatCentral: chatCentral,
                                                  connectionsChanged: { [unowned self] in airAlerts.connectionsChanged() })
    private(set) lazy var chatCentral = ChatCentral(context: self, settings: configuration.connections, adapter: linkAdapter, ledger: linkLedger)
    private(set) lazy var heartRateSensors = HeartRateSensors(context: self, settings: configuration.connections, adapter: linkAdapter,
                                                              ledger: linkLedger, dataDirectory: configuration.dataDirectory)
    private(set) lazy var hazardFeed = HazardFeed(context: self, settings: configuration.hazardFeed, dataDirectory: configuration.dataDirectory,
                                                  configuredSite: configuration.projections.hazardSite)
    private(set) lazy var metrics = NodeMetrics(context: self, factory: configuration.metrics ?? MetricsSystem.factory,
                                                 readings: { [unowned self] in metricsReadings() })
    /// Snapshots for servers beside the loop (the box's page); built once one asks.
    public let snapshots = SnapshotFeed()
    /// Set once the log stopped taking writes: the node runs on from memory (`RunningFromMemory`).
    private(set) var fromMemory: RunningFromMemory?
    /// The log could not be written from the start (a read-only card): a restart cannot help,
    /// so the node never exits for one.
    private var logUnwritableAtStart = false
    static let fromMemoryTimer = Scheduler.Timer("log-failed-restart")
    /// What the salvage at this start did, logged first once the loop runs.
    private var salvagedAtStart: SalvageReport?
    /// In the order they start, hear events and stop.
    private var components: [any NodeComponent] = []
    /// The components running: all of them, or before the log is open only those that
    /// `runsBeforeLogOpen`.
    private var active: [any NodeComponent] = []
    /// Set while this start checks and opens its log off the loop (decision 0002).
    private(set) var opening: LogOpening?
    /// After the log is taken over, the last event carried into it: outputs and effects wait
    /// until it is applied, so they never reflect the restored state without what happened
    /// before the open (red does not blink off between the two).
    private var carriedThrough: UInt64?
    /// Events from before the open are being carried into the log and are not all applied:
    /// effects (messages, reports, outputs) wait, or they would act on half a state.
    var isCarrying: Bool { carriedThrough != nil }
    /// The highest alert counter used here, kept outside the log (`AlertCounterFloor`).
    private var alertFloor: AlertCounterFloor
    /// Appended as sheddable by their component (the hazard feed's reports) and not yet
    /// durable or refused: a refusal of one is not a critical event's.
    private var sheddableAppended = Set<UInt64>()

    // Crossing threads.
    /// Filled by the log's writer thread, emptied by the loop.
    private final class CommitInbox: Sendable {
        let reports = LockedValue<[CommitReport]>([])
    }
    private let commitInbox = CommitInbox()
    private let stopRequest = LockedValue<String?>(nil)
    /// Webhook callbacks the page refused before they reached the loop (`noteMalformedCallback`).
    let malformedCallbacks = LockedValue<UInt64>(0)
    /// The real log for threads beside the loop (the page's time travel); nil while a start is
    /// opening it (`LogOpening`). `log` itself is the loop's.
    let openLog = LockedValue<EventLog?>(nil)

    static let stopTimer = Scheduler.Timer("stop-after-duration")
    static let patternTimer = Scheduler.Timer("output-pattern")

    /// Opens the data directory (taking its lock), the log, and restores the projections from the
    /// checkpoint plus the log's tail. Nothing runs until `run()`.
    ///
    /// `clock` gives event times; `monotonic` every wait and measurement. A test passes one
    /// `ManualClock` as both and advances it instead of sleeping.
    public init(configuration: NodeConfiguration, clock: any WallClock = SystemClock(),
                monotonic: any MonotonicClock = SystemMonotonicClock(), logger: Logger,
                radio: (any RadioAdapter)? = nil, board: (any BoardAdapter)? = nil) throws(NodeError) {
        self.configuration = configuration
        self.clock = clock
        self.monotonic = monotonic
        self.logger = logger
        ignoreBrokenPipes()
        ignoreFileSizeSignal()
        lockFile = try NodeBootstrap.lockDataDirectory(configuration.dataDirectory)
        let boot: NodeBootstrap
        do {
            boot = try NodeBootstrap(configuration: configuration, clock: clock, monotonic: monotonic, logger: logger,
                                     radio: radio, board: board)
        } catch {
            lockFile.unlock()
            throw error
        }
        nodeID = boot.nodeID
        self.radio = boot.radio
        self.board = boot.board
        callbackKey = boot.callbackKey
        // The failure path needs `self`, which exists only once every stored property is set:
        // until then failures are collected here and handed over below.
        let failures = FailureRelay()
        do {
            loop = try EventLoop { what, error in failures.report(what, error) }
            scheduler = try Scheduler(clock: monotonic) { what, error in failures.report(what, error) }
        } catch {
            lockFile.unlock()
            throw .system(error)
        }
        let onDurable = Self.durableReports(to: commitInbox, waking: loop)
        alertFloor = AlertCounterFloor(directory: configuration.dataDirectory)
        // A start that must check its log first runs on a scratch log meanwhile (`LogOpening`);
        // one that cannot make a scratch log (a full card) opens the log before the loop, as
        // every start once did.
        var opening: LogOpening?
        let checkWasDue = LogOpening.isDue(directory: configuration.dataDirectory)
        if checkWasDue {
            do {
                opening = try LogOpening(configuration: configuration, startedNanoseconds: monotonic.nowNanoseconds(), onDurable: onDurable)
            } catch {
                logger.warning("no scratch log: the log is checked and opened before the button works", metadata: ["error": "\(error)"])
            }
        }
        if let opening {
            log = opening.scratch
            self.opening = opening
        } else {
            do {
                (log, salvagedAtStart) = try LogRecovery.open(configuration, logger: logger, onDurable: onDurable)
            } catch {
                lockFile.unlock()
                throw error
            }
        }
        projections = Projections(settings: configuration.projections)
        logUnwritableAtStart = log.failure != nil
        initialAir = boot.air
        failures.target = self
        components = [intake, airAlerts, buttons, ladder, expiries, hazardClock, callClock, smsInbox, deliveries, alarmCentre, notifierTest, retention, compaction, checkpoints, control, downtime, zones, occupancy, uplink, logIntegrity, serviceManager, publisher, connections, chatCentral, heartRateSensors, hazardFeed, metrics]
        active = opening == nil ? components : components.filter(\.runsBeforeLogOpen)
        if opening != nil {
            // Nothing restored yet: the settings, and alert counters above any the log holds.
            Self.configure(&projections, configuration)
            pending.alertCounterFloor = alertFloor.floor(logExists: true)
            return
        }
        do {
            try restore()
        } catch {
            log.close()
            lockFile.unlock()
            throw .log(error)
        }
        openLog.withLock { $0 = log }
        // After an unclean stop the log may lack alerts raised just before it, salvaged or not.
        keepAlertCountersAboveTheFloor()
    }

    /// After a restore: the floor covers the log's counters, and counters continue above both.
    /// The floor is never lowered to the log's highest, even after a start that looks clean: a
    /// counter written here whose alert never became durable (a crash after the start's check
    /// had passed and cleared its mark) is in no log, and lowering the floor would give it out
    /// again. A reserved block skipped is a gap, never a repeat.
    /// Nothing is written when the file covers the log, or when neither has a counter (a box
    /// that raised nothing keeps counting from 1). A missing file with counters in the log (a
    /// write that failed removes it) reserves a block above them, as a first alert would.
    private func keepAlertCountersAboveTheFloor() {
        let highest = projections.alerts.highestCounterRaisedHere
        if (alertFloor.stored ?? 0) < highest { recordAlertFloor(highest) }
        pending.alertCounterFloor = max(highest, alertFloor.stored ?? 0)
    }

    /// The log writer's reports, handed to the loop.
    private static func durableReports(to inbox: CommitInbox, waking loop: EventLoop) -> @Sendable (CommitReport) -> Void {
        { report in
            inbox.reports.withLock { $0.append(report) }
            loop.wake()
        }
    }

    // MARK: Thread-safe entry points

    /// Asks the loop to stop: it flushes the scan window, logs NodeStopped, waits until everything
    /// is durable, writes a checkpoint and returns from `run()`. Safe from any thread or signal
    /// handler task.
    public func requestStop(reason: String) {
        stopRequest.withLock { if $0 == nil { $0 = reason } }
        loop.wake()
    }

    /// Runs `work` on the loop thread (tests and servers beside the loop use this to read state).
    public func onLoop(_ work: @escaping @Sendable (Node) -> Void) {
        loop.perform { [unowned self] in work(self) }
    }

    /// Calls `done` on the loop once everything appended so far, and everything that followed
    /// from it (timers that were due, reconciling), is durable and applied. Tests wait on this,
    /// after injecting input or advancing a manual clock, instead of sleeping.
    public func whenSettled(_ done: @escaping @Sendable (Node) -> Void) {
        onLoop { node in node.settledWaiters.append(done) }
    }

    /// Calls `done` on the loop once `holds` is true of the node's state: at once if it is, else
    /// after the batch of durable events that makes it so. Event-driven (the state changes only
    /// when events are applied); tests of things beside the loop (the hub sync) wait on this.
    public func whenState(_ holds: @escaping @Sendable (Node) -> Bool, _ done: @escaping @Sendable (Node) -> Void) {
        onLoop { node in
            if holds(node) { done(node) } else { node.stateWaiters.append((holds, done)) }
        }
    }

    /// The projections as they will be once every event appended so far is applied: what an
    /// event appended now follows (a compaction's or a retention's device list, `DeviceStays`,
    /// and the tallies it is checked against). A copy: the loop's own state moves only with
    /// durable events. On the loop.
    func projectedState() -> Projections {
        loop.owner.check("projectedState")
        var state = projections
        for event in pending.elements where event.sequence > state.appliedThrough { state.apply(event) }
        return state
    }

    /// Something beside the loop changed what `whenState` conditions read (the hub sync's
    /// problems): they are asked again. On the loop.
    func recheckState() { callStateWaiters() }

    private func callStateWaiters() {
        guard !stateWaiters.isEmpty else { return }
        var waiting: [(holds: @Sendable (Node) -> Bool, done: @Sendable (Node) -> Void)] = []
        for w in stateWaiters {
            if w.holds(self) { w.done(self) } else { waiting.append(w) }
        }
        stateWaiters = waiting
    }

    private func callSettledWaiters() {
        // A timer already due (armed at once, say a window that closed while its report was on
        // its way) runs on the next turn: not settled until it has.
        // Nor while the log is being checked and opened beside the loop (`LogOpening`).
        guard !settledWaiters.isEmpty, pending.isEmpty, finished || (!scheduler.hasDue && opening == nil && carriedThrough == nil) else { return }
        let waiters = settledWaiters
        settledWaiters.removeAll()
        for w in waiters { w(self) }
    }

    // MARK: The loop

    /// Runs the node on the calling thread until stopped. Throws when the node had to stop
    /// because it could not go on safely; problems with single events are logged and counted.
    public func run(duration: UInt64? = nil) throws(NodeError) {
        loop.owner.claim()
        defer { loop.owner.release() }
        // The loop before the page, the hub sync and the rest of the process on a busy box, when
        // configured (`scheduling.loop_nice`; docs/page.md "The box's page").
        if let nice = configuration.loopNice {
            do {
                try setThreadNice(nice)
            } catch {
                logger.warning("the loop runs at the default scheduling weight (raising it needs CAP_SYS_NICE)", metadata: ["error": "\(error)"])
            }
        }
        startedMonotonic = monotonic.nowNanoseconds()
        scheduler.register(Self.stopTimer) { [unowned self] in requestStopOnLoop("duration elapsed") }
        scheduler.register(Self.patternTimer) { [unowned self] in driveOutputs() }
        guard loop.watch(scheduler.timer.fd, "the loop's timer", handler: { [unowned self] _ in scheduler.fireDue() }) else {
            shutdownAfterFailure()
            throw fatal ?? .unsupported("the loop's timer cannot be watched")
        }
        if let duration { scheduler.schedule(Self.stopTimer, afterNanoseconds: duration &* 1_000) }
        do {
            for component in active { try component.open() }
            if let salvaged = salvagedAtStart {
                append(.logSalvaged(LogRecovery.event(salvaged, trigger: "start")))
                salvagedAtStart = nil
            }
            var started = NodeStarted()
            started.nodeID = nodeID
            started.version = VigilVersion.current
            started.board = board.profile.name
            started.radio = radio.name
            started.phonesOpenCalls = true
            if let site = configuration.projections.hazardSite {
                started.siteLatitudeE7 = Int32((site.latitude * 1e7).rounded())
                started.siteLongitudeE7 = Int32((site.longitude * 1e7).rounded())
                if let road = site.roadDirectionDegrees { started.roadDirectionCentidegrees = UInt32((road * 100).rounded()) % 36_000 }
            }
            append(.nodeStarted(started))
            for component in active { try component.start() }
            if let opening { try beginOpening(opening) }
        } catch {
            if fatal == nil { fatal = error }
            shutdownAfterFailure()
            throw error
        }
        // Outputs and timers come back from the restored state; overdue deadlines fire now.
        reconcile()
        serviceManager.ready()
        logger.info("node running", metadata: [
            "node": "\(String(nodeID, radix: 16))", "data": "\(configuration.dataDirectory)",
            "board": "\(board.profile.name)", "radio": "\(radio.name)",
        ])

        while !finished {
            _ = loop.turn() // a failure went to the failure path, which stops the node
            drainDurable()
            if opening?.isDone == true, pending.isEmpty, !stopping { completeOpening() }
            // A stop asked for while the log is being opened waits for the open, so what was
            // taken meanwhile is carried into the log (systemd's stop timeout bounds the wait);
            // a failure stops at once.
            if let reason = stopRequest.withLock({ $0 }), !stopping, opening == nil || fatal != nil {
                beginStop(reason: reason)
            }
            if stopping && pending.isEmpty {
                finish()
            }
            // Last, so waiters see what this turn's input, timers and durable events led to.
            callSettledWaiters()
        }
        callSettledWaiters()
        if let fatal { throw fatal }
    }

    /// The node cannot go on safely: log it at critical, stop, and exit non-zero (systemd
    /// restarts it from what is on disk). The first failure is the one reported.
    func fail(_ error: NodeError) {
        logger.critical("stopping: \(error)")
        if fatal == nil { fatal = error }
        requestStopOnLoop(error.description)
    }

    private func requestStopOnLoop(_ reason: String) {
        stopRequest.withLock { if $0 == nil { $0 = reason } }
    }

    // MARK: Appending and durability

    /// Appends an event; it reaches the projections once the writer reports it durable.
    /// `sheddable` (the hazard feed's reports) lets the log refuse it under load, as it does scan
    /// data; nil is then returned and `counters.shed` counts it.
    @discardableResult
    func append(_ body: EventBody, time: UInt64? = nil, sheddable: Bool = false) -> UInt64? {
        loop.owner.check("append")
        var t = time ?? clock.nowMicroseconds()
        if body.isSheddable {
            // A clock stepped back past what compaction has done: the hit is logged at the start
            // of the first slot not compacted, so a compaction reads it like any other (its own
            // time was wrong by over an hour on one side of the step anyway).
            var floor = UInt64(projections.retention.recentScanHits.floorSlot) &* SlotTally.slotMicroseconds
            // A compaction not applied yet raises it too (its span's end).
            for e in pending.elements { if case .scanSightings(let s) = e.body { floor = max(floor, s.spanEndUs) } }
            if t < floor { t = floor }
        }
        if case .alertRaised(let a) = body, a.id.origin == nodeID { recordAlertFloor(a.id.counter) }
        let (kind, payload) = EventCodec.encode(body)
        do {
            let seq = try log.append(LogRecord(kind: kind, timeMicroseconds: t, payload: payload),
                                     priority: body.isSheddable || sheddable ? .sheddable : .critical)
            pending.append(Event(sequence: seq, timeMicroseconds: t, body: body), atNanoseconds: monotonic.nowNanoseconds())
            if sheddable { sheddableAppended.insert(seq) }
            counters.appended += 1
            metrics.appended(body.kind)
            return seq
        } catch .shed {
            counters.shed += 1
        } catch {
            if let failure = log.failure {
                let seq = appendInMemory(Event(sequence: 0, timeMicroseconds: t, body: body), failure: failure)
                if sheddable { sheddableAppended.insert(seq) }
                return seq
            }
            counters.refused += 1
            logger.critical("event not logged", metadata: ["kind": "\(body.kind.name)", "error": "\(error)"])
        }
        return nil
    }

    /// The log has failed: the event takes the next sequence in memory and goes the way of a
    /// durable one (applied, components told, outputs reconciled) on the next turn, through a
    /// report like the writer's that names it refused; `drainDurable` takes refused events from
    /// memory while the log is failed.
    private func appendInMemory(_ event: Event, failure: LogError) -> UInt64 {
        enterMemoryMode(failure)
        var event = event
        guard let sequence = fromMemory?.nextSequence(after: max(pending.last?.sequence ?? 0, projections.appliedThrough)) else {
            return 0 // unreachable: enterMemoryMode has just set it
        }
        event.sequence = sequence
        pending.append(event)
        counters.appended += 1
        commitInbox.reports.withLock { $0.append(CommitReport(durableThrough: event.sequence, refused: [event.sequence])) }
        loop.wake()
        return event.sequence
    }

    /// The card stopped taking writes (EIO from a write or a flush, a card gone read-only): the
    /// log refuses everything from now on (docs/log.md "Failing safe"), and the node runs on from
    /// memory so the button, the alarms and the radio keep working. Once only.
    private func enterMemoryMode(_ failure: LogError) {
        guard fromMemory == nil else { return }
        // What the log holds: what the writer made durable before the failure, or, on a card
        // read-only from the start, what was restored from it.
        let lastStored = logUnwritableAtStart ? projections.appliedThrough : log.statistics.durableSequence
        fromMemory = RunningFromMemory(since: clock.nowMicroseconds(), failure: failure.description, lastStored: lastStored)
        logger.critical("the log stopped taking writes: running from memory (the button, alarms and radio work; nothing new is logged)",
                        metadata: ["error": "\(failure)"])
        scheduler.register(Self.fromMemoryTimer) { [unowned self] in
            guard let memory = fromMemory else { return }
            // Waiting ones count too: an SOS appended this turn is applied only on the next.
            let waiting = pending.elements.contains { RunningFromMemory.mattersToPeople($0.body.kind) }
            if memory.criticalTaken == 0 && !waiting {
                fail(.log(failure)) // nothing would be lost: let systemd try the card again
            } else {
                logger.critical("staying up from memory: critical events are held only in memory; replace the card",
                                metadata: ["critical_events": "\(memory.criticalTaken)"])
            }
        }
        // The scratch log of a start still opening its log is not the card's log: the centre
        // hears nothing, and no restart is armed (it would end the open).
        guard opening == nil else { return }
        alarmCentre.reportRunningFromMemory()
        if !logUnwritableAtStart {
            scheduler.schedule(Self.fromMemoryTimer, afterNanoseconds: configuration.logFailedRestartAfterMicroseconds &* 1_000)
        }
    }

    // MARK: A start that checks its log first (decision 0002)

    /// Starts the worker that checks, salvages if need be, opens and restores the real log.
    private func beginOpening(_ opening: LogOpening) throws(NodeError) {
        logger.notice("the last stop was not clean: the log is checked and opened beside the loop; the button, outputs and calls for help work meanwhile")
        let loop = self.loop
        do {
            try opening.begin(configuration: configuration, logger: logger, onDurable: Self.durableReports(to: commitInbox, waking: loop),
                              monotonic: monotonic) { loop.wake() }
        } catch {
            throw .system(error)
        }
    }

    /// The worker is done and nothing is pending on the scratch log: the loop takes the real log
    /// over in this one turn. The restored projections replace the scratch ones, what happened
    /// meanwhile is appended to the real log in order, and the other components open and start.
    private func completeOpening() {
        guard let opening, let outcome = opening.takeOutcome() else { return }
        opening.joinWorker()
        let opened: LogOpening.OpenedLog
        switch outcome {
        case .failure(let error):
            // As a start that cannot open its log always did: stop, and let systemd try again.
            fail(error)
            return
        case .success(let o):
            opened = o // the log is this node's now, not the opening's to close
        }
        opening.close()
        self.opening = nil
        log = opened.log
        openLog.withLock { $0 = opened.log }
        logUnwritableAtStart = log.failure != nil
        projections = opened.projections
        sheddableAppended.removeAll()
        if fromMemory != nil {
            // The scratch log failed: the real one is another log, and starts afresh.
            fromMemory = nil
            scheduler.cancel(Self.fromMemoryTimer)
        }
        keepAlertCountersAboveTheFloor()
        if let salvaged = opened.salvaged {
            append(.logSalvaged(LogRecovery.event(salvaged, trigger: "start")))
        }
        var silencesDropped = 0
        for event in opening.held {
            // A silence is not carried: it silences whatever sounds when it is applied, and the
            // restored state may sound alarms nobody heard before the open. An alarm silenced
            // before the open sounds again, until silenced again (fail loud).
            if case .alarmAcknowledged = event.body {
                silencesDropped += 1
                continue
            }
            append(event.body, time: event.timeMicroseconds)
        }
        carriedThrough = pending.last?.sequence
        let before = Set(active.map { ObjectIdentifier($0) })
        do {
            let rest = components.filter { !before.contains(ObjectIdentifier($0)) }
            for component in rest { try component.open() }
            active = components.filter { before.contains(ObjectIdentifier($0)) } + rest
            for component in rest { try component.start() }
            active = components
        } catch {
            fail(error)
        }
        logger.notice("the log is open: events taken meanwhile are appended to it", metadata: [
            "seconds": "\(String(format: "%.2f", opened.seconds))", "carried": "\(opening.held.count)",
            "not_carried": "\(opening.notCarried)", "applied_through": "\(projections.appliedThrough)",
            "salvaged": "\(opened.salvaged != nil)",
        ])
        if silencesDropped > 0 {
            logger.notice("alarms silenced before the log was open sound again until silenced again", metadata: ["silences": "\(silencesDropped)"])
        }
        if opening.notCarried > 0 {
            logger.critical("events taken before the log was open were too many to carry into it", metadata: ["not_carried": "\(opening.notCarried)"])
        }
        if carriedThrough == nil { reconcile() }
    }

    /// Makes an alert counter used here durable outside the log, before the alert is appended
    /// (`AlertCounterFloor`). A failure is logged: the alert matters more than the floor.
    private func recordAlertFloor(_ counter: UInt32) {
        do {
            try alertFloor.record(counter)
        } catch {
            logger.error("cannot keep the alert counter outside the log; a start before its log is open may reuse an alert id",
                         metadata: ["error": "\(error)"])
        }
    }

    /// Applies what the writer reported durable, tells the components, and reconciles.
    private func drainDurable() {
        let reports = commitInbox.reports.withLock { r in
            let taken = r
            r.removeAll(keepingCapacity: true)
            return taken
        }
        guard !reports.isEmpty else { return }
        // Once the log failed, nothing above what the writer made durable before the failure will
        // ever be stored, whichever report (the writer's or one from `appendInMemory`) covers it.
        let failure = log.failure
        let durableBeforeFailure = failure == nil ? UInt64.max : log.statistics.durableSequence
        let now = monotonic.nowNanoseconds()
        for report in reports {
            let refused = Set(report.refused)
            while let first = pending.first, first.sequence <= report.durableThrough {
                let appendedAt = pending.firstAppendedAt ?? now
                _ = pending.removeFirst()
                let sheddable = first.body.isSheddable || sheddableAppended.remove(first.sequence) != nil
                if let failure, refused.contains(first.sequence) || first.sequence > durableBeforeFailure {
                    // Never stored, and nothing will be: taken from memory (the log failed).
                    enterMemoryMode(failure)
                    fromMemory?.took(first, sheddable: sheddable)
                    projections.apply(.event(first))
                    opening?.hold(first)
                    for c in active { c.applied(first) }
                    continue
                }
                if refused.contains(first.sequence) {
                    counters.refused += 1
                    if !sheddable {
                        logger.critical("a critical event was refused by the log", metadata: [
                            "kind": "\(first.body.kind.name)", "sequence": "\(first.sequence)",
                        ])
                    }
                    for c in active { c.refused(first) }
                    continue
                }
                metrics.acknowledged(afterNanoseconds: now >= appendedAt ? now - appendedAt : 0)
                projections.apply(.event(first))
                opening?.hold(first)
                for c in active { c.applied(first) }
            }
            control.settle(durableThrough: report.durableThrough, refused: failure == nil ? refused : [],
                           unlogged: fromMemory != nil)
        }
        if let failure { enterMemoryMode(failure) }
        if let through = carriedThrough {
            // The carried events are not all applied yet: effects wait for them.
            if let first = pending.first, first.sequence <= through { return }
            carriedThrough = nil
        }
        reconcile()
    }

    private func reconcile() {
        reconcileOutputs()
        for c in active { c.reconcile() }
        callStateWaiters()
    }

    // MARK: Outputs

    /// Derives the desired patterns from the projections (and what the node knows that is not an
    /// event: the log's failure, the centre's link) and drives the board to match.
    func reconcileOutputs() {
        guard !isCarrying else { return }
        patterns.update(OutputPolicy.decide(projections, running: !stopping, logFailure: fromMemory?.failure,
                                            callPathProblem: callPathProblem),
                        nowNanoseconds: monotonic.nowNanoseconds())
        driveOutputs()
    }

    /// Why the box cannot call for help now, from its self-tests and the centre's link; nil: no
    /// path is known to fail.
    var callPathProblem: String? {
        let problems = [configuration.alarmCentre == nil ? nil : alarmCentre.status.problem,
                        notifierTest.configured ? notifierTest.status.problem : nil].compactMap { $0 }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    /// Sets every line to its pattern's level now and arms the timer for the next change.
    private func driveOutputs() {
        let now = monotonic.nowNanoseconds()
        let time = clock.nowMicroseconds()
        for line in OutputLine.allCases {
            do {
                try board.drive(line, on: patterns.level(line, nowNanoseconds: now), timeMicroseconds: time)
            } catch {
                counters.boardErrors += 1
                logger.error("cannot drive output", metadata: ["line": "\(line.rawValue)", "error": "\(error)"])
            }
        }
        if let next = patterns.nextChange(afterNanoseconds: now) {
            scheduler.schedule(Self.patternTimer, atNanoseconds: next)
        } else {
            scheduler.cancel(Self.patternTimer)
        }
    }

    // MARK: Time

    /// The monotonic time at which the node's wall clock reaches `due` (it may run faster than
    /// real time, `--time-scale`).
    func monotonicDeadline(forWallMicroseconds due: UInt64) -> UInt64 {
        let now = clock.nowMicroseconds()
        let realMicroseconds = Double(due > now ? due - now : 0) / clock.rate
        return monotonic.nowNanoseconds() &+ UInt64(min(realMicroseconds * 1_000, 1e17))
    }

    var uptimeSeconds: Double { Double(monotonic.nowNanoseconds() &- startedMonotonic) / 1e9 }

    // MARK: Stopping

    private func beginStop(reason: String) {
        stopping = true
        logger.info("stopping", metadata: ["reason": "\(reason)"])
        for c in active { c.stop() }
        var stopped = NodeStopped()
        stopped.reason = reason
        append(.nodeStopped(stopped))
    }

    private func finish() {
        if opening == nil { checkpoints.write() }
        log.close()
        drainDurable() // the close acknowledged whatever was left; nothing should be pending now
        board.stop()
        control.close()
        // An orderly stop: this run did not crash reading its log, so the next start need not check
        // it first. A failure of the log itself leaves the mark, and the next start checks; so
        // does a stop before this start's check and open were done.
        if let opening {
            opening.close()
        } else if !(fatal?.mayBeTheLog ?? false) {
            LogRecovery.checkedThisStart(directory: configuration.dataDirectory)
        }
        // The directory is free for the next node as soon as this one is done with it.
        lockFile.unlock()
        finished = true
        logger.info("node stopped", metadata: [
            "applied_through": "\(projections.appliedThrough)", "events": "\(projections.health.totalEvents)",
        ])
    }

    private func shutdownAfterFailure() {
        if opening == nil, !(fatal?.mayBeTheLog ?? false) { LogRecovery.checkedThisStart(directory: configuration.dataDirectory) }
        radio.stop()
        board.stop()
        control.close()
        log.close()
        opening?.close()
        lockFile.unlock()
        finished = true
    }
}
