import Crypto
import VigilEvents

// The over-the-air alert frame, version 1 (docs/radio.md "Alert frames over the air").
//
//   byte 0       version (high nibble, 1) | type (low nibble, 1...10; 0 is presence)
//   byte 1       severity (bits 7-6) | hops (bits 5-3) | location present (bit 2) | reserved (bits 1-0, zero)
//   bytes 2-5    origin, u32 big-endian
//   bytes 6-8    counter, u24 big-endian (origin + counter = alert id; the referenced alert's for cancel/ack)
//   bytes 9-12   expiry, u32 big-endian, Unix seconds
//   [7 bytes]    location, when bit 2 is set: latitude u24 | longitude u25 | 7 zero bits, big-endian
//   last 7       tag: HMAC-SHA256(alertKey, "vigil-alert-v1" | uuid16 LE | every byte before the tag)[0..<7]
//
// 20 bytes without a location, 27 with: with the 4-byte Service Data AD header, 31, the legacy maximum.

/// Why a frame could not be encoded or decoded, or was refused by the lifetime check.
public enum AlertFrameError: Error, Equatable, Sendable {
    // Decoding: the bytes are not a well-formed version-1 frame.
    /// Fewer bytes than the frame's header says it has.
    case truncated(length: Int, needed: Int)
    /// More bytes than the frame's header says it has.
    case trailingBytes(length: Int, expected: Int)
    case unsupportedVersion(UInt8)
    /// A type nibble of 11...15.
    case unknownType(UInt8)
    /// A presence frame (type 0) where an alert frame was expected.
    case notAnAlert
    /// A reserved bit of byte 1, or a padding bit after the longitude, is set.
    case reservedBitsSet
    /// A cancel or acknowledge frame with a location (refused on encode and decode).
    case locationNotAllowed
    /// The tag does not match: wrong shelter key, wrong service UUID, or altered bytes.
    case badTag

    // The lifetime check (`verifyLifetime`).
    /// The alert expired at or before now.
    case stale
    /// The expiry lies further ahead than the longest lifetime a receiver accepts.
    case tooFarInFuture

    // Encoding, and converting from the log's event types.
    case hopsOutOfRange(UInt32)
    /// A relay was asked to forward a frame that has already been relayed 7 times.
    case hopLimitReached
    case counterOutOfRange(UInt32)
    case originOutOfRange(UInt64)
    case unsupportedKind(Int)
    case unsupportedSeverity(Int)
    case locationOutOfRange(latitudeE7: Int32, longitudeE7: Int32)
    /// The alert has no expiry (`expires_at_us` 0); frames always carry one.
    case noExpiry
    case expiryOutOfRange(microseconds: UInt64)
    /// The shelter key is not 32 bytes.
    case badKeyLength(Int)
    /// A presence identifier is not 16 bytes.
    case badIdentifierLength(Int)
}

/// The key that tags alert frames: derived once from the shelter key every box of a shelter shares.
///
/// alertKey = HMAC-SHA256(shelterKey, "vigil alert key v1"). Its description never shows the key.
public struct AlertFrameKey: Sendable, CustomStringConvertible {
    public static let shelterKeyLength = 32
    static let derivationLabel = Array("vigil alert key v1".utf8)
    static let tagContext = Array("vigil-alert-v1".utf8)

    let key: SymmetricKey

    public init(shelterKey: [UInt8]) throws(AlertFrameError) {
        guard shelterKey.count == Self.shelterKeyLength else { throw .badKeyLength(shelterKey.count) }
        let derived = HMAC<SHA256>.authenticationCode(for: Self.derivationLabel, using: SymmetricKey(data: shelterKey))
        key = SymmetricKey(data: Array(derived))
    }

    public var description: String { "AlertFrameKey(redacted)" }

    /// The 7-byte tag over `body` (every frame byte before the tag) for adverts under `uuid`.
    func tag(uuid: UInt16, body: ArraySlice<UInt8>) -> [UInt8] {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Self.tagContext)
        mac.update(data: [UInt8(truncatingIfNeeded: uuid), UInt8(truncatingIfNeeded: uuid >> 8)])
        mac.update(data: Array(body))
        return Array(Array(mac.finalize()).prefix(AlertFrame.tagLength))
    }
}

