import Foundation
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
    public init() {}
}

/// The node's side of alerts over the air: taking frames out of advertising reports, and
/// deciding what to advertise. Owned by the loop; no I/O of its own.
package struct AirLink {
    let key: AlertFrameKey?
    let settings: AirAlertSettings
    let presence: PresenceIdentity?
    /// This box's id over the air (32 bits; see README "Alert frames").
    let origin: UInt32
    package private(set) var counters = AirCounters()
    /// The first relay by another box heard for each alert (and cancel), for suppression.
    private(set) var heard: [String: [AlertAirtime.RelayHeard]] = [:]
    private static let heardLimit = 4_096
    /// When set, the presence advert is a GAEN one: the day's Temporary Exposure Key, the
    /// interval's RPI and metadata with this TX power (phones' apps see the box as an EN device).
    var exposureKeys: ExposureKeyStore?
    var exposureTxPower: Int8 = -10
    var exposureRetentionDays: UInt32 = 14

    /// Whether alert frames can be sent and checked (a shelter key is installed).
    var hasKey: Bool { key != nil }

    package init(key: AlertFrameKey?, settings: AirAlertSettings, presence: PresenceIdentity?, nodeID: UInt64) {
        self.key = key
        self.settings = settings
        self.presence = presence
        self.origin = UInt32(truncatingIfNeeded: nodeID)
    }

    /// A verified frame from another box, or nil (not Vigil's, refused, or our own).
    package mutating func inspect(_ report: AdvertisingReport, now: UInt64) -> AlertFrame? {
        guard let frameBytes = AdvertisingPayload.serviceData(uuid: settings.serviceUUID, in: report.data) else { return nil }
        guard let first = frameBytes.first else {
            counters.malformed += 1
            return nil
        }
        if first & 0x0F == 0 {
            counters.presence += 1
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
        if frame.type == .acknowledge {
            // It names the acknowledged alert, so our origin here means "your alert was heard".
            counters.acknowledgements += 1
            return frame
        }
        if frame.origin == origin {
            counters.ownEchoes += 1
            return nil
        }
        return frame
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

    mutating func countAccepted() { counters.accepted += 1 }
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
    }

    /// The advertising plan at `now`: the presence advert (if on), then the alert frames, then
    /// `connectable` (the GATT services' advert, sent connectable) when the box serves links.
    mutating func plan(_ projections: Projections, nowMicroseconds now: UInt64, nodeID: UInt64,
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
        if let key {
            for b in AlertAirtime.broadcasts(projections.alerts, now: now, node: nodeID, settings: settings.airtime, heard: heard) {
                guard let frame = Self.frame(b, now: now, maxLifetimeMicroseconds: settings.maxLifetimeMicroseconds), let bytes = try? frame.encode(key: key, uuid: settings.serviceUUID),
                      let payload = try? AdvertisingPayload.vigil(frame: bytes, uuid: settings.serviceUUID) else { continue }
                payloads.append(payload.bytes)
                sent.append((b, payload.bytes))
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
        var next = key == nil ? nil : AlertAirtime.nextChange(projections.alerts, now: now, node: nodeID, settings: settings.airtime)
        let period = UInt64(presence?.rotationSeconds ?? PresenceIdentity.defaultRotationSeconds) * 1_000_000
        let rotation = (now / period + 1) * period
        next = min(next ?? rotation, rotation)
        if key != nil, projections.alerts.active.contains(where: { $0.expiresAtMicroseconds == 0 }) {
            next = min(next ?? .max, (now / 3_600_000_000 + 1) * 3_600_000_000)
        }
        return next
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
