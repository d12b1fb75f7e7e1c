import Foundation
import VigilCAP
import VigilCore
import VigilEvents
import VigilExposure
import VigilRadio
import VigilSystem

/// What the air brought that the log does not show: frames refused and why.
public struct AirCounters: Sendable, Codable, Equatable {
    /// Frames (alerts, cancels, acknowledgements) whose tag verified and that were new (appended).
    public var accepted: UInt64 = 0
    /// Valid frames for an alert (or cancel) already known: the same advert heard again.
    public var duplicates: UInt64 = 0
    /// Frames whose tag did not verify: forgeries, or a box with another shelter's key.
    public var forged: UInt64 = 0
    /// Frames whose expiry had passed (or was implausibly far ahead): replays of old frames.
    public var stale: UInt64 = 0
    /// Vigil service data that is not a well-formed frame.
    public var malformed: UInt64 = 0
    /// This box's own frames heard back from relays.
    public var ownEchoes: UInt64 = 0
    /// Acknowledgement frames heard (new or not); new ones are logged as AlertAcknowledged.
    public var acknowledgements: UInt64 = 0
    /// Presence adverts of other Vigil boxes.
    public var presence: UInt64 = 0
    /// Frames heard while this box has no shelter key.
    public var unverifiable: UInt64 = 0
    /// The box's own exposure keys could not be read or stored (GAEN advertising paused).
    public var exposureKeyErrors: UInt64 = 0
    // Signed frames (docs/signed-frames.md).
    /// Signed frames whose certificate the network did not sign.
    public var forgedCertificates: UInt64 = 0
    /// Signed frames from a box whose key the network revoked.
    public var revoked: UInt64 = 0
    /// Signed frames raising or cancelling an alert of another box (signer is not the origin).
    public var impersonations: UInt64 = 0
    /// Signed frames signed too long ago, or ahead of this box's time (replays; a wrong clock).
    public var tooOld: UInt64 = 0
    /// Signed frames not checked: over the verification budget (a flood), never believed.
    public var shed: UInt64 = 0
    /// Shared-key (version 1) frames refused because `radio.require_signed` is on.
    public var unsigned: UInt64 = 0
    /// New alerts (raises, cancels, acknowledgements) refused because their sender brought more
    /// than `radio.alerts.new_per_sender_burst` too fast (a stolen box, a forger); not logged,
    /// and taken when heard again once the sender's allowance refills.
    public var overRate: UInt64 = 0
    /// Signed frames heard while this box has no network key to check them with.
    public var unverifiableSigned: UInt64 = 0
    /// New revocations heard on the air (verified; kept, and advertised with the others known).
    public var revocationsHeard: UInt64 = 0
    /// Take frames heard (verified); not logged yet: a call taken reaches other boxes by the hub.
    public var takes: UInt64 = 0
    /// Public warning frames of neighbours heard (verified), new or not; the node logs the news.
    public var warnings: UInt64 = 0
    public init() {}
}

/// A verified frame and who is answerable for it: the signer of a signed frame, the origin of a
/// shared-key one (the only name it carries; for an acknowledgement, the acknowledged alert's).
package struct HeardFrame: Sendable {
    package var frame: AlertFrame
    var sender: NewAlertAdmission.Sender
    /// A signed frame's bytes (kept for relaying once the node takes the frame).
    var signed: (frame: SignedAlertFrame, bytes: [UInt8])?
}

