import VigilCore
import VigilEvents
import VigilRadio
import VigilSystem

/// Alerts over the air: frames heard from other boxes become events (new alerts, cancels,
/// acknowledgements; renewals of alerts without a fixed end), relays heard feed suppression, the
/// radio's confirmation settles this box's SOS broadcast, and the advertising plan follows the
/// alert book. The frame logic itself is `AirLink` (no I/O) and `AlertAirtime` (pure).
final class AirAlerts: NodeComponent {
    unowned let context: any NodeContext
    let settings: AirAlertSettings
    /// Where revocations heard are kept (`DATA/revocations`).
    let dataDirectory: String
    /// What the plan is given to.
    let radio: any RadioAdapter
    /// Records an SOS broadcast the radio confirmed as an outbox attempt ("radio").
    let deliveries: Deliveries
    /// What the box advertises connectable while another link fits (`GATTLinks`); nil: nothing.
    private let connectableAdvertisement: () -> (advert: [UInt8], scanResponse: [UInt8])?
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
    static let clockTimer = Scheduler.Timer("clock-synchronised")
    /// How often the kernel's clock state is looked at (a stat of one file: systemd-timesyncd's).
    static let clockCheckNanoseconds: UInt64 = 60_000_000_000
    /// Revocations heard that could not be kept (the card refused): they still hold this run.
    private(set) var revocationWriteFailures: UInt64 = 0

    init(context: any NodeContext, air: AirLink, settings: AirAlertSettings, dataDirectory: String, radio: any RadioAdapter,
         deliveries: Deliveries, connectableAdvertisement: @escaping () -> (advert: [UInt8], scanResponse: [UInt8])?) {
        self.context = context
        self.air = air
        self.settings = settings
        self.dataDirectory = dataDirectory
        self.radio = radio
        self.deliveries = deliveries
        self.connectableAdvertisement = connectableAdvertisement
    }

    var hasKey: Bool { air.hasKey }

    func start() throws(NodeError) {
        context.scheduler.register(Self.airtimeTimer) { [unowned self] in reconcileAirtime() }
        context.scheduler.register(Self.clockTimer) { [unowned self] in checkClock() }
        checkClock()
        alertsChanged = true
    }

    private var monotonicMicroseconds: UInt64 { context.monotonic.nowNanoseconds() / 1_000 }

    /// Whether the kernel's wall clock is synchronised, as systemd-timesyncd says by the file it
    /// keeps (docs/signed-frames.md "Time"): a stat, which the unit's `@clock` filter allows
    /// (adjtimex, which would ask the kernel itself, is in that filter).
    private func checkClock() {
        let synchronised = FileSystem.exists(settings.clockSynchronisedPath)
        if synchronised != air.signed.clock.systemSynchronised {
            air.signed.systemClock(synchronised: synchronised)
            context.logger.notice(synchronised ? "the wall clock is synchronised" : "the wall clock is not synchronised",
                               metadata: ["source": "\(settings.clockSynchronisedPath)"])
        }
        context.scheduler.schedule(Self.clockTimer, atNanoseconds: context.monotonic.nowNanoseconds() &+ Self.clockCheckNanoseconds)
    }

    /// The hub's time, read over its pinned TLS (the hub sync's answer).
    func hubTime(_ microseconds: UInt64) {
        air.signed.hubTime(microseconds, monotonic: monotonicMicroseconds)
    }

