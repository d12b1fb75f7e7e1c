import VigilCore
import VigilEvents
import VigilRadio
import VigilSystem

/// Alerts over the air: frames heard from other boxes become events (new alerts, cancels,
/// acknowledgements; renewals of alerts without a fixed end), relays heard feed suppression, the
/// radio's confirmation settles this box's SOS broadcast, and the advertising plan follows the
/// alert book. The frame logic itself is `AirLink` (no I/O) and `AlertAirtime` (pure).
final class AirAlerts: NodeComponent {
    unowned let node: Node
    private(set) var air: AirLink
    /// The alert frames in the last plan given to the radio (for `status` and settling).
    private(set) var onAir: [(broadcast: AlertAirtime.Broadcast, payload: [UInt8])] = []
    /// Frames of other boxes this box began relaying (each alert, cancel or acknowledgement once
    /// per hop count it goes on the air with): the metrics' relayed frames.
    private(set) var relaysStarted: UInt64 = 0
    private var relaying: Set<String> = []
    /// Alert events became durable since the plan was made. The plan changes only with alerts
    /// (and with time, which its timer covers): rebuilding it, HMACs included, on every commit of
    /// scan hits would be waste.
    private var alertsChanged = false
    static let airtimeTimer = Scheduler.Timer("airtime")

    init(node: Node, air: AirLink) {
        self.node = node
        self.air = air
    }

    var hasKey: Bool { air.hasKey }

    func start() throws(NodeError) {
        node.scheduler.register(Self.airtimeTimer) { [unowned self] in reconcileAirtime() }
        alertsChanged = true
    }

    func applied(_ event: Event) {
        switch event.body {
        case .alertRaised, .alertReceived, .alertCancelled, .alertAcknowledged: alertsChanged = true
        default: break
        }
    }

    /// The GATT links changed (serving began, a link opened or closed): the connectable advert
    /// comes or goes with room for another link.
    func connectionsChanged() { alertsChanged = true }

    func reconcile() {
        guard alertsChanged else { return }
        alertsChanged = false
        reconcileAirtime()
    }

    /// Looks for a Vigil frame in an advertising report.
    func inspect(_ report: AdvertisingReport) {
        if let frame = air.inspect(report, now: node.clock.nowMicroseconds()) {
            heard(frame, from: report)
        }
    }

    /// A verified frame from another box: new alerts, cancels and acknowledgements go to the log
    /// (never shed); one already known only counts as a relay heard, for suppression.
    private func heard(_ frame: AlertFrame, from report: AdvertisingReport) {
        let id = frame.id
        let isCancel = frame.type == .cancel
        let isAcknowledgement = frame.type == .acknowledge
        let alerts = node.projections.alerts
        let known = (isAcknowledgement ? alerts.acknowledgements[id.text] != nil
            : alerts.alerts[id.text].map { isCancel ? $0.cancelled : true } ?? false)
            || node.pending.contains(alert: id, cancel: isCancel, acknowledgement: isAcknowledgement)
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
            node.append(.alertReceived(alert), time: report.timeMicroseconds)
            node.logger.notice("alert received", metadata: ["alert": "\(id.text)", "kind": "\(alert.kind)", "hops": "\(alert.hops)"])
        case .cancelled(var cancel):
            cancel.hops = UInt32(frame.hops)
            cancel.heardFrom = report.address
            cancel.expiresAtUs = UInt64(frame.expirySeconds) * 1_000_000
            cancel.severity = frame.severity
            cancel.reason = "cancel heard over the air from \(formatAddress(report.address))"
            node.append(.alertCancelled(cancel), time: report.timeMicroseconds)
            node.logger.notice("alert cancelled over the air", metadata: ["alert": "\(id.text)"])
        case .acknowledged(let acknowledged):
            node.append(.alertAcknowledged(acknowledged), time: report.timeMicroseconds)
            let ours = UInt32(truncatingIfNeeded: node.nodeID) == UInt32(truncatingIfNeeded: id.origin)
            node.logger.notice(ours ? "our alert was acknowledged by another box" : "alert acknowledged over the air",
                               metadata: ["alert": "\(id.text)", "hops": "\(acknowledged.hops)"])
        }
    }

    /// An alert whose origin keeps renewing its on-air expiry (it has no fixed end) stays alive
    /// here too: a frame expiring 30 min or more beyond what this box knows is logged again, and the
    /// alert book takes the later expiry.
    private func renewIfLater(_ frame: AlertFrame, from report: AdvertisingReport) {
        guard !frame.type.refersToAnotherAlert, let entry = node.projections.alerts.alerts[frame.id.text], !entry.cancelled,
              !entry.raisedHere, entry.expiresAtMicroseconds != 0 else { return }
        let offered = UInt64(frame.expirySeconds) * 1_000_000
        guard offered >= entry.expiresAtMicroseconds &+ 1_800_000_000 else { return }
        guard !node.pending.containsReceived(frame.id), case .alert(var alert) = frame.meaning(heardFrom: report.address) else { return }
        alert.text = "renewed over the air by \(formatAddress(report.address))"
        node.append(.alertReceived(alert), time: report.timeMicroseconds)
    }

    /// The radio confirmed a payload on the air: an SOS (or its cancel) raised here has left the
    /// box, which settles its broadcast outbox entry (so the log says when it went out).
    func settleBroadcast(_ payload: [UInt8]) {
        for (b, p) in onAir where p == payload && b.hops == 0 && b.kind == AlertKind.sos.rawValue && !b.isAcknowledgement {
            let entry = "sos/\(b.idText)/\(b.isCancel ? "cancelled" : "raised")"
            guard let e = node.projections.outbox.entries[entry], !e.delivered, !node.deliveries.inFlight(entry) else { continue }
            node.deliveries.record(entry: entry, attempt: e.attempts + 1, delivered: true, notifier: "radio", error: "")
        }
    }

    /// Gives the radio what to advertise now and arms the timer for the next change.
    private func reconcileAirtime() {
        guard !node.stopping else { return }
        let now = node.clock.nowMicroseconds()
        air.prune(node.projections.alerts, now: now)
        let (plan, frames) = air.plan(node.projections, nowMicroseconds: now, nodeID: node.nodeID,
                                      connectable: node.connections.connectableAdvertisement)
        onAir = frames
        let relayed = Set(frames.filter { $0.broadcast.hops > 0 }.map { "\($0.broadcast.idText) \($0.broadcast.hops) \($0.broadcast.isCancel) \($0.broadcast.isAcknowledgement)" })
        relaysStarted &+= UInt64(relayed.subtracting(relaying).count)
        relaying = relayed
        node.radio.advertise(plan)
        if let next = air.nextChange(node.projections, nowMicroseconds: now, nodeID: node.nodeID) {
            node.scheduler.schedule(Self.airtimeTimer, atNanoseconds: node.monotonicDeadline(forWallMicroseconds: next))
        }
    }

    /// The frames on the air, for `status` ("cancel " or "ack " before the id).
    var onAirDescriptions: [String] {
        onAir.map { "\($0.broadcast.isCancel ? "cancel " : $0.broadcast.isAcknowledgement ? "ack " : "")\($0.broadcast.idText) hops \($0.broadcast.hops)" }
    }
}
