import Foundation
import Logging
import Synchronization
import VigilBoard
import VigilCore
import VigilEvents
import VigilExposure
import VigilLog
import VigilRadio
import VigilSystem

/// A running Vigil node: one event loop on one thread owns all state.
///
/// Sources are file descriptors watched by epoll — the radio (HCI socket or the simulation's
/// timerfd), the button (line events or the simulation's timerfd), the control socket, the
/// scheduler's timerfd, and an eventfd through which the log writer reports durable commits.
/// Nothing sleeps and nothing polls.
///
/// Flow of an event: a source produces it → the loop appends it to the log (and keeps it in
/// `pending`) → the writer commits it durably and reports → the loop applies it to the
/// projections → outputs are reconciled to the new state. So the projections, the outputs and
/// every checkpoint only ever reflect durable events.
public final class Node: @unchecked Sendable {
    public let configuration: NodeConfiguration
    public let nodeID: UInt64
    private let clock: any WallClock
    private let logger: Logger
    private let log: EventLog
    private let lockFile: FileDescriptor
    public let radio: any RadioAdapter
    public let board: any BoardAdapter
    private let epoll: Epoll
    private let wake: EventFD
    private var scheduler: Scheduler
    private var control: ControlServer?

    // Loop-owned state.
    public private(set) var projections: Projections
    private var pending = FIFO<Event>()
    private var scanWindow: ScanWindow
    private var air: AirLink
    /// The alert frames in the last plan given to the radio (for `status`).
    private var airFrames: [(broadcast: AlertAirtime.Broadcast, payload: [UInt8])] = []
    private var eventsSinceCheckpoint = 0
    private var stopping = false
    private var finished = false
    private var startedMonotonic: UInt64 = 0
    public private(set) var counters = NodeCounters()
    private var radioReports: [RadioOutput] = []
    private var buttonEdges: [ButtonEdge] = []
    private var gestures: ButtonGestureDecoder
    /// One decoder per resident check-in button, by line.
    private var checkInGestures: [UInt32: ButtonGestureDecoder] = [:]
    private var patterns = PatternDriver()
    /// The last deadline appended and not yet applied (so it is appended once).
    private var appendedDeadline: EscalationBook.Deadline?
    /// Outbox entries with an attempt appended but not yet applied.
    private var attemptsInFlight: Set<String> = []
    private var delivery: DeliveryAttempt?
    /// Consecutive read failures of a source; past a few, its descriptor leaves the epoll set so a
    /// dead device (a USB GPIO chip unplugged) cannot make a level-triggered loop spin.
    /// Set when the node cannot go on safely (the log failed, the button died); `run` then
    /// stops and throws it, so the process exits non-zero and systemd restarts it from disk.
    private var fatal: NodeError?
    private var boardFailures = 0
    private var radioFailures = 0
    private static let failuresBeforeDropping = 3

    // Crossing threads.
    /// Filled by the log's writer thread, emptied by the loop.
    private final class Inbox: Sendable {
        let reports = Mutex<[CommitReport]>([])
    }
    private let inbox = Inbox()
    private let requests = Mutex<[@Sendable (Node) -> Void]>([])
    private let stopRequest = Mutex<String?>(nil)

    private enum Token: UInt64 {
        case wake = 1, timer, radio, board, control, child
    }