    /// Revocations from the hub's feed: checked, kept durably, believed at once. One this box
    /// cannot check yet (it has no network key, or another one: a box that has just joined reads
    /// the feed before its next start takes the hub's key) is kept all the same: the next start
    /// checks every kept revocation under the network key it then has, and drops the others.
    func revocationsFromHub(_ revocations: [Revocation]) {
        let added = revocations.filter { air.signed.add($0) }
        keep(added, from: "the hub")
        let unchecked = revocations.filter { r in !added.contains(r) && !(air.signed.verifier?.revokedKeys.contains(r.boxKey) ?? false) }
        guard !unchecked.isEmpty else { return }
        context.logger.warning("the hub's feed carried a revocation this box cannot check under its network key: kept, and checked at the next start",
                            metadata: ["node": "\(unchecked.map { String($0.node, radix: 16) }.joined(separator: ","))"])
        do {
            try BoxKeyFiles.addRevocations(unchecked, directory: dataDirectory)
        } catch {
            revocationWriteFailures &+= 1
            context.logger.error("could not keep revocations", metadata: ["error": "\(error)"])
        }
    }

    private func keep(_ revocations: [Revocation], from source: String) {
        guard !revocations.isEmpty else { return }
        for r in revocations {
            context.logger.warning("a box's key was revoked by the network: its frames are refused from now on",
                                metadata: ["node": "\(String(r.node, radix: 16))", "from": "\(source)"])
        }
        do {
            try BoxKeyFiles.addRevocations(revocations, directory: dataDirectory)
        } catch {
            revocationWriteFailures &+= 1
            context.logger.error("could not keep revocations: they hold until the box stops", metadata: ["error": "\(error)"])
        }
        // No event follows a revocation: the relay goes on the air now.
        reconcileAirtime()
    }

    /// What `vigil status` says about signed frames and the clock.
    var signingStatus: SigningStatus {
        let reading = air.signed.clock.now(wallMicroseconds: context.clock.nowMicroseconds(), monotonicMicroseconds: monotonicMicroseconds)
        let why = air.signed.whyNotSigningNow(wall: context.clock.nowMicroseconds(), monotonic: monotonicMicroseconds)
        return SigningStatus(signing: why == nil, whyNotSigning: why,
                             network: air.signed.verifier?.network.fingerprint, revoked: air.signed.verifier?.revokedKeys.count ?? 0,
                             clock: reading.source.rawValue, requireSigned: air.settings.requireSigned,
                             revocationWriteFailures: revocationWriteFailures)
    }

