import VigilEvents

/// Residents' heart-rate sensors as the log tells them (docs/connections.md "Heart-rate sensors"): which
/// sensor each resident has, whether the box's link to it is up (`LinkChanged`, role sensor),
/// and the last reading it sent (`CheckIn` from the heart rate) with whether it was a sign of
/// life. Pure and in the checkpoint, so `vigil status` and the page show the same after replay.
///
/// Only state: the ladder judges readings itself (`EscalationBook.isPositive`). A sensor that
/// went silent shows as its last reading growing old and its link closed, never as anything the
/// ladder counts.
public struct SensorLinks: Codable, Equatable, Sendable {
    public struct Sensor: Codable, Equatable, Sendable {
        public var resident: String
        /// The sensor's address (48 bits) and whether it is a random one.
        public var peer: UInt64
        public var random: Bool
        public var linked = false
        /// Whether the link up now (or the last one) was encrypted with the sensor's bond key
        /// (schema 18; decision 0005). Linked and not bonded: "unbonded".
        public var bonded = false
        /// When the link last opened or closed (0: never), and why it last closed.
        public var linkChangedMicroseconds: UInt64 = 0
        public var closeReason = ""
        public var readings: UInt64 = 0
        public var lastReadingMicroseconds: UInt64 = 0
        public var lastBeatsPerMinute: Double = 0
        /// The Heart Rate Measurement's flags byte (0x2A37), when the reading had one.
        public var lastFlags: UInt32?
        /// Whether the last reading was a sign of life (plausible, skin contact or no contact
        /// sensing), as the ladder judges it.
        public var lastPositive = false

        /// The last reading's skin contact as its flags say: "contact", "no contact", or
        /// "no contact sensing" (the sensor cannot tell).
        public var lastContact: String {
            guard let flags = lastFlags, flags & 0b100 != 0 else { return "no contact sensing" }
            return flags & 0b010 != 0 ? "contact" : "no contact"
        }

        public init(resident: String, peer: UInt64, random: Bool) {
            self.resident = resident
            self.peer = peer
            self.random = random
        }
    }

    /// By resident id; only residents enrolled with a sensor.
    public private(set) var byResident: [String: Sensor] = [:]

    public init() {}

    /// Sorted by resident id (deterministic for status and the page).
    public var sorted: [Sensor] { byResident.values.sorted { $0.resident < $1.resident } }

    public mutating func apply(_ event: Event) {
        switch event.body {
        case .residentEnrolled(let r), .residentUpdated(let r):
            let peer = r.heartRateSensor & 0xFFFF_FFFF_FFFF
            guard peer != 0 else {
                byResident[r.id] = nil
                return
            }
            let random = r.heartRateSensorType == .addressRandom
            if let current = byResident[r.id], current.peer == peer, current.random == random { return }
            // A new sensor (or the first): its link and readings start from nothing.
            byResident[r.id] = Sensor(resident: r.id, peer: peer, random: random)
        case .residentRemoved(let r):
            byResident[r.id] = nil
        case .linkChanged(let link) where link.role == .sensor:
            guard var sensor = byResident[link.resident], sensor.peer == link.peer & 0xFFFF_FFFF_FFFF,
                  sensor.random == (link.peerType == .addressRandom) else { return }
            sensor.linked = link.open
            if link.open { sensor.bonded = link.bonded }
            sensor.linkChangedMicroseconds = event.timeMicroseconds
            if !link.open { sensor.closeReason = link.reason }
            byResident[link.resident] = sensor
        case .checkIn(let c) where c.source == .checkInHeartRate:
            guard var sensor = byResident[c.resident] else { return }
            sensor.readings &+= 1
            sensor.lastReadingMicroseconds = event.timeMicroseconds
            sensor.lastBeatsPerMinute = c.hasValue && c.value.isFinite ? c.value : 0 // JSON has no NaN
            sensor.lastFlags = c.hasHeartRateFlags ? c.heartRateFlags : nil
            sensor.lastPositive = EscalationBook.isPositive(c)
            byResident[c.resident] = sensor
        default:
            break
        }
    }
}
