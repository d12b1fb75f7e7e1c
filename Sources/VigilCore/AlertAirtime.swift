import VigilEvents

/// Which alerts this box puts on the air, derived from the alert book and a time: a pure
/// function, so what the box advertises is explained by the events behind it.
///
/// - An alert raised here is advertised (hop count 0) until it is cancelled or expires.
/// - An alert heard from another box is relayed with its hop count plus one, if that stays
///   within the hop limit, after a relay delay drawn per (box, alert) from a hash — boxes that
///   heard the same frame do not all transmit at once — unless, before the delay ran out, another
///   box was heard relaying it at that hop count or further (suppression: the neighbourhood
///   already has it).
/// - A cancel (here, or heard and within the hop limit) is advertised for `cancelLinger` after
///   it, or until the alert would have expired, so boxes that missed the moment still hear it.
/// - An acknowledgement (made here, or heard and within the hop limit) is advertised the same
///   way, for `acknowledgementLinger`, until the alert is cancelled or expires, so that it reaches
///   the box that raised the alert. That box, its destination, does not relay it.
public enum AlertAirtime {
    public struct Settings: Sendable, Equatable {
        public var hopLimit: UInt32 = 3
        public var relayDelayMinMicroseconds: UInt64 = 200_000
        public var relayDelayMaxMicroseconds: UInt64 = 2_000_000
        public var cancelLingerMicroseconds: UInt64 = 600_000_000
        public var acknowledgementLingerMicroseconds: UInt64 = 600_000_000
        public init() {}
    }

    /// One frame to advertise.
    public struct Broadcast: Sendable, Equatable {
        public var origin: UInt64
        public var counter: UInt32
        /// AlertKind raw value; 0 for a cancel whose alert was never heard.
        public var kind: Int
        public var severity: Int
        public var hops: UInt32
        public var expiresAtMicroseconds: UInt64
        public var latitudeE7: Int32?
        public var longitudeE7: Int32?
        public var isCancel: Bool
        /// The sequence of the event that put it on the air (the alert, its cancel, or the
        /// acknowledgement).
        public var because: UInt64
        /// An acknowledgement of the alert rather than the alert (or its cancel).
        public var isAcknowledgement = false

        public var idText: String { AlertID(origin: origin, counter: counter).text }
    }

    /// Another box's relay of an alert, heard before this box relayed it.
    public struct RelayHeard: Sendable, Equatable {
        public var hops: UInt32
        public var timeMicroseconds: UInt64
        public var isCancel: Bool
        public init(hops: UInt32, timeMicroseconds: UInt64, isCancel: Bool) {
            self.hops = hops
            self.timeMicroseconds = timeMicroseconds
            self.isCancel = isCancel
        }
    }

    /// The key of `heard`: an alert's relays, its cancel's and its acknowledgement's are counted apart.
    public static func heardKey(_ idText: String, cancel: Bool, acknowledgement: Bool = false) -> String {
        acknowledgement ? idText + "/ack" : cancel ? idText + "/cancel" : idText
    }