/// The node's side of alerts over the air: taking frames out of advertising reports, and
/// deciding what to advertise. Owned by the loop; no I/O of its own.
package struct AirLink {
    let key: AlertFrameKey?
    package let settings: AirAlertSettings
    /// Signed frames: this box's signing, and the checks of frames heard.
    package var signed: SignedAir
    let presence: PresenceIdentity?
    /// This box's id over the air (32 bits; see docs/radio.md "Alert frames").
    let origin: UInt32
    package private(set) var counters = AirCounters()
    /// The first relay by another box heard for each alert (and cancel), for suppression.
    private(set) var heard: [String: [AlertAirtime.RelayHeard]] = [:]
    private static let heardLimit = 4_096
    /// Each sender's allowance of new alerts.
    private var newAlerts: NewAlertAdmission
    /// Neighbours' public warning frames verified since the node last took them, with the
    /// advertiser's address. Bounded: a report carries one frame, the node takes them at once.
    private var warningsHeard: [(frame: PublicWarningFrame, address: UInt64)] = []
    /// Public warning frames this box advertises at once, at most: the loudest of its warnings.
    static let warningFramesLimit = 2
    /// When set, the presence advert is a GAEN one: the day's Temporary Exposure Key, the
    /// interval's RPI and metadata with this TX power (phones' apps see the box as an EN device).
    var exposureKeys: ExposureKeyStore?
    var exposureTxPower: Int8 = -10
    var exposureRetentionDays: UInt32 = 14

    /// Whether alert frames can be sent: a shelter key is installed, or the box signs its own.
    var hasKey: Bool { key != nil || signed.signer != nil }
    /// Whether any alert frame can go on the air: this box's own, or other boxes' signed frames
    /// relayed (a box with only the network key relays their bytes).
    var advertisesAlerts: Bool { hasKey || signed.verifier != nil }

    package init(key: AlertFrameKey?, settings: AirAlertSettings, presence: PresenceIdentity?, nodeID: UInt64,
                 credentials: BoxCredentials? = nil) {
        self.key = key
        self.settings = settings
        self.presence = presence
        self.origin = UInt32(truncatingIfNeeded: nodeID)
        var verification = settings.signed
        verification.serviceUUID = settings.serviceUUID
        verification.maximumLifetimeSeconds = settings.maxLifetimeMicroseconds / 1_000_000
        signed = SignedAir(credentials: credentials, nodeID: nodeID, settings: verification)
        newAlerts = NewAlertAdmission(burst: settings.newPerSenderBurst, intervalMicroseconds: settings.newPerSenderIntervalMicroseconds)
    }

    /// A verified frame the node does not know yet (or a renewal it would log): taken from its
    /// sender's allowance of new alerts (NewAlertAdmission); false (counted) when the sender is
    /// over it. A signed frame taken is kept for relaying.
    package mutating func admitNew(_ heard: HeardFrame, monotonic: UInt64, renewal: Bool = false) -> Bool {
        guard newAlerts.admit(heard.sender, nowNanoseconds: monotonic &* 1_000) else {
            counters.overRate += 1
            return false
        }
        if !renewal { counters.accepted += 1 }
        keepSigned(heard)
        return true
    }

    /// A neighbour's public warning the node would log: taken from its signer's allowance, as a
    /// new alert is (a stolen box cannot fill every log in range with warnings).
    package mutating func admitWarning(signer: UInt32, monotonic: UInt64) -> Bool {
        guard newAlerts.admit(.signer(signer), nowNanoseconds: monotonic &* 1_000) else {
            counters.overRate += 1
            return false
        }
        return true
    }

    mutating func takeWarningsHeard() -> [(frame: PublicWarningFrame, address: UInt64)] {
        defer { warningsHeard = [] }
        return warningsHeard
    }

    /// A frame the node already knows: a signed one's bytes are kept for relaying (a fresher
    /// signature of the origin's).
    mutating func keepSigned(_ heard: HeardFrame) {
        if let signed = heard.signed { self.signed.keepOriginal(signed.bytes, of: signed.frame) }
    }

    /// A verified frame from another box, or nil (not Vigil's, refused, or our own). `monotonic`
    /// paces the verification budget and runs the vouched clock.
    package mutating func inspect(_ report: AdvertisingReport, now: UInt64, monotonic: UInt64 = 0) -> AlertFrame? {
        inspectHeard(report, now: now, monotonic: monotonic)?.frame
    }

    /// Whether the report carries Vigil's service data at all: most of a crowded room's reports
    /// do not, and need no clock read or anything else.
    package func mayCarryFrame(_ report: AdvertisingReport) -> Bool {
        AdvertisingPayload.serviceData(uuid: settings.serviceUUID, in: report.data) != nil
    }

    /// A verified frame from another box and who is answerable for it, or nil.
    package mutating func inspectHeard(_ report: AdvertisingReport, now: UInt64, monotonic: UInt64 = 0) -> HeardFrame? {
        guard let frameBytes = AdvertisingPayload.serviceData(uuid: settings.serviceUUID, in: report.data) else { return nil }
        guard let first = frameBytes.first else {
            counters.malformed += 1
            return nil
        }
        if first >> 4 == SignedAlertFrame.version {
            return inspectSigned(frameBytes, from: report.address, now: now, monotonic: monotonic)
        }
        if first & 0x0F == 0 {
            counters.presence += 1
            return nil
        }
        if settings.requireSigned {
            counters.unsigned += 1
            return nil
        }
        guard let key else {
            counters.unverifiable += 1
            return nil
        }
        let frame: AlertFrame
        do {
            frame = try AlertFrame.decode(frameBytes, key: key, uuid: settings.serviceUUID)
        } catch .badTag {
            counters.forged += 1
            return nil
        } catch {
            counters.malformed += 1
            return nil
        }
        do {
            try frame.verifyLifetime(nowMicroseconds: now, maxLifetimeSeconds: UInt32(min(settings.maxLifetimeMicroseconds / 1_000_000, UInt64(UInt32.max))))
        } catch {
            counters.stale += 1
            return nil
        }
        return verified(frame)
    }

    /// A frame that verified, for the node; nil for this box's own heard back. An acknowledgement
    /// names the acknowledged alert, so this box's origin there means "your alert was heard"; one
    /// this box signed is its own.
    private mutating func verified(_ frame: AlertFrame, signed: (frame: SignedAlertFrame, bytes: [UInt8])? = nil) -> HeardFrame? {
        let sender: NewAlertAdmission.Sender = signed.map { .signer($0.frame.signer) } ?? .sharedKeyOrigin(frame.origin)
        if frame.type == .acknowledge {
            if signed?.frame.signer == origin {
                counters.ownEchoes += 1
                return nil
            }
            counters.acknowledgements += 1
            return HeardFrame(frame: frame, sender: sender, signed: signed)
        }
        if frame.origin == origin {
            counters.ownEchoes += 1
            return nil
        }
        return HeardFrame(frame: frame, sender: sender, signed: signed)
    }

    /// A version-2 frame: checked under the network key; a revocation is kept for the node.
    private mutating func inspectSigned(_ bytes: [UInt8], from address: UInt64, now: UInt64, monotonic: UInt64) -> HeardFrame? {
        guard signed.verifier != nil else {
            counters.unverifiableSigned += 1
            return nil
        }
        switch signed.check(bytes, wall: now, monotonic: monotonic) {
        case .accepted(let frame):
            if frame.type == .take {
                counters.takes += 1
                return nil
            }
            guard let v1 = frame.asVersion1 else { return nil }
            return verified(v1, signed: (frame, bytes))
        case .warning(let warning):
            guard warning.signer != origin else {
                counters.ownEchoes += 1
                return nil
            }
            counters.warnings += 1
            if warningsHeard.count < 16 { warningsHeard.append((warning, address)) }
        case .revocation:
            counters.revocationsHeard += 1
        case .knownRevocation:
            counters.duplicates += 1
        case .shed:
            counters.shed += 1
        case .refused(let error):
            switch error {
            case .forgedCertificate, .forgedRevocation: counters.forgedCertificates += 1
            case .badSignature: counters.forged += 1
            case .revoked: counters.revoked += 1
            case .signerIsNotOrigin: counters.impersonations += 1
            case .tooOld, .signedInTheFuture: counters.tooOld += 1
            case .stale, .tooFarInFuture, .certificateNotValid: counters.stale += 1
            default: counters.malformed += 1
            }
        }
        return nil
    }

    /// Notes another box relaying a frame this box already knows (for suppression).
    mutating func heardRelay(_ frame: AlertFrame, now: UInt64) {
        guard frame.hops > 0 else { return }
        let key = AlertAirtime.heardKey(frame.id.text, cancel: frame.type == .cancel, acknowledgement: frame.type == .acknowledge)
        var relays = heard[key] ?? []
        // The first relay heard at each hop count (at most 8): enough to know whether a ring was
        // covered before a given time.
        guard !relays.contains(where: { $0.hops == UInt32(frame.hops) }) else { return }
        if heard[key] == nil, heard.count >= Self.heardLimit { heard.removeAll() } // bounded; losing it only costs airtime
        relays.append(AlertAirtime.RelayHeard(hops: UInt32(frame.hops), timeMicroseconds: now, isCancel: frame.type == .cancel))
        heard[key] = relays
    }

    mutating func countDuplicate() { counters.duplicates += 1 }

    /// Forgets suppression notes of expired alerts, and of alerts the book does not hold (heard
    /// before our own event was durable, or forgotten long after they ended) once ten minutes
    /// old: longer than any relay delay or linger they could still decide.
    mutating func prune(_ book: AlertBook, now: UInt64) {
        heard = heard.filter { key, relays in
            let id = key.hasSuffix("/cancel") ? String(key.dropLast(7)) : key.hasSuffix("/ack") ? String(key.dropLast(4)) : key
            guard let entry = book.alerts[id] else { return relays.contains { now < $0.timeMicroseconds &+ 600_000_000 } }
            return entry.expiresAtMicroseconds == 0 || entry.expiresAtMicroseconds > now
        }
        // The origins' signed bytes are kept while their alert lives.
        signed.prune(wall: now) { key in
            let id = key.hasSuffix("/cancel") ? String(key.dropLast(7)) : key.hasSuffix("/ack") ? String(key.dropLast(4)) : key
            guard let entry = book.alerts[id] else { return false }
            return entry.expiresAtMicroseconds == 0 || entry.expiresAtMicroseconds > now
        }
    }

    /// The advertising plan at `now`: the presence advert (if on), then the alert frames, then
    /// `connectable` (the GATT services' advert, sent connectable) when the box serves links.
    mutating func plan(_ projections: Projections, nowMicroseconds now: UInt64, monotonic: UInt64 = 0, nodeID: UInt64,
                       connectable: (advert: [UInt8], scanResponse: [UInt8])? = nil)
        -> (plan: AdvertisingPlan, frames: [(broadcast: AlertAirtime.Broadcast, payload: [UInt8])]) {
        var payloads: [[UInt8]] = []
        var address: UInt64 = 0
        if var store = exposureKeys, let presence {
            // GAEN: the RPI changes every 10-minute interval, and the address with it.
            let interval = Exposure.interval(unixSeconds: now / 1_000_000)
            do {
                let key = try store.key(forInterval: interval, retentionDays: exposureRetentionDays)
                exposureKeys = store
                let advert = try ExposureKeySchedule(key).advertisement(forInterval: interval,
                                                                      metadata: AssociatedMetadata(txPower: exposureTxPower))
                payloads.append(advert.advertisingData(includeFlags: true))
                address = presence.rotation(atUnixSeconds: now / 1_000_000).address
            } catch {
                counters.exposureKeyErrors += 1
            }
        } else if let presence {
            let rotation = presence.rotation(atUnixSeconds: now / 1_000_000)
            address = rotation.address
            if let frame = try? VigilAdvertisement.presenceFrame(identifier: rotation.identifier),
               let payload = try? AdvertisingPayload.vigil(frame: frame, uuid: settings.serviceUUID) {
                payloads.append(payload.bytes)
            }
        }
        var sent: [(broadcast: AlertAirtime.Broadcast, payload: [UInt8])] = []
        if advertisesAlerts {
            for b in AlertAirtime.broadcasts(projections.alerts, now: now, node: nodeID, settings: settings.airtime, heard: heard) {
                guard let frame = Self.frame(b, now: now, maxLifetimeMicroseconds: settings.maxLifetimeMicroseconds) else { continue }
                // Signed (extended advertising), where this box signs or holds the origin's bytes.
                let heardKey = AlertAirtime.heardKey(b.idText, cancel: b.isCancel, acknowledgement: b.isAcknowledgement)
                if let bytes = signed.frame(for: frame, isRelay: b.hops > 0, heardKey: heardKey, wall: now, monotonic: monotonic),
                   let payload = try? AdvertisingPayload.signedVigil(frame: bytes, uuid: settings.serviceUUID) {
                    payloads.append(payload.bytes)
                    sent.append((b, payload.bytes))
                }
                // Shared-key (legacy advertising), where the shelter key is installed.
                if let key, let bytes = try? frame.encode(key: key, uuid: settings.serviceUUID),
                   let payload = try? AdvertisingPayload.vigil(frame: bytes, uuid: settings.serviceUUID) {
                    payloads.append(payload.bytes)
                    sent.append((b, payload.bytes))
                }
            }
            for warning in Self.warningsToAdvertise(projections.warnings) {
                if let bytes = signed.warningFrame(level: warning.level, digest: warning.digest, headline: warning.headline,
                                                   warningEndMicroseconds: warning.endMicroseconds, wall: now, monotonic: monotonic),
                   let payload = try? AdvertisingPayload.signedVigil(frame: bytes, uuid: settings.serviceUUID) {
                    payloads.append(payload.bytes)
                }
            }
            if let revocation = signed.revocationOnAir(wall: now),
               let payload = try? AdvertisingPayload.signedVigil(frame: revocation, uuid: settings.serviceUUID) {
                payloads.append(payload.bytes)
            }
        }
        var connectableIndices: Set<Int> = []
        if let connectable {
            connectableIndices.insert(payloads.count)
            payloads.append(connectable.advert)
        }
        // Without the presence advert, the address still rotates on the same schedule.
        if address == 0, !payloads.isEmpty {
            address = Self.fallbackAddress(now: now, nodeID: nodeID)
        }
        return (AdvertisingPlan(address: address, payloads: payloads, connectable: connectableIndices,
                                scanResponse: connectable?.scanResponse ?? []), sent)
    }

    /// When the plan changes next without a new event: a presence rotation, an airtime change,
    /// or the hourly renewal of the on-air expiry of an alert that has none.
    func nextChange(_ projections: Projections, nowMicroseconds now: UInt64, nodeID: UInt64) -> UInt64? {
        var next = !advertisesAlerts ? nil : AlertAirtime.nextChange(projections.alerts, now: now, node: nodeID, settings: settings.airtime)
        if !projections.alerts.active.isEmpty || signed.knownRevocations.count > 1 || !Self.warningsToAdvertise(projections.warnings).isEmpty,
           let resign = signed.nextResign(after: now) {
            next = min(next ?? resign, resign)
        }
        let period = UInt64(presence?.rotationSeconds ?? PresenceIdentity.defaultRotationSeconds) * 1_000_000
        let rotation = (now / period + 1) * period
        next = min(next ?? rotation, rotation)
        if advertisesAlerts, projections.alerts.active.contains(where: { $0.expiresAtMicroseconds == 0 }) {
            next = min(next ?? .max, (now / 3_600_000_000 + 1) * 3_600_000_000)
        }
        return next
    }

    /// The box's own public warnings it tells its neighbours of (docs/signed-frames.md "Public
    /// warning frame"): in force at its site, shown or sounding (an Actual message: a Test or an
    /// Exercise is only listed), the loudest first, at most `warningFramesLimit`. Never one it
    /// heard on the air: warnings are not relayed from box to box.
    static func warningsToAdvertise(_ book: WarningBook)
        -> [(level: PublicWarningFrame.Level, digest: UInt64, headline: String, endMicroseconds: UInt64)] {
        book.warnings.inForceHere.filter { $0.alert.status == .actual && ($0.level == .sounds || $0.level == .shown) }
            .prefix(warningFramesLimit).map { w in
                let info = w.infos.first
                return (w.level == .sounds ? .sounds : .shown, WarningBook.airDigest(w.key),
                        PublicWarningFrame.airHeadline(info?.headline ?? info?.event ?? ""), UInt64(clamping: w.expiresMicroseconds))
            }
    }

    static func frame(_ b: AlertAirtime.Broadcast, now: UInt64, maxLifetimeMicroseconds: UInt64) -> AlertFrame? {
        guard b.origin <= UInt64(UInt32.max), b.counter <= AlertFrame.maximumCounter, b.hops <= UInt32(AlertFrame.maximumHops) else { return nil }
        // An alert without expiry (sos_expiry: 0) still needs one on the air, or receivers would
        // drop it as stale: it goes out with half the maximum lifetime, renewed hourly (the
        // frame changes once an hour, not on every plan).
        let expiryMicroseconds = b.expiresAtMicroseconds != 0 ? b.expiresAtMicroseconds
            : (now / 3_600_000_000) * 3_600_000_000 + maxLifetimeMicroseconds / 2
        let expiry = UInt32(clamping: expiryMicroseconds / 1_000_000)
        let severity = AlertSeverity(rawValue: b.severity) ?? .unspecified
        let type: AlertFrame.FrameType
        if b.isCancel {
            type = .cancel
        } else if b.isAcknowledgement {
            type = .acknowledge
        } else {
            guard let kind = AlertKind(rawValue: b.kind), let t = AlertFrame.FrameType(kind: kind) else { return nil }
            type = t
        }
        var location: AlertFrame.Coordinates?
        if !type.refersToAnotherAlert, let lat = b.latitudeE7, let lon = b.longitudeE7 {
            location = AlertFrame.Coordinates(latitudeE7: lat, longitudeE7: lon)
        }
        return AlertFrame(type: type, severity: severity, hops: UInt8(b.hops), origin: UInt32(b.origin), counter: b.counter,
                          expirySeconds: expiry, location: location)
    }

    /// A non-resolvable private address for a box without a presence identity: random, new
    /// for every rotation period, derived from the node id and the period.
    static func fallbackAddress(now: UInt64, nodeID: UInt64) -> UInt64 {
        var x = nodeID ^ (now / 900_000_000) &* 0x9E37_79B9_7F4A_7C15
        x = (x ^ (x >> 31)) &* 0xBF58_476D_1CE4_E5B9
        let address = (x & 0x3FFF_FFFF_FFFF) | 1
        // Two top bits 00 (non-resolvable private); the other 46 bits neither all 0 nor all 1.
        return address == 0x3FFF_FFFF_FFFF ? 0x3FFF_FFFF_FFFE : address
    }
}