/// One alert, cancellation or acknowledgement as it travels in a BLE legacy advertisement.
public struct AlertFrame: Sendable, Equatable {
    public static let version: UInt8 = 1
    /// Placeholder 16-bit service UUID; a deployment should use a SIG-assigned member UUID.
    public static let defaultServiceUUID: UInt16 = 0xFCF1
    public static let headerLength = 13
    public static let locationLength = 7
    public static let tagLength = 7
    /// 27: header, location and tag.
    public static let maximumLength = headerLength + locationLength + tagLength
    public static let maximumHops: UInt8 = 7
    public static let maximumCounter: UInt32 = 0xFF_FFFF
    public static let defaultMaxLifetimeSeconds: UInt32 = 86_400

    /// The low nibble of byte 0 (0, presence, is not an alert frame and has no case here).
    public enum FrameType: UInt8, Sendable, CaseIterable {
        case sos = 1, medical, fire, flood, evacuate, roadHazard, areaHazard, info
        /// Origin and counter name the cancelled alert.
        case cancel
        /// Origin and counter name the acknowledged alert.
        case acknowledge

        /// The frame type for an alert kind; nil for unspecified and unrecognised kinds.
        public init?(kind: AlertKind) {
            switch kind {
            case .sos: self = .sos
            case .medical: self = .medical
            case .fire: self = .fire
            case .flood: self = .flood
            case .evacuate: self = .evacuate
            case .roadHazard: self = .roadHazard
            case .areaHazard: self = .areaHazard
            case .info: self = .info
            case .unspecified, .UNRECOGNIZED: return nil
            }
        }

        /// The alert kind; nil for cancel and acknowledge.
        public var kind: AlertKind? {
            switch self {
            case .sos: .sos
            case .medical: .medical
            case .fire: .fire
            case .flood: .flood
            case .evacuate: .evacuate
            case .roadHazard: .roadHazard
            case .areaHazard: .areaHazard
            case .info: .info
            case .cancel, .acknowledge: nil
            }
        }

        /// Cancel and acknowledge name another alert and carry no location.
        public var refersToAnotherAlert: Bool { self == .cancel || self == .acknowledge }
    }

    /// A position in the log's units (degrees x 1e7), quantised to 24 + 25 bits on the air.
    public struct Coordinates: Sendable, Equatable, Hashable {
        public var latitudeE7: Int32
        public var longitudeE7: Int32

        public init(latitudeE7: Int32, longitudeE7: Int32) {
            self.latitudeE7 = latitudeE7
            self.longitudeE7 = longitudeE7
        }

        static let latitudeSteps: Int64 = (1 << 24) - 1
        static let longitudeSteps: Int64 = (1 << 25) - 1
        static let latitudeSpan: Int64 = 1_800_000_000   // 180 degrees in e7
        static let longitudeSpan: Int64 = 3_600_000_000  // 360 degrees in e7

        /// Latitude within ±90°, longitude within ±180°.
        public var isValid: Bool {
            abs(Int64(latitudeE7)) <= Self.latitudeSpan / 2 && abs(Int64(longitudeE7)) <= Self.longitudeSpan / 2
        }

        /// What a receiver decodes: the nearest of the 2^24 x 2^25 grid points, back in e7.
        public var quantized: Coordinates {
            let (lat, lon) = grid
            return Coordinates(latitudeE7: Self.degreesE7(lat, steps: Self.latitudeSteps, span: Self.latitudeSpan),
                               longitudeE7: Self.degreesE7(lon, steps: Self.longitudeSteps, span: Self.longitudeSpan))
        }

        /// round((x + span/2) / span x steps), in integers (exact, the same on every machine).
        /// Only meaningful when `isValid`.
        var grid: (latitude: Int64, longitude: Int64) {
            func q(_ e7: Int32, steps: Int64, span: Int64) -> Int64 {
                let offset = min(max(Int64(e7) + span / 2, 0), span)
                return (offset * steps + span / 2) / span
            }
            return (q(latitudeE7, steps: Self.latitudeSteps, span: Self.latitudeSpan),
                    q(longitudeE7, steps: Self.longitudeSteps, span: Self.longitudeSpan))
        }

        /// round(q / steps x span) - span/2.
        static func degreesE7(_ q: Int64, steps: Int64, span: Int64) -> Int32 {
            Int32((2 * q * span + steps) / (2 * steps) - span / 2)
        }