    /// The frames to advertise at `now`, critical first, then by id.
    /// `heard` holds, by `heardKey`, the relays by other boxes: for each hop count, the first one
    /// heard (see `RelayHeard`).
    public static func broadcasts(_ book: AlertBook, now: UInt64, node: UInt64, settings: Settings,
                                  heard: [String: [RelayHeard]] = [:]) -> [Broadcast] {
        var result: [Broadcast] = []
        for entry in book.alerts.values {
            guard entry.expiresAtMicroseconds == 0 || entry.expiresAtMicroseconds > now else { continue }
            // Ended by AlertExpired: off the air even if the wall clock was stepped back since.
            if entry.expired == true && !entry.cancelled { continue }
            if entry.cancelled {
                guard let cancelledAt = entry.cancelledMicroseconds,
                      now < cancelledAt &+ settings.cancelLingerMicroseconds else { continue }
                let here = entry.cancelledHere ?? true
                let hops = here ? 0 : (entry.cancelHops ?? 0) + 1
                if !here {
                    guard hops <= settings.hopLimit,
                          now >= cancelledAt &+ relayDelay(node: node, origin: entry.origin, counter: entry.counter, settings: settings),
                          !suppressed(heard[heardKey(entry.idText, cancel: true)], hops: hops, cancel: true,
                                      before: cancelledAt &+ relayDelay(node: node, origin: entry.origin, counter: entry.counter, settings: settings))
                    else { continue }
                }
                result.append(Broadcast(origin: entry.origin, counter: entry.counter, kind: entry.kind, severity: entry.severity,
                                        hops: hops, expiresAtMicroseconds: entry.expiresAtMicroseconds, latitudeE7: nil,
                                        longitudeE7: nil, isCancel: true, because: entry.firstSequence))
                continue
            }
            let hops: UInt32
            if entry.raisedHere {
                hops = 0
            } else {
                hops = entry.hops + 1
                let start = entry.firstMicroseconds &+ relayDelay(node: node, origin: entry.origin, counter: entry.counter, settings: settings)
                guard hops <= settings.hopLimit, now >= start,
                      !suppressed(heard[heardKey(entry.idText, cancel: false)], hops: hops, cancel: false, before: start) else { continue }
            }
            result.append(Broadcast(origin: entry.origin, counter: entry.counter, kind: entry.kind, severity: entry.severity,
                                    hops: hops, expiresAtMicroseconds: entry.expiresAtMicroseconds, latitudeE7: entry.latitudeE7,
                                    longitudeE7: entry.longitudeE7, isCancel: false, because: entry.firstSequence))
        }
        for ack in book.acknowledgements.values {
            let entry = book.alerts[ack.idText]
            guard entry?.cancelled != true,
                  ack.expiresAtMicroseconds == 0 || ack.expiresAtMicroseconds > now,
                  now < ack.timeMicroseconds &+ settings.acknowledgementLingerMicroseconds else { continue }
            var hops: UInt32 = 0
            if !ack.madeHere {
                guard ack.origin != node else { continue } // ours: this box is where it was going
                hops = ack.hops + 1
                let start = ack.timeMicroseconds &+ relayDelay(node: node, origin: ack.origin, counter: ack.counter, settings: settings)
                guard hops <= settings.hopLimit, now >= start,
                      !suppressed(heard[heardKey(ack.idText, cancel: false, acknowledgement: true)], hops: hops, cancel: false, before: start)
                else { continue }
            }
            result.append(Broadcast(origin: ack.origin, counter: ack.counter, kind: entry?.kind ?? 0, severity: ack.severity,
                                    hops: hops, expiresAtMicroseconds: ack.expiresAtMicroseconds, latitudeE7: nil,
                                    longitudeE7: nil, isCancel: false, because: ack.sequence, isAcknowledgement: true))
        }
        // Alerts first (critical first), then acknowledgements, then cancels.
        func rank(_ b: Broadcast) -> Int { b.isCancel ? 2 : b.isAcknowledgement ? 1 : 0 }
        return result.sorted { a, b in
            if rank(a) != rank(b) { return rank(a) < rank(b) }
            if a.severity != b.severity { return a.severity > b.severity }
            return (a.origin, a.counter) < (b.origin, b.counter)
        }
    }

    /// The next time after `now` at which `broadcasts` can change without a new event: a relay
    /// delay running out, an expiry, the end of a cancel's linger.
    public static func nextChange(_ book: AlertBook, now: UInt64, node: UInt64, settings: Settings) -> UInt64? {
        var next: UInt64?
        func consider(_ t: UInt64) { if t > now { next = min(next ?? t, t) } }
        for entry in book.alerts.values {
            if entry.expiresAtMicroseconds != 0 { consider(entry.expiresAtMicroseconds) }
            let delay = relayDelay(node: node, origin: entry.origin, counter: entry.counter, settings: settings)
            if let at = entry.cancelledMicroseconds {
                consider(at &+ settings.cancelLingerMicroseconds)
                consider(at &+ delay)
            } else if !entry.raisedHere {
                consider(entry.firstMicroseconds &+ delay)
            }
        }
        for ack in book.acknowledgements.values {
            if ack.expiresAtMicroseconds != 0 { consider(ack.expiresAtMicroseconds) }
            consider(ack.timeMicroseconds &+ settings.acknowledgementLingerMicroseconds)
            if !ack.madeHere {
                consider(ack.timeMicroseconds &+ relayDelay(node: node, origin: ack.origin, counter: ack.counter, settings: settings))
            }
        }
        return next
    }

    /// A delay in [min, max] that is the same every time for this box and alert (replay gives the
    /// same airtime) and differs between boxes (they do not collide). FNV-1a over both ids.
    public static func relayDelay(node: UInt64, origin: UInt64, counter: UInt32, settings: Settings) -> UInt64 {
        let span = settings.relayDelayMaxMicroseconds > settings.relayDelayMinMicroseconds
            ? settings.relayDelayMaxMicroseconds - settings.relayDelayMinMicroseconds : 0
        guard span > 0 else { return settings.relayDelayMinMicroseconds }
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for value in [node, origin, UInt64(counter)] {
            for i in 0..<8 {
                hash ^= (value >> UInt64(8 * i)) & 0xFF
                hash = hash &* 0x0000_0100_0000_01B3
            }
        }
        return settings.relayDelayMinMicroseconds + hash % (span + 1)
    }

    /// Another box already covers our ring: before our delay ran out, it was heard relaying at
    /// the hop count we would send, or further out.
    private static func suppressed(_ heard: [RelayHeard]?, hops: UInt32, cancel: Bool, before start: UInt64) -> Bool {
        guard let heard else { return false }
        return heard.contains { $0.isCancel == cancel && $0.hops >= hops && $0.timeMicroseconds < start }
    }
}