    func applied(_ event: Event) {
        switch event.body {
        case .alertRaised, .alertReceived, .alertCancelled, .alertAcknowledged: alertsChanged = true
        // The box's own public warnings go on the air too (its feeds', its hub's, its staff's).
        case .warningReceived, .warningDeadline: alertsChanged = true
        case .hubReceived(let item) where item.kind == EventKind.warningReceived.rawValue: alertsChanged = true
        case .hubReceived(let item) where item.kind == EventKind.boxKeyRevoked.rawValue:
            // The hub revoked a box (`vigil-hub revoke`), or certified a new key of one: believed
            // from this event on, once the network's key has checked it.
            guard case .boxKeyRevoked(let revoked)? = try? EventCodec.decode(kind: item.kind, payload: [UInt8](item.payload), sequence: event.sequence),
                  let revocation = try? Revocation(bytes: [UInt8](revoked.revocation)) else {
                context.logger.error("the hub's feed carried a revocation this box cannot read", metadata: ["seq": "\(event.sequence)"])
                return
            }
            revocationsFromHub([revocation])
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

    /// Looks for a Vigil frame in an advertising report. On every report the radio hears: the
    /// clocks are read only for one that carries Vigil's service data.
    func inspect(_ report: AdvertisingReport) {
        guard air.mayCarryFrame(report) else { return }
        if let frame = air.inspectHeard(report, now: context.clock.nowMicroseconds(), monotonic: monotonicMicroseconds) {
            heard(frame, from: report)
        }
        let revocations = air.signed.takeNewRevocations()
        if !revocations.isEmpty { keep(revocations, from: "the air") }
        for (warning, address) in air.takeWarningsHeard() { heard(warning, from: address, at: report.timeMicroseconds) }
    }

    /// A neighbour's public warning frame, verified: logged when it is news here (new from this
    /// signer, louder or quieter, another headline, or kept in force longer), within the
    /// signer's allowance; the warnings projection announces it.
    private func heard(_ frame: PublicWarningFrame, from address: UInt64, at time: UInt64) {
        var h = WarningHeard()
        h.signer = frame.signer
        h.digest = frame.digest
        h.sounds = frame.level == .sounds
        h.headline = frame.headline
        h.expiresUs = UInt64(frame.expirySeconds) * 1_000_000
        h.signedAtUs = UInt64(frame.signedAtSeconds) * 1_000_000
        h.heardFrom = address
        guard context.projections.warnings.wouldLog(h, atMicroseconds: time),
              !context.pending.containsWarningHeard(signer: h.signer, digest: h.digest) else { return }
        guard air.admitWarning(signer: frame.signer, monotonic: monotonicMicroseconds) else {
            context.logger.debug("a public warning frame over its sender's rate, not logged", metadata: ["signer": "\(String(frame.signer, radix: 16))"])
            return
        }
        context.append(.warningHeard(h), time: time)
        // The headline is the signer's words: in the log (`vigil why`), not the journal's notices.
        context.logger.notice("a neighbouring box tells of a public warning", metadata: [
            "signer": "\(String(frame.signer, radix: 16))", "level": "\(h.sounds ? "sounds" : "shown")"])
    }

    /// A verified frame from another box: new alerts, cancels and acknowledgements go to the log
    /// (never shed) within their sender's allowance; one already known only counts as a relay
    /// heard, for suppression.
    private func heard(_ heard: HeardFrame, from report: AdvertisingReport) {
        let frame = heard.frame
        let id = frame.id
        let isCancel = frame.type == .cancel
        let isAcknowledgement = frame.type == .acknowledge
        let alerts = context.projections.alerts
        let known = (isAcknowledgement ? alerts.acknowledgements[id.text] != nil
            : alerts.alerts[id.text].map { isCancel ? $0.cancelled : true } ?? false)
            || context.pending.contains(alert: id, cancel: isCancel, acknowledgement: isAcknowledgement)
        if known {
            air.keepSigned(heard)
            air.countDuplicate()
            air.heardRelay(frame, now: report.timeMicroseconds)
            renewIfLater(heard, from: report)
            return
        }
        guard air.admitNew(heard, monotonic: monotonicMicroseconds) else {
            // Counted, not logged at notice: a flood would flood the journal too.
            context.logger.debug("a new alert over its sender's rate, not logged", metadata: ["alert": "\(id.text)", "sender": "\(heard.sender)"])
            return
        }
        switch frame.meaning(heardFrom: report.address) {
        case .alert(var alert):
            alert.text = "heard over the air from \(formatAddress(report.address))"
            context.append(.alertReceived(alert), time: report.timeMicroseconds)
            context.logger.notice("alert received", metadata: ["alert": "\(id.text)", "kind": "\(alert.kind)", "hops": "\(alert.hops)"])
        case .cancelled(var cancel):
            cancel.hops = UInt32(frame.hops)
            cancel.heardFrom = report.address
            cancel.expiresAtUs = UInt64(frame.expirySeconds) * 1_000_000
            cancel.severity = frame.severity
            cancel.reason = "cancel heard over the air from \(formatAddress(report.address))"
            context.append(.alertCancelled(cancel), time: report.timeMicroseconds)
            context.logger.notice("alert cancelled over the air", metadata: ["alert": "\(id.text)"])
        case .acknowledged(let acknowledged):
            context.append(.alertAcknowledged(acknowledged), time: report.timeMicroseconds)
            let ours = UInt32(truncatingIfNeeded: context.nodeID) == UInt32(truncatingIfNeeded: id.origin)
            context.logger.notice(ours ? "our alert was acknowledged by another box" : "alert acknowledged over the air",
                               metadata: ["alert": "\(id.text)", "hops": "\(acknowledged.hops)"])
        }
    }

    /// An alert whose origin keeps renewing its on-air expiry (it has no fixed end) stays alive
    /// here too: a frame expiring 30 min or more beyond what this box knows is logged again, and the
    /// alert book takes the later expiry. A renewal is logged, so it takes from its sender's
    /// allowance like a new alert (a stolen box could otherwise step its alerts' expiries).
    private func renewIfLater(_ heard: HeardFrame, from report: AdvertisingReport) {
        let frame = heard.frame
        guard !frame.type.refersToAnotherAlert, let entry = context.projections.alerts.alerts[frame.id.text], !entry.cancelled,
              !entry.raisedHere, entry.expiresAtMicroseconds != 0 else { return }
        let offered = UInt64(frame.expirySeconds) * 1_000_000
        guard offered >= entry.expiresAtMicroseconds &+ 1_800_000_000 else { return }
        guard !context.pending.containsReceived(frame.id), case .alert(var alert) = frame.meaning(heardFrom: report.address),
              air.admitNew(heard, monotonic: monotonicMicroseconds, renewal: true) else { return }
        alert.text = "renewed over the air by \(formatAddress(report.address))"
        context.append(.alertReceived(alert), time: report.timeMicroseconds)
    }

    /// The radio confirmed a payload on the air: an SOS (or its cancel) raised here has left the
    /// box, which settles its broadcast outbox entry (so the log says when it went out).
    func settleBroadcast(_ payload: [UInt8]) {
        for (b, p) in onAir where p == payload && b.hops == 0 && b.kind == AlertKind.sos.rawValue && !b.isAcknowledgement {
            let entry = "sos/\(b.idText)/\(b.isCancel ? "cancelled" : "raised")"
            guard let e = context.projections.outbox.entries[entry], !e.delivered, !deliveries.inFlight(entry) else { continue }
            deliveries.record(entry: entry, attempt: e.attempts + 1, delivered: true, notifier: "radio", error: "")
        }
    }

    /// Gives the radio what to advertise now and arms the timer for the next change.
    private func reconcileAirtime() {
        guard !context.stopping else { return }
        let now = context.clock.nowMicroseconds()
        air.prune(context.projections.alerts, now: now)
        let (plan, frames) = air.plan(context.projections, nowMicroseconds: now, monotonic: monotonicMicroseconds, nodeID: context.nodeID,
                                      connectable: connectableAdvertisement())
        onAir = frames
        let relayed = Set(frames.filter { $0.broadcast.hops > 0 }.map { "\($0.broadcast.idText) \($0.broadcast.hops) \($0.broadcast.isCancel) \($0.broadcast.isAcknowledgement)" })
        relaysStarted &+= UInt64(relayed.subtracting(relaying).count)
        relaying = relayed
        radio.advertise(plan)
        if let next = air.nextChange(context.projections, nowMicroseconds: now, nodeID: context.nodeID) {
            context.scheduler.schedule(Self.airtimeTimer, atNanoseconds: context.monotonicDeadline(forWallMicroseconds: next))
        }
    }

    /// The frames on the air, for `status` ("cancel " or "ack " before the id).
    var onAirDescriptions: [String] {
        onAir.map { "\($0.broadcast.isCancel ? "cancel " : $0.broadcast.isAcknowledgement ? "ack " : "")\($0.broadcast.idText) hops \($0.broadcast.hops)"
            + ($0.payload.count > AdvertisingPayload.legacyMaximumLength ? " (signed)" : "") }
    }
}

/// Signed frames and the clock, for `vigil status` (docs/signed-frames.md).
public struct SigningStatus: Sendable, Codable, Equatable {
    /// Whether this box signs its frames.
    public var signing: Bool
    public var whyNotSigning: String?
    /// The network key's fingerprint (nil: none, signed frames are not checked).
    public var network: String?
    /// Box keys the network revoked, as this box knows.
    public var revoked: Int
    /// Where the box's time comes from: system, hub, frame or none.
    public var clock: String
    public var requireSigned: Bool
    public var revocationWriteFailures: UInt64
}
