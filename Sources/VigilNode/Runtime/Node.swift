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
/// Not `Sendable`: the node is the loop's. Whoever makes one keeps its `handle` (checked
/// `Sendable`) and hands the node itself to `Node.runOnOwnThread`, which takes it (`sending`):
/// the compiler then refuses any use of the node outside the loop until the loop gives it back,
/// stopped (decision 0008).
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
///
/// Three files: this one (state, components, the thread-safe entry points, the loop),
/// NodeDurability.swift (appending, durability, a start that checks its log first) and
/// NodeOutputs.swift (outputs, time, stopping). Their shared state is internal rather than
/// private for that, and loop-confined like the rest: components never see it (they hold a
/// `NodeContext`).
public final class Node {
    public let configuration: NodeConfiguration
    public let nodeID: UInt64
    let clock: any WallClock
    let monotonic: any MonotonicClock
    let logger: Logger
    /// The log: a scratch one while a start checks and opens the real one (`LogOpening`), then
    /// the real one. Loop-owned once the loop runs.
    var log: EventLog
    let lockFile: FileDescriptor
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
    var stopping = false
    var finished = false
    var startedMonotonic: UInt64 = 0
    var patterns = PatternDriver()
    /// Set when the node cannot go on safely (the log failed, the button died, the loop's own
    /// timer or epoll failed); `run` then stops and throws it, so the process exits non-zero and
    /// systemd restarts it from disk.
    var fatal: NodeError?
    /// Waiting for nothing to be pending (`NodeHandle.whenSettled`).
    var settledWaiters: [@Sendable (Node) -> Void] = []
    var stateWaiters: [(holds: @Sendable (Node) -> Bool, done: @Sendable (Node) -> Void)] = []

    // The components. Lazy because each holds the node as its context, which exists only once
    // every stored property is set; `init` makes them all, in this order, before returning.
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
    private(set) lazy var hazardClock = HazardClock.make(context: self)
    private(set) lazy var warningClock = WarningClock.make(context: self)
    private(set) lazy var warningFeeds = WarningFeeds(context: self, settings: configuration.warningFeeds, dataDirectory: configuration.dataDirectory)
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
        heardTime: { [bound = LoopBound(self, on: loop)] microseconds in bound.send { $0.airAlerts.hubTime(microseconds) } },
        problemsChanged: { [bound = LoopBound(self, on: loop)] in bound.send { $0.recheckState() } })
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
    var fromMemory: RunningFromMemory?
    /// The log could not be written from the start (a read-only card): a restart cannot help,
    /// so the node never exits for one.
    var logUnwritableAtStart = false
    static let fromMemoryTimer = Scheduler.Timer("log-failed-restart")
    /// What the salvage at this start did, logged first once the loop runs.
    private var salvagedAtStart: SalvageReport?
    /// In the order they start, hear events and stop.
    var components: [any NodeComponent] = []
    /// The components running: all of them, or before the log is open only those that
    /// `runsBeforeLogOpen`.
    var active: [any NodeComponent] = []
    /// Set while this start checks and opens its log off the loop (decision 0002).
    var opening: LogOpening?
    /// After the log is taken over, the last event carried into it: outputs and effects wait
    /// until it is applied, so they never reflect the restored state without what happened
    /// before the open (red does not blink off between the two).
    var carriedThrough: UInt64?
    /// Events from before the open are being carried into the log and are not all applied:
    /// effects (messages, reports, outputs) wait, or they would act on half a state.
    var isCarrying: Bool { carriedThrough != nil }
    /// The highest alert counter used here, kept outside the log (`AlertCounterFloor`).
    var alertFloor: AlertCounterFloor
    /// Appended as sheddable by their component (the hazard feed's reports) and not yet
    /// durable or refused: a refusal of one is not a critical event's.
    var sheddableAppended = Set<UInt64>()

    // Crossing threads.
    /// Filled by the log's writer thread, emptied by the loop.
    final class CommitInbox: Sendable {
        let reports = LockedValue<[CommitReport]>([])
    }
    let commitInbox = CommitInbox()
    let stopRequest = LockedValue<String?>(nil)
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
        components = [intake, airAlerts, buttons, ladder, expiries, hazardClock, warningClock, callClock, smsInbox, deliveries, alarmCentre, notifierTest, retention, compaction, checkpoints, control, downtime, zones, occupancy, uplink, logIntegrity, serviceManager, publisher, connections, chatCentral, heartRateSensors, hazardFeed, warningFeeds, metrics]
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
    func keepAlertCountersAboveTheFloor() {
        let highest = projections.alerts.highestCounterRaisedHere
        if (alertFloor.stored ?? 0) < highest { recordAlertFloor(highest) }
        pending.alertCounterFloor = max(highest, alertFloor.stored ?? 0)
    }

    /// The log writer's reports, handed to the loop.
    static func durableReports(to inbox: CommitInbox, waking loop: EventLoop) -> @Sendable (CommitReport) -> Void {
        { report in
            inbox.reports.withLock { $0.append(report) }
            loop.wake()
        }
    }

    // MARK: Thread-safe entry points

    /// What another thread may hold of this node (`NodeHandle`): servers beside the loop are given
    /// this, never the node. Cheap: a few references.
    public var handle: NodeHandle {
        NodeHandle(node: LoopBound(self, on: loop), loop: loop, stopRequest: stopRequest, snapshots: snapshots,
                   openLog: openLog, malformedCallbacks: malformedCallbacks, nodeID: nodeID, projectionSettings: configuration.projections,
                   unreachableAfterMicroseconds: configuration.notifyUnreachableAfterMicroseconds)
    }

    /// Queues `work` for the loop, before the node is handed to it (a test that lines up input
    /// for the first turns, a program that learns when its loop runs); once it runs,
    /// `handle.onLoop` does this from any thread.
    public func onLoop(_ work: @escaping @Sendable (Node) -> Void) {
        LoopBound(self, on: loop).send(work)
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

    func callStateWaiters() {
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

}
