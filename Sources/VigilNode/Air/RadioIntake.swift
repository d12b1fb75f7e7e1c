import VigilCore
import VigilEvents
import VigilRadio
import VigilSystem

/// The radio's side of the loop: reads its reports, folds them into scan hits through the scan
/// window, hands Vigil frames to `AirAlerts`, and logs the radio's state changes. A radio that
/// keeps failing or hangs up is dropped from the loop and logged; the node goes on (alarms, the
/// ladder and the log do not need it), and recovery is the adapter's job.
final class RadioIntake: NodeComponent {
    unowned let node: Node
    private(set) var scanWindow: ScanWindow
    private var reports: [RadioOutput] = []
    private var reads = DeviceReads()
    static let closeWindowTimer = Scheduler.Timer("close-scan-window")

    init(node: Node) {
        self.node = node
        scanWindow = ScanWindow(durationMicroseconds: node.configuration.scanWindowMicroseconds,
                                vigilUUID: node.configuration.airAlerts.serviceUUID)
    }

    func open() throws(NodeError) {
        node.scheduler.register(Self.closeWindowTimer) { [unowned self] in closeScanWindow() }
        do {
            try node.radio.start()
        } catch {
            throw .radio("\(error)")
        }
        guard node.loop.watch(node.radio.descriptor, "the radio", handler: { [unowned self] events in readable(events) }) else {
            throw .radio("the radio's descriptor cannot be watched")
        }
    }

    func start() throws(NodeError) {
        // An adapter that does not report its own state (the simulation) is on once started.
        if !node.radio.reportsState {
            var radioOn = RadioStateChanged()
            radioOn.state = .on
            radioOn.adapter = node.radio.name
            radioOn.reason = "started"
            node.append(.radioStateChanged(radioOn))
        }
    }

    private func readable(_ events: UInt32) {
        guard !node.stopping else { return }
        reports.removeAll(keepingCapacity: true)
        let node = self.node
        if let gone = reads.read(events: events, { try node.radio.readReady(into: &reports) }, failed: { error in
            node.counters.radioErrors += 1
            node.logger.error("radio read failed", metadata: ["error": "\(error)"])
        }) {
            dropRadio(error: gone)
        }
        for output in reports { handle(output) }
    }

    private func handle(_ output: RadioOutput) {
        switch output {
        case .report(let report):
            node.counters.reports += 1
            node.airAlerts.inspect(report)
            let wasOpen = scanWindow.openedAt != nil
            if let hit = scanWindow.add(report) {
                if node.append(.scanHit(hit), time: report.timeMicroseconds) != nil { node.counters.scanHitsLogged &+= 1 }
            } else if !wasOpen, let closesAt = scanWindow.closesAt {
                // The window is measured in real time, as the radio hears (not divided by the
                // clock's rate under --time-scale).
                let now = node.clock.nowMicroseconds()
                node.scheduler.schedule(Self.closeWindowTimer, afterNanoseconds: (closesAt > now ? closesAt - now : 0) &* 1_000)
            }
        case .stateChanged(let state, let reason):
            var change = RadioStateChanged()
            change.state = state
            change.adapter = node.radio.name
            change.reason = reason
            node.append(.radioStateChanged(change))
            if state == .on { node.logger.notice("radio on", metadata: ["reason": "\(reason)"]) } else {
                node.logger.warning("radio \(state)", metadata: ["reason": "\(reason)"])
            }
        case .onAir(let payload):
            node.airAlerts.settleBroadcast(payload)
        case .problem(let what):
            node.logger.warning("radio: \(what)")
        }
    }

    /// Stops watching a radio that keeps failing or hung up, and says so in the log.
    private func dropRadio(error: String) {
        node.loop.unwatch(node.radio.descriptor, "the radio")
        var change = RadioStateChanged()
        change.state = .unknown
        change.adapter = node.radio.name
        change.reason = "the radio stopped reporting: \(error)"
        node.append(.radioStateChanged(change))
        node.logger.critical("the radio no longer reports", metadata: ["error": "\(error)"])
    }

    /// Closes the open window now: on its timer, or early when the node stops (hits are never
    /// stamped with a time that has not happened yet).
    private func closeScanWindow() {
        let (time, hits) = scanWindow.close(at: node.clock.nowMicroseconds())
        guard !hits.isEmpty else { return }
        // The window's hits in one record (docs/log.md "The raw tier"), but a resident's tag's
        // sightings on their own: retention and compaction keep those (the ladder's data), and a
        // batch holding one would be kept whole.
        let escalations = node.projections.escalations
        // A tag enrolled by an event not applied yet is a tag when the window's record is.
        var enrolling: Set<UInt64> = []
        for e in node.pending.elements {
            switch e.body {
            case .residentEnrolled(let r), .residentUpdated(let r): if r.bleTag != 0 { enrolling.insert(r.bleTag & 0xFFFF_FFFF_FFFF) }
            default: break
            }
        }
        var tagSightings: [ScanHit] = []
        var others: [ScanHit] = []
        others.reserveCapacity(hits.count)
        for hit in hits {
            let address = hit.address & 0xFFFF_FFFF_FFFF
            if escalations.wasEverTag(address) || enrolling.contains(address) { tagSightings.append(hit) } else { others.append(hit) }
        }
        let (batch, unpackable) = ScanBatch.packing(others)
        if batch.count > 0, node.append(.scanBatch(batch), time: time) != nil { node.counters.scanHitsLogged &+= UInt64(batch.count) }
        for hit in tagSightings + unpackable where node.append(.scanHit(hit), time: time) != nil { node.counters.scanHitsLogged &+= 1 }
    }

    func stop() {
        node.radio.stop()
        node.loop.unwatch(node.radio.descriptor, "the radio")
        node.scheduler.cancel(Self.closeWindowTimer)
        closeScanWindow()
        var off = RadioStateChanged()
        off.state = .off
        off.adapter = node.radio.name
        off.reason = NodeHealth.radioStopReason
        node.append(.radioStateChanged(off))
    }
}
