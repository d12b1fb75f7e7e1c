import VigilCore
import VigilEvents
import VigilRadio
import VigilSystem

/// The radio's side of the loop: reads its reports, folds them into scan hits through the scan
/// window, hands Vigil frames to `AirAlerts`, and logs the radio's state changes. A radio that
/// keeps failing or hangs up is dropped from the loop and logged; the node goes on (alarms, the
/// ladder and the log do not need it), and recovery is the adapter's job.
final class RadioIntake: NodeComponent {
    unowned let context: any RadioIntakeContext
    let radio: any RadioAdapter
    /// Frames heard go there first; the radio's confirmations of this box's own too.
    let airAlerts: AirAlerts
    private(set) var scanWindow: ScanWindow
    private var reports: [RadioOutput] = []
    private var reads = DeviceReads()
    /// Reports handled in the read under way.
    private var reportsRead: UInt64 = 0
    static let closeWindowTimer = Scheduler.Timer("close-scan-window")

    init(context: any RadioIntakeContext, radio: any RadioAdapter, airAlerts: AirAlerts, scanWindowMicroseconds: UInt64, vigilUUID: UInt16) {
        self.context = context
        self.radio = radio
        self.airAlerts = airAlerts
        scanWindow = ScanWindow(durationMicroseconds: scanWindowMicroseconds, vigilUUID: vigilUUID)
    }

    func open() throws(NodeError) {
        context.scheduler.register(Self.closeWindowTimer) { [unowned self] in closeScanWindow() }
        do {
            try radio.start()
        } catch {
            throw .radio("\(error)")
        }
        guard context.watch(radio.descriptor, "the radio", handler: { [unowned self] events in readable(events) }) else {
            throw .radio("the radio's descriptor cannot be watched")
        }
    }

    func start() throws(NodeError) {
        // An adapter that does not report its own state (the simulation) is on once started.
        if !radio.reportsState {
            var radioOn = RadioStateChanged()
            radioOn.state = .on
            radioOn.adapter = radio.name
            radioOn.reason = "started"
            context.append(.radioStateChanged(radioOn), time: nil)
        }
    }

    private func readable(_ events: UInt32) {
        guard !context.stopping else { return }
        reports.removeAll(keepingCapacity: true)
        let radio = self.radio
        if let gone = reads.read(events: events, { try radio.readReady(into: &reports) }, failed: { [context] error in
            context.countRadioReadError()
            context.logger.error("radio read failed", metadata: ["error": "\(error)"])
        }) {
            dropRadio(error: gone)
        }
        for output in reports { handle(output) }
        // Counted once a read, not once a report: this is the path every report takes.
        if reportsRead > 0 { context.countRadioReports(reportsRead) }
        reportsRead = 0
    }

    private func handle(_ output: RadioOutput) {
        switch output {
        case .report(let report):
            reportsRead &+= 1
            airAlerts.inspect(report)
            let wasOpen = scanWindow.openedAt != nil
            if let hit = scanWindow.add(report) {
                if context.append(.scanHit(hit), time: report.timeMicroseconds) != nil { context.countScanHitsLogged(1) }
            } else if !wasOpen, let closesAt = scanWindow.closesAt {
                // The window is measured in real time, as the radio hears (not divided by the
                // clock's rate under --time-scale).
                let now = context.clock.nowMicroseconds()
                context.scheduler.schedule(Self.closeWindowTimer, afterNanoseconds: (closesAt > now ? closesAt - now : 0) &* 1_000)
            }
        case .stateChanged(let state, let reason):
            var change = RadioStateChanged()
            change.state = state
            change.adapter = radio.name
            change.reason = reason
            context.append(.radioStateChanged(change), time: nil)
            if state == .on { context.logger.notice("radio on", metadata: ["reason": "\(reason)"]) } else {
                context.logger.warning("radio \(state)", metadata: ["reason": "\(reason)"])
            }
        case .onAir(let payload):
            airAlerts.settleBroadcast(payload)
        case .problem(let what):
            context.logger.warning("radio: \(what)")
        }
    }

    /// Stops watching a radio that keeps failing or hung up, and says so in the log.
    private func dropRadio(error: String) {
        context.unwatch(radio.descriptor, "the radio")
        var change = RadioStateChanged()
        change.state = .unknown
        change.adapter = radio.name
        change.reason = "the radio stopped reporting: \(error)"
        context.append(.radioStateChanged(change), time: nil)
        context.logger.critical("the radio no longer reports", metadata: ["error": "\(error)"])
    }

    /// Closes the open window now: on its timer, or early when the node stops (hits are never
    /// stamped with a time that has not happened yet).
    private func closeScanWindow() {
        let (time, hits) = scanWindow.close(at: context.clock.nowMicroseconds())
        guard !hits.isEmpty else { return }
        // The window's hits in one record (docs/log.md "The raw tier"), but a resident's tag's
        // sightings on their own: retention and compaction keep those (the ladder's data), and a
        // batch holding one would be kept whole.
        let escalations = context.projections.escalations
        // A tag enrolled by an event not applied yet is a tag when the window's record is.
        var enrolling: Set<UInt64> = []
        for e in context.pending.elements {
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
        if batch.count > 0, context.append(.scanBatch(batch), time: time) != nil { context.countScanHitsLogged(UInt64(batch.count)) }
        for hit in tagSightings + unpackable where context.append(.scanHit(hit), time: time) != nil { context.countScanHitsLogged(1) }
    }

    func stop() {
        radio.stop()
        context.unwatch(radio.descriptor, "the radio")
        context.scheduler.cancel(Self.closeWindowTimer)
        closeScanWindow()
        var off = RadioStateChanged()
        off.state = .off
        off.adapter = radio.name
        off.reason = NodeHealth.radioStopReason
        context.append(.radioStateChanged(off), time: nil)
    }
}