        /// The 7 bytes on the air: latitude 24 bits, longitude 25 bits, 7 zero bits, big-endian.
        var packed: [UInt8] {
            let (lat, lon) = grid
            let bits = UInt64(lat) << 32 | UInt64(lon) << 7
            return (0..<7).map { UInt8(truncatingIfNeeded: bits >> UInt64(8 * (6 - $0))) }
        }

        /// Nil when a padding bit is set.
        init?(packed bytes: ArraySlice<UInt8>) {
            guard bytes.count == 7 else { return nil }
            let bits = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard bits & 0x7F == 0 else { return nil }
            let lat = Int64(bits >> 32)
            let lon = Int64((bits >> 7) & 0x1FF_FFFF)
            latitudeE7 = Self.degreesE7(lat, steps: Self.latitudeSteps, span: Self.latitudeSpan)
            longitudeE7 = Self.degreesE7(lon, steps: Self.longitudeSteps, span: Self.longitudeSpan)
        }
    }

    public var type: FrameType
    public var severity: AlertSeverity
    /// Relays so far, 0...7. Inside the tag: a relay (holding the shelter key) re-tags.
    public var hops: UInt8
    /// The originating box's 32-bit node id (for cancel/ack: the referenced alert's).
    public var origin: UInt32
    /// 0...0xFFFFFF.
    public var counter: UInt32
    /// Unix seconds (for cancel/ack: the referenced alert's expiry).
    public var expirySeconds: UInt32
    /// Never set on cancel and acknowledge frames. Decoded frames carry the quantised position.
    public var location: Coordinates?

    public init(type: FrameType, severity: AlertSeverity = .unspecified, hops: UInt8 = 0,
                origin: UInt32, counter: UInt32, expirySeconds: UInt32, location: Coordinates? = nil) {
        self.type = type
        self.severity = severity
        self.hops = hops
        self.origin = origin
        self.counter = counter
        self.expirySeconds = expirySeconds
        self.location = location
    }

    /// The alert id (for cancel/ack: the referenced alert's).
    public var id: AlertID { AlertID(origin: UInt64(origin), counter: counter) }

    /// The frame's length on the air: 20, or 27 with a location.
    public var encodedLength: Int { Self.headerLength + (location == nil ? 0 : Self.locationLength) + Self.tagLength }

    /// Throws unless every field fits the format.
    public func validate() throws(AlertFrameError) {
        guard hops <= Self.maximumHops else { throw .hopsOutOfRange(UInt32(hops)) }
        guard counter <= Self.maximumCounter else { throw .counterOutOfRange(counter) }
        guard (0...3).contains(severity.rawValue) else { throw .unsupportedSeverity(severity.rawValue) }
        if let location {
            guard !type.refersToAnotherAlert else { throw .locationNotAllowed }
            guard location.isValid else {
                throw .locationOutOfRange(latitudeE7: location.latitudeE7, longitudeE7: location.longitudeE7)
            }
        }
    }