    /// Opens the data directory (taking its lock), the log, and restores the projections from the
    /// checkpoint plus the log's tail. Nothing runs until `run()`.
    public init(configuration: NodeConfiguration, clock: any WallClock = SystemClock(), logger: Logger,
                radio: (any RadioAdapter)? = nil, board: (any BoardAdapter)? = nil) throws(NodeError) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        ignoreBrokenPipes()
        let dir = configuration.dataDirectory
        do {
            try FileSystem.createDirectory(dir)
            lockFile = try FileSystem.lockExclusive(dir + "/node.lock")
        } catch {
            if error.errno == .wouldBlock { throw .alreadyRunning(directory: dir) }
            throw .system(error)
        }
        nodeID = try Self.loadNodeID(directory: dir)
        do {
            epoll = try Epoll()
            wake = try EventFD()
            scheduler = try Scheduler()
            if let radio {
                self.radio = radio
            } else if configuration.radio == "sim" {
                self.radio = try SimulatedRadio(settings: configuration.simulation, clock: clock)
            } else {
                var hci = configuration.hci
                hci.adapter = configuration.radio
                if let path = hci.snoopPath, !path.hasPrefix("/") { hci.snoopPath = dir + "/" + path }
                self.radio = try HCIRadio(settings: hci, clock: clock)
            }
            if let board {
                self.board = board
            } else if configuration.board.chip == "sim" {
                self.board = try SimulatedBoard(profile: configuration.board)
            } else {
                self.board = try GPIOBoard(profile: configuration.board)
            }
        } catch let error as NodeError {
            throw error
        } catch let error as SystemError {
            throw .system(error)
        } catch let error as BoardError {
            throw .board(error.description)
        } catch {
            throw .radio("\(error)")
        }
        scanWindow = ScanWindow(durationMicroseconds: configuration.scanWindowMicroseconds,
                                vigilUUID: configuration.airAlerts.serviceUUID)
        do {
            let keyPath = configuration.airAlerts.keyFile.hasPrefix("/") ? configuration.airAlerts.keyFile
                : dir + "/" + configuration.airAlerts.keyFile
            let key = try NodeSecrets.shelterKey(path: keyPath).map { bytes throws in try AlertFrameKey(shelterKey: bytes) }
            if key != nil, NodeSecrets.readableByOthers(keyPath) {
                logger.warning("the shelter key is readable by other users; chmod 600 it", metadata: ["path": "\(keyPath)"])
            }
            if key == nil {
                logger.warning("no shelter key: this box neither sends nor accepts alerts over the air (make one with `vigil radio keygen` and copy it to every box)",
                               metadata: ["expected": "\(keyPath)"])
            }
            // With GAEN advertising the address rotates with the RPI, every 10-minute interval.
            let rotation = configuration.exposure.advertise ? UInt32(Exposure.intervalSeconds) : configuration.presence.rotationSeconds
            let presence = configuration.presence.enabled || configuration.exposure.advertise
                ? try PresenceIdentity(nodeSecret: NodeSecrets.nodeSecret(directory: dir), rotationSeconds: rotation)
                : nil
            air = AirLink(key: key, settings: configuration.airAlerts, presence: presence, nodeID: nodeID)
            if configuration.exposure.advertise {
                air.exposureKeys = try ExposureKeyStore(directory: dir)
                air.exposureTxPower = configuration.exposure.txPowerDBm
                air.exposureRetentionDays = UInt32(configuration.exposure.contacts.retentionMicroseconds / 86_400_000_000)
            }
        } catch let error as NodeError {
            throw error
        } catch {
            throw .radio("\(error)")
        }
        gestures = ButtonGestureDecoder(settings: configuration.gestures)
        for line in configuration.board.checkInButtons.values {
            checkInGestures[line.offset] = ButtonGestureDecoder(settings: configuration.gestures)
        }
        let wake = self.wake
        let inbox = self.inbox
        do {
            log = try EventLog.open(configuration.log) { report in
                inbox.reports.withLock { $0.append(report) }
                wake.signal()
            }
        } catch {
            throw .log(error)
        }
        projections = Projections(settings: configuration.projections)
        do {
            if let restored = try Replay.checkpoint(in: log) {
                projections = restored
            }
            projections.devices.setPruneAfter(configuration.projections.devicePruneAfterMicroseconds)
            projections.outbox.retryBaseMicroseconds = configuration.notifier.retryBaseMicroseconds
            projections.outbox.retryMaxMicroseconds = configuration.notifier.retryMaxMicroseconds
            let from = projections.appliedThrough
            let replayed = try Replay.catchUp(&projections, from: log)
            logger.info("restored projections", metadata: [
                "checkpoint": "\(from)", "replayed": "\(replayed)", "applied_through": "\(projections.appliedThrough)",
            ])
        } catch {
            log.close()
            throw .log(error)
        }
    }

    private static func loadNodeID(directory: String) throws(NodeError) -> UInt64 {
        let path = directory + "/node-id"
        var id = (secureRandomUInt64() & 0xFFFF_FFFF) | 1
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           let stored = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16), stored != 0 {
            // 32 bits: the id travels in every alert frame (README "Alert frames"). A node made
            // before alerts went on the air has a 64-bit id: it is folded to 32 bits once, and
            // its alert counter starts again under the new id (so no alert id repeats).
            guard stored > 0xFFFF_FFFF else { return stored }
            id = (stored ^ (stored >> 32)) & 0xFFFF_FFFF | 1
        }
        do {
            try (String(id, radix: 16) + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw .unsupported("cannot write \(path): \(error.localizedDescription)")
        }
        return id
    }

    // MARK: Thread-safe entry points

    /// Asks the loop to stop: it flushes the scan window, logs NodeStopped, waits until everything
    /// is durable, writes a checkpoint and returns from `run()`. Safe from any thread or signal
    /// handler task.
    public func requestStop(reason: String) {
        stopRequest.withLock { if $0 == nil { $0 = reason } }
        wake.signal()
    }

    /// Runs `work` on the loop thread (tests and the control socket use this to touch loop state).
    public func onLoop(_ work: @escaping @Sendable (Node) -> Void) {
        requests.withLock { $0.append(work) }
        wake.signal()
    }

    // MARK: The loop

    /// Runs the node on the calling thread until stopped. Throws only if the loop cannot run at
    /// all; problems with single events are logged and counted.
    public func run(duration: UInt64? = nil) throws(NodeError) {
        startedMonotonic = monotonicNanoseconds()
        do {
            try epoll.add(wake.fd, token: Token.wake.rawValue)
            try epoll.add(scheduler.timerFD.fd, token: Token.timer.rawValue)
            try radio.start()
            try epoll.add(radio.descriptor, token: Token.radio.rawValue)
            try board.start()
            try epoll.add(board.descriptor, token: Token.board.rawValue)
            // The control socket is a convenience (CLI status, writes, the simulated button): if it
            // cannot be made (a data path longer than a socket address allows), the node runs
            // without it rather than not at all.
            do {
                control = try ControlServer(path: configuration.dataDirectory + "/control.sock", epoll: epoll,
                                            listenerToken: Token.control.rawValue)
            } catch {
                logger.warning("no control socket: the CLI cannot reach this node (it still reads its log)",
                               metadata: ["error": "\(error)"])
            }
            if let duration {
                try scheduler.schedule(.stopAfterDuration, atMonotonicNanoseconds: startedMonotonic + duration * 1_000)
            }
            try scheduler.schedule(.checkpoint, atMonotonicNanoseconds: startedMonotonic + configuration.checkpointIntervalMicroseconds * 1_000)
            // Contact-data retention a minute after start (a box that was off catches up), then
            // every few hours.
            try scheduler.schedule(.retention, atMonotonicNanoseconds: startedMonotonic + configuration.exposure.retentionFirstCheckMicroseconds * 1_000)
        } catch let error as SystemError {
            shutdownAfterFailure()
            throw .system(error)
        } catch {
            shutdownAfterFailure()
            throw .radio("\(error)")
        }

        var started = NodeStarted()
        started.nodeID = nodeID
        started.version = VigilVersion.current
        started.board = board.profile.name
        started.radio = radio.name
        append(.nodeStarted(started))
        if !radio.reportsState {
            var radioOn = RadioStateChanged()
            radioOn.state = .on
            radioOn.adapter = radio.name
            radioOn.reason = "started"
            append(.radioStateChanged(radioOn))
        }
        if configuration.notifier.command == nil,
           projections.escalations.residents.values.contains(where: { !$0.contacts.isEmpty }) {
            logger.warning("no notify.command is configured: messages to contacts are only written to this log")
        }
        // Outputs and timers come back from the restored state; overdue deadlines fire now.
        reconcileOutputs()
        reconcileAirtime()
        scheduleLadder()
        scheduleOutbox()
        if projections.exposures.lastRetentionSequence > 0 {
            // A deletion interrupted by a stop or a crash is finished now (it is idempotent).
            purgeContactData(cutoff: projections.exposures.lastRetentionCutoffMicroseconds,
                             through: projections.exposures.lastRetentionSequence - 1)
        }
        logger.info("node running", metadata: [
            "node": "\(String(nodeID, radix: 16))", "data": "\(configuration.dataDirectory)",
            "board": "\(board.profile.name)", "radio": "\(radio.name)",
        ])

        while !finished {
            let ready: [Epoll.Ready]
            do {
                ready = try epoll.wait()
            } catch {
                logger.critical("epoll_wait failed; stopping", metadata: ["error": "\(error)"])
                beginStop(reason: "internal error: \(error)")
                continue
            }
            for event in ready {
                if event.events & Epoll.hangup != 0, event.token == Token.board.rawValue || event.token == Token.radio.rawValue {
                    sourceFailed(token: event.token, error: "the device hung up")
                    continue
                }
                handle(token: event.token)
            }
            drainInbox()
            if let reason = stopRequest.withLock({ $0 }), !stopping {
                beginStop(reason: reason)
            }
            if stopping && pending.isEmpty {
                finish()
            }
        }
        if let fatal { throw fatal }
    }

    private func handle(token: UInt64) {
        switch Token(rawValue: token) {
        case .wake:
            wake.drain()
            let work = requests.withLock { r in
                let taken = r
                r.removeAll()
                return taken
            }
            for w in work { w(self) }
        case .timer:
            handleTimers()
        case .radio:
            guard !stopping else { return }
            radioReports.removeAll(keepingCapacity: true)
            do {
                try radio.readReady(into: &radioReports)
                radioFailures = 0
            } catch {
                counters.radioErrors += 1
                radioFailures += 1
                logger.error("radio read failed", metadata: ["error": "\(error)"])
                if radioFailures >= Self.failuresBeforeDropping { sourceFailed(token: token, error: "\(error)") }
            }
            for output in radioReports { handle(output) }
        case .board:
            buttonEdges.removeAll(keepingCapacity: true)
            do {
                try board.readReady(into: &buttonEdges)
                boardFailures = 0
            } catch {
                counters.boardErrors += 1
                boardFailures += 1
                logger.error("button read failed", metadata: ["error": "\(error)"])
                if boardFailures >= Self.failuresBeforeDropping { sourceFailed(token: token, error: "\(error)") }
            }
            for edge in buttonEdges { handle(edge) }
        case .control:
            control?.acceptAll()
        case .child:
            finishDelivery(timedOut: false)
        case nil:
            control?.handleReadable(token: token) { [unowned self] command in self.respond(to: command) }
        }
    }

    /// Stops watching a source that keeps failing or hung up. The node keeps running (alarms,
    /// the ladder and the log do not need it) and says so loudly; recovery is the radio and
    /// board adapters' job.
    private func sourceFailed(token: UInt64, error: String) {
        if token == Token.board.rawValue {
            try? epoll.remove(board.descriptor)
            // A box whose SOS button is dead must not look healthy: stop, exit non-zero, and let
            // the service manager restart it (which requests the lines again).
            logger.critical("the button no longer reports; stopping so the node is restarted", metadata: ["error": "\(error)"])
            fatal = fatal ?? .board("the button stopped reporting: \(error)")
            stopRequest.withLock { if $0 == nil { $0 = "the button stopped reporting" } }
        } else {
            try? epoll.remove(radio.descriptor)
            var change = RadioStateChanged()
            change.state = .unknown
            change.adapter = radio.name
            change.reason = "the radio stopped reporting: \(error)"
            append(.radioStateChanged(change))
            logger.critical("the radio no longer reports", metadata: ["error": "\(error)"])
        }
    }

    private func handle(_ output: RadioOutput) {
        switch output {
        case .report(let report):
            counters.reports += 1
            if let frame = air.inspect(report, now: clock.nowMicroseconds()) {
                heard(frame, from: report)
            }
            let wasOpen = scanWindow.openedAt != nil
            if let hit = scanWindow.add(report) {
                append(.scanHit(hit), time: report.timeMicroseconds)
            } else if !wasOpen, let closesAt = scanWindow.closesAt {
                let now = clock.nowMicroseconds()
                let delay = closesAt > now ? closesAt - now : 0
                try? scheduler.schedule(.closeScanWindow, atMonotonicNanoseconds: monotonicNanoseconds() + delay * 1_000)
            }
        case .stateChanged(let state, let reason):
            var change = RadioStateChanged()
            change.state = state
            change.adapter = radio.name
            change.reason = reason
            append(.radioStateChanged(change))
            if state == .on { logger.notice("radio on", metadata: ["reason": "\(reason)"]) } else {
                logger.warning("radio \(state)", metadata: ["reason": "\(reason)"])
            }
        case .onAir(let payload):
            settleBroadcast(payload)
        case .problem(let what):
            logger.warning("radio: \(what)")
        }
    }

    /// A verified frame from another box: new alerts, cancels and acknowledgements go to the log
    /// (never shed); one already known only counts as a relay heard, for suppression.
    private func heard(_ frame: AlertFrame, from report: AdvertisingReport) {
        let id = frame.id
        let isCancel = frame.type == .cancel
        let isAcknowledgement = frame.type == .acknowledge
        var known = isAcknowledgement ? projections.alerts.acknowledgements[id.text] != nil
            : projections.alerts.alerts[id.text].map { isCancel ? $0.cancelled : true } ?? false
        if !known {
            for e in pending.elements {
                switch e.body {
                case .alertReceived(let a) where !isCancel && !isAcknowledgement && a.id == id: known = true
                case .alertRaised(let a) where !isCancel && !isAcknowledgement && a.id == id: known = true
                case .alertCancelled(let c) where isCancel && c.id == id: known = true
                case .alertAcknowledged(let a) where isAcknowledgement && a.id == id: known = true
                default: break
                }
                if known { break }
            }
        }
        if known {
            air.countDuplicate()
            air.heardRelay(frame, now: report.timeMicroseconds)
            renewIfLater(frame, from: report)
            return
        }
        air.countAccepted()
        switch frame.meaning(heardFrom: report.address) {
        case .alert(var alert):
            alert.text = "heard over the air from \(formatAddress(report.address))"
            append(.alertReceived(alert), time: report.timeMicroseconds)
            logger.notice("alert received", metadata: ["alert": "\(id.text)", "kind": "\(alert.kind)", "hops": "\(alert.hops)"])
        case .cancelled(var cancel):
            cancel.hops = UInt32(frame.hops)
            cancel.heardFrom = report.address
            cancel.expiresAtUs = UInt64(frame.expirySeconds) * 1_000_000
            cancel.severity = frame.severity
            cancel.reason = "cancel heard over the air from \(formatAddress(report.address))"
            append(.alertCancelled(cancel), time: report.timeMicroseconds)
            logger.notice("alert cancelled over the air", metadata: ["alert": "\(id.text)"])
        case .acknowledged(let acknowledged):
            append(.alertAcknowledged(acknowledged), time: report.timeMicroseconds)
            let ours = UInt32(truncatingIfNeeded: nodeID) == UInt32(truncatingIfNeeded: id.origin)
            logger.notice(ours ? "our alert was acknowledged by another box" : "alert acknowledged over the air",
                          metadata: ["alert": "\(id.text)", "hops": "\(acknowledged.hops)"])
        }
    }

    /// The radio confirmed a payload on the air: an SOS (or its cancel) raised here has left the
    /// box, which settles its broadcast outbox entry (so the log says when it went out).
    private func settleBroadcast(_ payload: [UInt8]) {
        for (b, p) in airFrames where p == payload && b.hops == 0 && b.kind == AlertKind.sos.rawValue && !b.isAcknowledgement {
            let entry = "sos/\(b.idText)/\(b.isCancel ? "cancelled" : "raised")"
            guard let e = projections.outbox.entries[entry], !e.delivered, !attemptsInFlight.contains(entry) else { continue }
            recordAttempt(entry: entry, attempt: e.attempts + 1, delivered: true, notifier: "radio", error: "")
        }
    }

    // MARK: Retention of contact data

    static let retentionCheckNanoseconds: UInt64 = 6 * 3_600 * 1_000_000_000

    /// Once a day: logs a ContactRetention event for the contact data older than the retention
    /// period. The projections forget what it built when the event is applied (so replay agrees
    /// whether or not the deletion has run), then the log deletes it.
    private func runRetention() {
        guard !stopping else { return }
        let now = clock.nowMicroseconds()
        let x = projections.exposures
        let last = x.lastRetentionMicroseconds
        // Due once a day; also when the clock went back past the last one (else retention would
        // stop until the clock caught up again).
        guard last == 0 || now >= last &+ 86_400_000_000 || now < last else { return }
        let keep = configuration.exposure.contacts.retentionMicroseconds
        guard now > keep else { return }
        var cutoff = now - keep
        // A clock stepped far forward (an RTC-less Pi, a bad NTP answer) must not delete everything
        // at once: the cutoff moves at most two days past the previous one per run.
        if x.lastRetentionCutoffMicroseconds > 0, cutoff > x.lastRetentionCutoffMicroseconds &+ 2 * 86_400_000_000 {
            logger.warning("retention: the clock jumped ahead; the cutoff advances by two days only",
                           metadata: ["clock_cutoff_us": "\(cutoff)", "previous_cutoff_us": "\(x.lastRetentionCutoffMicroseconds)"])
            cutoff = x.lastRetentionCutoffMicroseconds &+ 2 * 86_400_000_000
        }
        guard cutoff > x.lastRetentionCutoffMicroseconds else { return }
        var r = ContactRetention()
        r.cutoffUs = cutoff
        append(.contactRetention(r), time: now)
        logger.info("retention: contact data before the cutoff is being deleted", metadata: ["cutoff_us": "\(r.cutoffUs)"])
    }

    /// Deletes scan hits before `cutoff` at or below sequence `through`, except sightings of
    /// residents' tags (the escalation ladder's data), and exposure events recorded before the
    /// cutoff (contact data too: their windows ended before it, and the projection dropped them).
    private func purgeContactData(cutoff: UInt64, through: UInt64) {
        let tags = projections.escalations.everTagAddresses
        let logger = self.logger
        let scanHit = UInt32(EventKind.scanHit.rawValue)
        do {
            let exposure = UInt32(EventKind.exposureDetected.rawValue)
            try log.purge(before: cutoff, throughSequence: through, matches: { kind, payload in
                if kind == exposure { return true }
                guard kind == scanHit else { return false }
                guard !tags.isEmpty else { return true }
                // An unreadable record stays: the health projection counts it, deleted or not.
                guard case .scanHit(let hit)? = try? EventCodec.decode(kind: kind, payload: payload, sequence: 0) else { return false }
                return !tags.contains(hit.address & 0xFFFF_FFFF_FFFF)
            }, completion: { result in
                switch result {
                case .success(let removed): logger.info("retention: contact data deleted", metadata: ["events": "\(removed)"])
                case .failure(let error): logger.warning("retention: deletion stopped; it is retried at the next start", metadata: ["error": "\(error)"])
                }
            })
        } catch {
            logger.warning("retention: cannot delete now", metadata: ["error": "\(error)"])
        }
    }

    /// An alert whose origin keeps renewing its on-air expiry (it has no fixed end) stays alive
    /// here too: a frame expiring 30 min or more beyond what this box knows is logged again, and the
    /// alert book takes the later expiry.
    private func renewIfLater(_ frame: AlertFrame, from report: AdvertisingReport) {
        guard !frame.type.refersToAnotherAlert, let entry = projections.alerts.alerts[frame.id.text], !entry.cancelled, !entry.raisedHere,
              entry.expiresAtMicroseconds != 0 else { return }
        let offered = UInt64(frame.expirySeconds) * 1_000_000
        guard offered >= entry.expiresAtMicroseconds &+ 1_800_000_000 else { return }
        let pendingRenewal = pending.elements.contains {
            if case .alertReceived(let a) = $0.body { a.id == frame.id } else { false }
        }
        guard !pendingRenewal, case .alert(var alert) = frame.meaning(heardFrom: report.address) else { return }
        alert.text = "renewed over the air by \(formatAddress(report.address))"
        append(.alertReceived(alert), time: report.timeMicroseconds)
    }

    /// Gives the radio what to advertise now and arms the timer for the next change.
    private func reconcileAirtime() {
        guard !stopping else { return }
        let now = clock.nowMicroseconds()
        air.prune(projections.alerts, now: now)
        let (plan, frames) = air.plan(projections, nowMicroseconds: now, nodeID: nodeID)
        airFrames = frames
        radio.advertise(plan)
        if let next = air.nextChange(projections, nowMicroseconds: now, nodeID: nodeID) {
            try? scheduler.schedule(.airtime, atMonotonicNanoseconds: realDeadline(next, now: now))
        }
    }

    private func handle(_ edge: ButtonEdge) {
        var input = ButtonInput()
        input.line = edge.line
        input.edge = edge.pressed ? .falling : .rising
        input.kernelTimestampNs = edge.kernelTimestampNanoseconds
        if edge.line == board.profile.button.offset {
            append(.buttonInput(input))
            perform(gestures.edge(pressed: edge.pressed, atNanoseconds: edge.kernelTimestampNanoseconds))
        } else if let resident = board.profile.checkInResident(line: edge.line), var decoder = checkInGestures[edge.line] {
            input.role = "checkin:" + resident
            append(.buttonInput(input))
            let decoded = decoder.edge(pressed: edge.pressed, atNanoseconds: edge.kernelTimestampNanoseconds)
            checkInGestures[edge.line] = decoder
            checkIn(resident, decoded)
        } else {
            input.role = "unassigned"
            append(.buttonInput(input))
        }
    }

    /// A press of a resident's own button (short or long; not a glitch) is their "I'm OK".
    private func checkIn(_ resident: String, _ decoded: [ButtonGestureDecoder.Gesture]) {
        for gesture in decoded {
            switch gesture {
            case .shortPress, .longPress:
                var c = CheckIn()
                c.resident = resident
                c.source = .checkInButton
                append(.checkIn(c))
            case .pressed, .released, .glitch:
                break
            }
        }
        scheduleGestureTick()
    }

    /// Acts on gestures: a long press raises this box's SOS, or cancels it if one is active; a
    /// short press silences sounding alarms. Every action is an event: the outputs follow once
    /// it is durable, so an SOS is in the log before any LED changes.
    private func perform(_ decoded: [ButtonGestureDecoder.Gesture]) {
        for gesture in decoded {
            switch gesture {
            case .longPress:
                if let active = ownActiveSOS() {
                    var cancel = AlertCancelled()
                    cancel.id = active
                    cancel.by = nodeID
                    cancel.reason = "cancelled with a long press at the box"
                    append(.alertCancelled(cancel))
                    logger.notice("SOS cancelled", metadata: ["alert": "\(active.text)"])
                } else {
                    let now = clock.nowMicroseconds()
                    var sos = Alert()
                    sos.id = AlertID(origin: nodeID, counter: nextAlertCounter())
                    sos.kind = .sos
                    sos.severity = .critical
                    sos.expiresAtUs = configuration.sosExpiryMicroseconds == 0 ? 0 : now.addingReportingOverflow(configuration.sosExpiryMicroseconds).partialValue
                    sos.text = "SOS button pressed at the shelter box"
                    append(.alertRaised(sos), time: now)
                    logger.notice("SOS raised", metadata: ["alert": "\(sos.id.text)"])
                }
            case .shortPress:
                // First what sounds here is silenced; only a press when nothing sounds answers
                // the calls for help received from other boxes, so silencing a resident's alarm
                // never tells another box "help is on the way" by accident.
                if !OutputPolicy.soundingAlarms(projections).isEmpty {
                    var ack = AlarmAcknowledged()
                    ack.by = "button"
                    append(.alarmAcknowledged(ack))
                } else {
                    answerCallsForHelp()
                }
            case .pressed, .released, .glitch:
                break
            }
        }
        scheduleGestureTick()
    }

    /// Acknowledges, over the air, the calls for help received from other boxes that the blue
    /// LED shows unanswered now: the durable state, so only alerts someone could have seen. One
    /// event per alert, naming it, so the log says exactly what was answered.
    private func answerCallsForHelp() {
        for entry in projections.alerts.awaitingAcknowledgement {
            guard !acknowledgementPending(AlertID(origin: entry.origin, counter: entry.counter)) else { continue }
            append(.alertAcknowledged(Self.acknowledgementMadeHere(entry)))
            logger.notice("call for help acknowledged", metadata: ["alert": "\(entry.idText)"])
        }
    }

    /// An acknowledgement of `id` appended but not yet durable (so not in the projections).
    private func acknowledgementPending(_ id: AlertID) -> Bool {
        pending.elements.contains { if case .alertAcknowledged(let a) = $0.body { a.id == id } else { false } }
    }

    static func acknowledgementMadeHere(_ entry: AlertBook.Entry) -> AlertAcknowledged {
        var ack = AlertAcknowledged()
        ack.id = AlertID(origin: entry.origin, counter: entry.counter)
        ack.hops = 0
        ack.heardFrom = 0
        ack.expiresAtUs = entry.expiresAtMicroseconds
        ack.severity = AlertSeverity(rawValue: entry.severity) ?? .unspecified
        return ack
    }

    private func scheduleGestureTick() {
        let next = ([gestures.nextTick] + checkInGestures.values.map(\.nextTick)).compactMap { $0 }.min()
        if let next {
            try? scheduler.schedule(.gesture, atMonotonicNanoseconds: next)
        } else {
            try? scheduler.cancel(.gesture)
        }
    }

    /// This box's newest active SOS, counting events not yet durable.
    private func ownActiveSOS() -> AlertID? {
        var active: [String: AlertID] = [:]
        for a in projections.alerts.active where a.raisedHere && a.kind == AlertKind.sos.rawValue {
            active[a.idText] = AlertID(origin: a.origin, counter: a.counter)
        }
        for e in pending.elements {
            switch e.body {
            case .alertRaised(let a) where a.kind == .sos: active[a.id.text] = a.id
            case .alertCancelled(let c): active[c.id.text] = nil
            default: break
            }
        }
        return active.values.max { $0.counter < $1.counter }
    }

    /// Alert ids are (node, counter); the counter continues from the log, so ids never repeat.
    private func nextAlertCounter() -> UInt32 {
        // Kept apart from the alerts themselves, which the book forgets once long ended.
        var highest = projections.alerts.highestCounterRaisedHere
        for e in pending.elements {
            if case .alertRaised(let a) = e.body, a.id.origin == nodeID { highest = max(highest, a.id.counter) }
        }
        return highest &+ 1
    }

    // MARK: The escalation ladder and the outbox

    /// Appends the earliest ladder deadline once it is due, or arms the timer for it. After a
    /// restart overdue deadlines come one after the other, each computed from the state the
    /// previous one produced: none skipped, none repeated.
    private func scheduleLadder() {
        guard !stopping, let deadline = projections.escalations.earliestDeadline else {
            try? scheduler.cancel(.ladderDeadline)
            return
        }
        if deadline == appendedDeadline { return } // appended, waiting to become durable
        let now = clock.nowMicroseconds()
        if deadline.dueMicroseconds <= now {
            var reached = DeadlineReached()
            reached.resident = deadline.resident
            reached.ladder = deadline.ladder
            reached.step = deadline.step
            reached.dueUs = deadline.dueMicroseconds
            append(.deadlineReached(reached), time: now)
            appendedDeadline = deadline
            try? scheduler.cancel(.ladderDeadline)
        } else {
            try? scheduler.schedule(.ladderDeadline, atMonotonicNanoseconds: realDeadline(deadline.dueMicroseconds, now: now))
        }
    }

    /// The monotonic time at which the node clock reaches `due` (the clock may run faster).
    private func realDeadline(_ due: UInt64, now: UInt64) -> UInt64 {
        let realMicroseconds = Double(due > now ? due - now : 0) / clock.rate
        return monotonicNanoseconds() &+ UInt64(min(realMicroseconds * 1_000, 1e17))
    }

    /// Starts the next due delivery, or arms the timer for it. One delivery runs at a time.
    private func scheduleOutbox() {
        guard !stopping, delivery == nil else { return }
        let now = clock.nowMicroseconds()
        var earliest: UInt64?
        for entry in projections.outbox.pending where entry.channel != .broadcast && !attemptsInFlight.contains(entry.id) {
            let due = projections.outbox.nextAttemptMicroseconds(entry)
            if due <= now {
                deliver(entry)
                return
            }
            earliest = earliest.map { min($0, due) } ?? due
        }
        // Broadcast entries wait for the radio's transmitter (the radio issue).
        if let earliest {
            try? scheduler.schedule(.outboxAttempt, atMonotonicNanoseconds: realDeadline(earliest, now: now))
        } else {
            try? scheduler.cancel(.outboxAttempt)
        }
    }

    private func deliver(_ entry: Outbox.Entry) {
        let attempt = entry.attempts + 1
        logger.notice("outbox message", metadata: [
            "entry": "\(entry.id)", "to": "\(entry.recipients.joined(separator: ", "))", "text": "\(entry.text)",
            "attempt": "\(attempt)",
        ])
        guard let command = configuration.notifier.command else {
            recordAttempt(entry: entry.id, attempt: attempt, delivered: true, notifier: "log", error: "")
            return
        }
        do {
            let child = try ChildProcess(path: command, arguments: configuration.notifier.arguments,
                                         input: OutboxMessage.json(entry, attempt: attempt, nodeID: nodeID))
            try epoll.add(child.exitDescriptor, token: Token.child.rawValue)
            delivery = DeliveryAttempt(entry: entry.id, attempt: attempt, child: child)
            try scheduler.schedule(.commandTimeout, atMonotonicNanoseconds: monotonicNanoseconds() + configuration.notifier.timeoutMicroseconds * 1_000)
        } catch {
            recordAttempt(entry: entry.id, attempt: attempt, delivered: false, notifier: "command", error: "\(error)")
        }
    }

    /// The command notifier's program exited (or timed out and was killed).
    private func finishDelivery(timedOut: Bool) {
        guard let running = delivery else { return }
        if timedOut {
            running.timedOut = true
            running.child.kill()
        }
        guard let status = running.child.reap() else { return } // the pidfd fires once it exits
        try? epoll.remove(running.child.exitDescriptor)
        try? scheduler.cancel(.commandTimeout)
        delivery = nil
        let stderr = running.child.standardError()
        let error: String
        if running.timedOut {
            error = "timed out after \(HumanDuration.format(microseconds: configuration.notifier.timeoutMicroseconds))"
        } else if status != 0 {
            error = "exit status \(status)" + (stderr.isEmpty ? "" : ": \(stderr)")
        } else {
            error = ""
        }
        if !error.isEmpty {
            logger.warning("delivery failed", metadata: ["entry": "\(running.entry)", "error": "\(error)"])
        }
        recordAttempt(entry: running.entry, attempt: running.attempt, delivered: error.isEmpty, notifier: "command", error: error)
    }

    private func recordAttempt(entry: String, attempt: UInt32, delivered: Bool, notifier: String, error: String) {
        var a = OutboxAttempt()
        a.entry = entry
        a.attempt = attempt
        a.delivered = delivered
        a.notifier = notifier
        a.error = String(error.prefix(500))
        attemptsInFlight.insert(entry)
        append(.outboxAttempt(a))
    }

    private func handleTimers() {
        let due: [Scheduler.Timer]
        do {
            due = try scheduler.takeDue(now: monotonicNanoseconds())
        } catch {
            logger.error("timer failed", metadata: ["error": "\(error)"])
            return
        }
        for timer in due {
            switch timer {
            case .closeScanWindow:
                closeScanWindow()
            case .checkpoint:
                if eventsSinceCheckpoint > 0 { checkpoint() }
                try? scheduler.schedule(.checkpoint, atMonotonicNanoseconds: monotonicNanoseconds() + configuration.checkpointIntervalMicroseconds * 1_000)
            case .stopAfterDuration:
                stopRequest.withLock { if $0 == nil { $0 = "duration elapsed" } }
            case .ladderDeadline:
                scheduleLadder()
            case .outboxAttempt:
                scheduleOutbox()
            case .commandTimeout:
                finishDelivery(timedOut: true)
            case .gesture:
                let now = monotonicNanoseconds()
                for (line, var decoder) in checkInGestures {
                    let decoded = decoder.tick(atNanoseconds: now)
                    checkInGestures[line] = decoder
                    if let resident = board.profile.checkInResident(line: line) { checkIn(resident, decoded) }
                }
                perform(gestures.tick(atNanoseconds: now))
            case .pattern:
                driveOutputs()
            case .airtime:
                reconcileAirtime()
            case .retention:
                runRetention()
                try? scheduler.schedule(.retention, atMonotonicNanoseconds: monotonicNanoseconds() + Self.retentionCheckNanoseconds)
            }
        }
    }

    /// Closes the open window now: on its timer, or early when the node stops (hits are never
    /// stamped with a time that has not happened yet).
    private func closeScanWindow() {
        let closedAt = clock.nowMicroseconds()
        for hit in scanWindow.close(at: closedAt) {
            append(.scanHit(hit), time: closedAt)
        }
    }

    // MARK: Appending and durability

    /// Appends an event; it reaches the projections once the writer reports it durable.
    @discardableResult
    private func append(_ body: EventBody, time: UInt64? = nil) -> UInt64? {
        let t = time ?? clock.nowMicroseconds()
        let (kind, payload) = EventCodec.encode(body)
        do {
            let seq = try log.append(LogRecord(kind: kind, timeMicroseconds: t, payload: payload),
                                     priority: body.isSheddable ? .sheddable : .critical)
            pending.append(Event(sequence: seq, timeMicroseconds: t, body: body))
            counters.appended += 1
            return seq
        } catch .shed {
            counters.shed += 1
        } catch {
            counters.refused += 1
            logger.critical("event not logged", metadata: ["kind": "\(body.kind.name)", "error": "\(error)"])
        }
        return nil
    }

    private func drainInbox() {
        let reports = inbox.reports.withLock { r in
            let taken = r
            r.removeAll(keepingCapacity: true)
            return taken
        }
        guard !reports.isEmpty else { return }
        // The advertising plan changes only with alerts (and with time, which its timer covers):
        // rebuilding it, HMACs included, on every commit of scan hits would be waste.
        var alertsChanged = false
        for report in reports {
            let refused = Set(report.refused)
            while let first = pending.first, first.sequence <= report.durableThrough {
                _ = pending.removeFirst()
                if refused.contains(first.sequence) {
                    counters.refused += 1
                    if case .deadlineReached = first.body { appendedDeadline = nil } // refused: try again
                    if case .outboxAttempt(let a) = first.body { attemptsInFlight.remove(a.entry) }
                    if !first.body.isSheddable {
                        logger.critical("a critical event was refused by the log", metadata: [
                            "kind": "\(first.body.kind.name)", "sequence": "\(first.sequence)",
                        ])
                    }
                    continue
                }
                projections.apply(.event(first))
                eventsSinceCheckpoint += 1
                switch first.body {
                case .deadlineReached(let d) where appendedDeadline.map({ $0.resident == d.resident && $0.ladder == d.ladder && $0.step == d.step && $0.dueMicroseconds == d.dueUs }) == true:
                    appendedDeadline = nil
                case .outboxAttempt(let a): attemptsInFlight.remove(a.entry)
                case .contactRetention(let r): purgeContactData(cutoff: r.cutoffUs, through: first.sequence - 1)
                case .alertRaised, .alertReceived, .alertCancelled, .alertAcknowledged: alertsChanged = true
                default: break
                }
            }
            control?.settle(durableThrough: report.durableThrough, refused: refused)
        }
        if let failure = log.failure, fatal == nil {
            logger.critical("the event log failed; stopping so the node restarts from what is on disk", metadata: ["error": "\(failure)"])
            fatal = .log(failure)
            stopRequest.withLock { if $0 == nil { $0 = "the event log failed" } }
        }
        reconcileOutputs()
        if alertsChanged { reconcileAirtime() }
        scheduleLadder()
        scheduleOutbox()
        if eventsSinceCheckpoint >= configuration.checkpointEveryEvents { checkpoint() }
    }

    /// Derives the desired patterns from the projections and drives the board to match.
    private func reconcileOutputs() {
        patterns.update(OutputPolicy.decide(projections, running: !stopping), nowNanoseconds: monotonicNanoseconds())
        driveOutputs()
    }

    /// Sets every line to its pattern's level now and arms the timer for the next change.
    private func driveOutputs() {
        let now = monotonicNanoseconds()
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
            try? scheduler.schedule(.pattern, atMonotonicNanoseconds: next)
        } else {
            try? scheduler.cancel(.pattern)
        }
    }

    /// Queues the current state as the checkpoint. It only includes durable events, and the
    /// writer stores it in a later transaction than any of them.
    private func checkpoint() {
        do {
            try log.writeCheckpoint(name: Projections.checkpointName, throughSequence: projections.appliedThrough,
                                    state: projections.encoded())
            eventsSinceCheckpoint = 0
            counters.checkpoints += 1
        } catch {
            logger.error("checkpoint failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Stopping

    private func beginStop(reason: String) {
        stopping = true
        if let running = delivery {
            // An interrupted attempt is not recorded; the entry stays pending and is retried.
            running.child.kill()
            try? epoll.remove(running.child.exitDescriptor)
            delivery = nil
        }
        logger.info("stopping", metadata: ["reason": "\(reason)"])
        radio.stop()
        try? epoll.remove(radio.descriptor)
        try? scheduler.cancel(.closeScanWindow)
        closeScanWindow()
        var off = RadioStateChanged()
        off.state = .off
        off.adapter = radio.name
        off.reason = "node stopping"
        append(.radioStateChanged(off))
        var stopped = NodeStopped()
        stopped.reason = reason
        append(.nodeStopped(stopped))
    }

    private func finish() {
        checkpoint()
        log.close()
        drainInbox() // the close acknowledged whatever was left; nothing should be pending now
        board.stop()
        control?.close()
        // The directory is free for the next node as soon as this one is done with it.
        lockFile.unlock()
        finished = true
        logger.info("node stopped", metadata: [
            "applied_through": "\(projections.appliedThrough)", "events": "\(projections.health.totalEvents)",
        ])
    }

    private func shutdownAfterFailure() {
        radio.stop()
        board.stop()
        control?.close()
        log.close()
        lockFile.unlock()
        finished = true
    }

    // MARK: Status

    /// Kinds the CLI may append through the control socket.
    static let appendableKinds: Set<EventKind> = [
        .residentEnrolled, .residentUpdated, .residentRemoved, .checkIn, .alarmAcknowledged,
        .exposureDetected, .exposureKeysPublished, .alertRaised, .alertCancelled, .alertAcknowledged,
    ]

    struct Refusal: Error { let message: String }

    /// Alerts raised, cancelled or acknowledged from the CLI (`vigil alert`): they go on the air,
    /// so the node checks them against what it knows. A raised alert gets its id here (origin
    /// and the next counter: only the loop knows it); a cancel must name an active alert raised
    /// here; an acknowledgement an active call for help received from another box, not yet
    /// acknowledged. Without a shelter key nothing goes on the air, so all three are refused.
    /// Messages are fixed text (they go into JSON unescaped).
    func validatedFromOutside(_ body: EventBody) -> Result<EventBody, Refusal> {
        switch body {
        case .alertRaised, .alertCancelled, .alertAcknowledged:
            guard air.hasKey else {
                return .failure(Refusal(message: "this box has no shelter key (radio.alerts.key_file), so nothing would go on the air"))
            }
        default:
            break
        }
        switch body {
        case .alertRaised(var alert):
            guard alert.kind != .unspecified, AlertFrame.FrameType(kind: alert.kind) != nil else {
                return .failure(Refusal(message: "unknown alert kind"))
            }
            let now = clock.nowMicroseconds()
            let lifetime = configuration.airAlerts.maxLifetimeMicroseconds
            guard alert.expiresAtUs > now, alert.expiresAtUs - now <= lifetime else {
                return .failure(Refusal(message: "the expiry must be in the future and within radio.alerts.max_lifetime"))
            }
            if alert.hasLocation {
                guard abs(Int64(alert.location.latitudeE7)) <= 900_000_000, abs(Int64(alert.location.longitudeE7)) <= 1_800_000_000 else {
                    return .failure(Refusal(message: "latitude must be within 90 and longitude within 180 degrees"))
                }
            }
            guard alert.text.utf8.count <= 500 else { return .failure(Refusal(message: "the text is longer than 500 bytes")) }
            if alert.severity == .unspecified { alert.severity = Self.defaultSeverity(alert.kind) }
            let counter = nextAlertCounter()
            guard counter <= AlertFrame.maximumCounter else {
                return .failure(Refusal(message: "this box has used every alert counter a frame can carry"))
            }
            alert.id = AlertID(origin: nodeID, counter: counter)
            alert.hops = 0
            alert.heardFrom = 0
            return .success(.alertRaised(alert))
        case .alertCancelled(var cancel):
            let raisedHere = projections.alerts.active.contains { $0.raisedHere && $0.idText == cancel.id.text }
                || pending.elements.contains { if case .alertRaised(let a) = $0.body { a.id == cancel.id } else { false } }
            let cancelledAlready = pending.elements.contains { if case .alertCancelled(let c) = $0.body { c.id == cancel.id } else { false } }
            guard raisedHere, !cancelledAlready else {
                return .failure(Refusal(message: "no active alert raised at this box has that id"))
            }
            cancel.by = nodeID
            cancel.hops = 0
            cancel.heardFrom = 0
            return .success(.alertCancelled(cancel))
        case .alertAcknowledged(let ack):
            guard let entry = projections.alerts.active.first(where: { $0.idText == ack.id.text }), !entry.raisedHere,
                  AlertBook.asksForAnswer(kind: entry.kind) else {
                return .failure(Refusal(message: "no active call for help (sos or medical) received from another box has that id"))
            }
            guard projections.alerts.acknowledgements[entry.idText] == nil, !acknowledgementPending(ack.id) else {
                return .failure(Refusal(message: "that alert is already acknowledged"))
            }
            return .success(.alertAcknowledged(Self.acknowledgementMadeHere(entry)))
        default:
            return .success(body)
        }
    }

    /// The severity an alert raised here gets when none is given.
    static func defaultSeverity(_ kind: AlertKind) -> AlertSeverity {
        switch kind {
        case .sos, .medical, .fire, .evacuate: .critical
        case .flood, .roadHazard, .areaHazard: .warning
        default: .info
        }
    }

    func respond(to command: ControlCommand) -> ControlReply {
        switch command {
        case .ping:
            return .now(#"{"ok":true}"#)
        case .status:
            return .now((try? String(decoding: JSONEncoder().encode(liveStatus()), as: UTF8.self)) ?? #"{"ok":false}"#)
        case .press(let hold, let bounces, let resident):
            guard let sim = board as? SimulatedBoard else {
                return .now(#"{"ok":false,"error":"this node's board is not simulated"}"#)
            }
            var line: UInt32?
            if let resident {
                guard let l = board.profile.checkInButtons[resident]?.offset else {
                    return .now(#"{"ok":false,"error":"the board has no check-in button for that resident"}"#)
                }
                line = l
            }
            do {
                try sim.press(holdMicroseconds: hold, bounces: bounces, line: line)
                return .now(#"{"ok":true}"#)
            } catch {
                return .now(#"{"ok":false,"error":"\#(error)"}"#)
            }
        case .append(let kind, let payload):
            guard let k = EventKind(rawValue: Int(kind)), Self.appendableKinds.contains(k) else {
                return .now(#"{"ok":false,"error":"that kind cannot be appended from outside"}"#)
            }
            guard !stopping else { return .now(#"{"ok":false,"error":"the node is stopping"}"#) }
            let body: EventBody
            do {
                body = try EventCodec.decode(kind: kind, payload: payload, sequence: 0)
            } catch {
                return .now(#"{"ok":false,"error":"malformed event"}"#)
            }
            let checked: EventBody
            switch validatedFromOutside(body) {
            case .success(let b): checked = b
            case .failure(let refusal): return .now(#"{"ok":false,"error":"\#(refusal.message)"}"#)
            }
            guard let seq = append(checked) else { return .now(#"{"ok":false,"error":"the log refused the event"}"#) }
            return .whenDurable(seq)
        }
    }

    public func liveStatus() -> LiveStatus {
        LiveStatus(nodeID: String(nodeID, radix: 16), uptimeSeconds: Double(monotonicNanoseconds() - startedMonotonic) / 1e9,
                   board: board.profile.name, radio: radio.name, log: log.statistics, pending: pending.count,
                   counters: counters, appliedThrough: projections.appliedThrough,
                   outputs: (board as? SimulatedBoard).map { b in
                       Dictionary(uniqueKeysWithValues: OutputLine.allCases.map { ($0.rawValue, b.level($0)) })
                   } ?? [:],
                   openWindowAdvertisers: scanWindow.pendingAdvertisers, air: air.counters,
                   onAir: airFrames.map { "\($0.broadcast.isCancel ? "cancel " : $0.broadcast.isAcknowledgement ? "ack " : "")\($0.broadcast.idText) hops \($0.broadcast.hops)" },
                   hci: (radio as? HCIRadio)?.counters)
    }
}

/// What the loop counts besides the projections.
public struct NodeCounters: Sendable, Codable, Equatable {
    public var reports: UInt64 = 0
    public var appended: UInt64 = 0
    /// Scan hits shed because the log writer was over its queue limit.
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
}

public enum VigilVersion {
    public static let current = "0.1.0"
}
