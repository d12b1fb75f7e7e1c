import CoreMetrics
import Logging
import VigilBoard
import VigilCore
import VigilEvents
import VigilHubProtocol
import VigilLog
import VigilRadio
import VigilSystem

/// How events become durable and applied, and a start that checks its log first: the node's
/// side of the log (docs/log.md).
extension Node {
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
    func appendInMemory(_ event: Event, failure: LogError) -> UInt64 {
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
    func enterMemoryMode(_ failure: LogError) {
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
    func beginOpening(_ opening: LogOpening) throws(NodeError) {
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
    func completeOpening() {
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
    func recordAlertFloor(_ counter: UInt32) {
        do {
            try alertFloor.record(counter)
        } catch {
            logger.error("cannot keep the alert counter outside the log; a start before its log is open may reuse an alert id",
                         metadata: ["error": "\(error)"])
        }
    }

    /// Applies what the writer reported durable, tells the components, and reconciles.
    func drainDurable() {
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

    func reconcile() {
        reconcileOutputs()
        for c in active { c.reconcile() }
        callStateWaiters()
    }
}