    /// The frame bytes, tagged with `key` for adverts under `uuid`.
    public func encode(key: AlertFrameKey, uuid: UInt16 = defaultServiceUUID) throws(AlertFrameError) -> [UInt8] {
        try validate()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encodedLength)
        bytes.append(Self.version << 4 | type.rawValue)
        bytes.append(UInt8(severity.rawValue) << 6 | hops << 3 | (location == nil ? 0 : 0x04))
        bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: origin >> $0) }
        bytes += [16, 8, 0].map { UInt8(truncatingIfNeeded: counter >> $0) }
        bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: expirySeconds >> $0) }
        if let location { bytes += location.packed }
        bytes += key.tag(uuid: uuid, body: bytes[...])
        return bytes
    }

    /// Parses and authenticates one frame. Never traps; every refusal is a typed error.
    /// Does not check the lifetime: see `verifyLifetime` or `decode(_:key:uuid:nowMicroseconds:)`.
    public static func decode(_ frame: some Collection<UInt8>, key: AlertFrameKey,
                              uuid: UInt16 = defaultServiceUUID) throws(AlertFrameError) -> AlertFrame {
        let b = Array(frame)
        guard let first = b.first else { throw .truncated(length: 0, needed: 1) }
        guard first >> 4 == version else { throw .unsupportedVersion(first >> 4) }
        let rawType = first & 0x0F
        guard rawType != 0 else { throw .notAnAlert }
        guard let type = FrameType(rawValue: rawType) else { throw .unknownType(rawType) }
        guard b.count >= 2 else { throw .truncated(length: b.count, needed: headerLength + tagLength) }
        let flags = b[1]
        guard flags & 0x03 == 0 else { throw .reservedBitsSet }
        let hasLocation = flags & 0x04 != 0
        guard !(hasLocation && type.refersToAnotherAlert) else { throw .locationNotAllowed }
        let expected = headerLength + (hasLocation ? locationLength : 0) + tagLength
        guard b.count >= expected else { throw .truncated(length: b.count, needed: expected) }
        guard b.count == expected else { throw .trailingBytes(length: b.count, expected: expected) }

        let bodyEnd = expected - tagLength
        var location: Coordinates?
        if hasLocation {
            guard let l = Coordinates(packed: b[headerLength..<bodyEnd]) else { throw .reservedBitsSet }
            location = l
        }
        let tag = key.tag(uuid: uuid, body: b[0..<bodyEnd])
        // Constant time: how much of a forged tag matched is not revealed by timing.
        var difference: UInt8 = 0
        for (x, y) in zip(tag, b[bodyEnd...]) { difference |= x ^ y }
        guard difference == 0 else { throw .badTag }

        func be(_ range: Range<Int>) -> UInt32 { b[range].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        return AlertFrame(type: type,
                          severity: AlertSeverity(rawValue: Int(flags >> 6)) ?? .unspecified,
                          hops: (flags >> 3) & 0x07,
                          origin: be(2..<6), counter: be(6..<9), expirySeconds: be(9..<13),
                          location: location)
    }

    /// Decodes, authenticates and checks the lifetime in one step.
    public static func decode(_ frame: some Collection<UInt8>, key: AlertFrameKey, uuid: UInt16 = defaultServiceUUID,
                              nowMicroseconds: UInt64,
                              maxLifetimeSeconds: UInt32 = defaultMaxLifetimeSeconds) throws(AlertFrameError) -> AlertFrame {
        let decoded = try decode(frame, key: key, uuid: uuid)
        try decoded.verifyLifetime(nowMicroseconds: nowMicroseconds, maxLifetimeSeconds: maxLifetimeSeconds)
        return decoded
    }

    /// The replay check the tag makes possible (the tag binds the expiry): refuses a frame whose
    /// expiry is at or before now (`stale`), or more than `maxLifetimeSeconds` ahead
    /// (`tooFarInFuture`). A valid frame replayed within its lifetime passes: receivers dedupe by id.
    public func verifyLifetime(nowMicroseconds: UInt64,
                               maxLifetimeSeconds: UInt32 = defaultMaxLifetimeSeconds) throws(AlertFrameError) {
        let expiry = UInt64(expirySeconds) * 1_000_000
        guard expiry > nowMicroseconds else { throw .stale }
        guard expiry - nowMicroseconds <= UInt64(maxLifetimeSeconds) * 1_000_000 else { throw .tooFarInFuture }
    }

    /// The frame a relay broadcasts: one more hop (encode it again to re-tag).
    public func relayed() throws(AlertFrameError) -> AlertFrame {
        guard hops < Self.maximumHops else { throw .hopLimitReached }
        var next = self
        next.hops += 1
        return next
    }
}

// MARK: Conversions to and from the log's event types

extension AlertFrame {
    /// The frame for a raised or received alert. The text and `heard_from` do not travel; the
    /// expiry is truncated to whole seconds; the location is quantised (see `Coordinates`).
    ///
    /// Throws when the alert cannot be represented: an origin above 2^32 - 1 (the node must use
    /// a 32-bit id for alerts it broadcasts), a counter above 2^24 - 1, more than 7 hops, no
    /// expiry, an unspecified kind, or a location out of range.
    public init(alert: Alert) throws(AlertFrameError) {
        guard let type = FrameType(kind: alert.kind) else { throw .unsupportedKind(alert.kind.rawValue) }
        guard alert.hops <= UInt32(Self.maximumHops) else { throw .hopsOutOfRange(alert.hops) }
        let (origin, expiry) = try Self.originAndExpiry(alert.id, expiresAtMicroseconds: alert.expiresAtUs)
        self.init(type: type, severity: alert.severity, hops: UInt8(alert.hops),
                  origin: origin, counter: alert.id.counter, expirySeconds: expiry,
                  location: alert.hasLocation
                      ? Coordinates(latitudeE7: alert.location.latitudeE7, longitudeE7: alert.location.longitudeE7)
                      : nil)
        try validate()
    }

    /// A cancel frame for the alert `id`, which expires at `expiresAtMicroseconds`.
    public init(cancelling id: AlertID, expiresAtMicroseconds: UInt64) throws(AlertFrameError) {
        let (origin, expiry) = try Self.originAndExpiry(id, expiresAtMicroseconds: expiresAtMicroseconds)
        self.init(type: .cancel, origin: origin, counter: id.counter, expirySeconds: expiry)
        try validate()
    }

    /// The cancel frame for a cancellation from the log (made here, or heard and being relayed):
    /// its id, hops, severity and the cancelled alert's expiry travel; `by`, `reason` and
    /// `heard_from` do not.
    public init(cancelled: AlertCancelled) throws(AlertFrameError) {
        guard cancelled.hops <= UInt32(Self.maximumHops) else { throw .hopsOutOfRange(cancelled.hops) }
        try self.init(cancelling: cancelled.id, expiresAtMicroseconds: cancelled.expiresAtUs)
        severity = cancelled.severity
        hops = UInt8(cancelled.hops)
        try validate()
    }

    /// An acknowledge frame for the alert `id`, which expires at `expiresAtMicroseconds`.
    public init(acknowledging id: AlertID, expiresAtMicroseconds: UInt64) throws(AlertFrameError) {
        let (origin, expiry) = try Self.originAndExpiry(id, expiresAtMicroseconds: expiresAtMicroseconds)
        self.init(type: .acknowledge, origin: origin, counter: id.counter, expirySeconds: expiry)
        try validate()
    }

    private static func originAndExpiry(_ id: AlertID,
                                        expiresAtMicroseconds: UInt64) throws(AlertFrameError) -> (UInt32, UInt32) {
        guard let origin = UInt32(exactly: id.origin) else { throw .originOutOfRange(id.origin) }
        guard id.counter <= maximumCounter else { throw .counterOutOfRange(id.counter) }
        guard expiresAtMicroseconds != 0 else { throw .noExpiry }
        guard let seconds = UInt32(exactly: expiresAtMicroseconds / 1_000_000) else {
            throw .expiryOutOfRange(microseconds: expiresAtMicroseconds)
        }
        return (origin, seconds)
    }

    /// What a received frame means, in the log's types.
    public enum Meaning: Sendable, Equatable {
        /// An alert (for an `AlertReceived` event), with `heard_from` filled in and no text.
        case alert(Alert)
        /// A cancellation, with hops, severity, the cancelled alert's expiry and `heard_from`.
        /// `by` is 0 and `reason` empty: the frame does not say who cancelled.
        case cancelled(AlertCancelled)
        /// An acknowledgement of the alert it names, with hops, severity, the alert's expiry and
        /// `heard_from` (the frame does not say which box acknowledged).
        case acknowledged(AlertAcknowledged)
    }

    /// The frame as the log's types. `heardFrom`: the node that relayed it to us, if known.
    public func meaning(heardFrom: UInt64 = 0) -> Meaning {
        switch type {
        case .cancel:
            var cancelled = AlertCancelled()
            cancelled.id = id
            cancelled.hops = UInt32(hops)
            cancelled.severity = severity
            cancelled.expiresAtUs = UInt64(expirySeconds) * 1_000_000
            cancelled.heardFrom = heardFrom
            return .cancelled(cancelled)
        case .acknowledge:
            var acknowledged = AlertAcknowledged()
            acknowledged.id = id
            acknowledged.hops = UInt32(hops)
            acknowledged.severity = severity
            acknowledged.expiresAtUs = UInt64(expirySeconds) * 1_000_000
            acknowledged.heardFrom = heardFrom
            return .acknowledged(acknowledged)
        case .sos, .medical, .fire, .flood, .evacuate, .roadHazard, .areaHazard, .info:
            var alert = Alert()
            alert.id = id
            alert.kind = type.kind ?? .unspecified
            alert.severity = severity
            alert.hops = UInt32(hops)
            alert.expiresAtUs = UInt64(expirySeconds) * 1_000_000
            alert.heardFrom = heardFrom
            if let location {
                var l = Location()
                l.latitudeE7 = location.latitudeE7
                l.longitudeE7 = location.longitudeE7
                alert.location = l
            }
            return .alert(alert)
        }
    }
}
