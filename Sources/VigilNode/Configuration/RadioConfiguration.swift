import Foundation
import VigilCore
import VigilRadio
import VigilSystem

/// The radio's sections: `radio:` (the adapter, scanning, advertising, alerts over the air, signed
/// frames, the capture) and `simulation:` (the simulated radio).
extension NodeConfiguration {
    /// The `radio:` section.
    static func readRadio(_ radio: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try radio.string("adapter") {
            guard v == "sim" || isAdapterSelector(v) else {
                throw radio.error("radio.adapter must be sim, an adapter name (hci0) or an address (AA:BB:CC:DD:EE:FF)")
            }
            config.radio = v
        }
        if let v = try radio.string("channel") {
            guard let channel = HCIChannel(rawValue: v) else { throw radio.error("radio.channel must be raw or user") }
            config.hci.channel = channel
        }
        if let v = try radio.duration("scan_window") { config.scanWindowMicroseconds = v }
        if var scan = try radio.section("scan") {
            if let v = try scan.bool("active") { config.hci.activeScan = v }
            if let v = try scan.duration("interval") { config.hci.scanIntervalMicroseconds = min(max(v, 2_500), 10_240_000) }
            if let v = try scan.duration("window") { config.hci.scanWindowMicroseconds = min(max(v, 2_500), 10_240_000) }
            try scan.finish()
        }
        if let v = try radio.bool("extended") { config.hci.extended = v }
        if let v = try radio.bool("manage_power") { config.hci.managePower = v }
        if let v = try radio.duration("command_timeout") { config.hci.commandTimeoutMicroseconds = max(100_000, v) }
        if let v = try radio.duration("retry_max") { config.hci.backoffMaxMicroseconds = max(config.hci.backoffMinMicroseconds, v) }
        if var advertise = try radio.section("advertise") {
            if let v = try advertise.duration("interval") { config.hci.advertisingIntervalMicroseconds = min(max(v, 100_000), 10_240_000) }
            if let v = try advertise.duration("rotation_slot") { config.hci.rotationSlotMicroseconds = max(100_000, v) }
            if let v = try advertise.bool("presence") { config.presence.enabled = v }
            if let v = try advertise.duration("presence_rotation") {
                guard v >= 60_000_000, v <= 86_400_000_000 else { throw advertise.error("radio.advertise.presence_rotation must be between 1m and 24h") }
                config.presence.rotationSeconds = UInt32(v / 1_000_000)
            }
            try advertise.finish()
        }
        if var alerts = try radio.section("alerts") {
            if let v = try alerts.string("key_file") { config.airAlerts.keyFile = v }
            if let v = try alerts.integer("uuid", in: 1...0xFFFF) { config.airAlerts.serviceUUID = UInt16(v) }
            if let v = try alerts.integer("hop_limit", in: 0...7) { config.airAlerts.airtime.hopLimit = UInt32(v) }
            if let v = try alerts.duration("relay_delay_min") { config.airAlerts.airtime.relayDelayMinMicroseconds = v }
            if let v = try alerts.duration("relay_delay_max") { config.airAlerts.airtime.relayDelayMaxMicroseconds = v }
            if let v = try alerts.duration("cancel_linger") { config.airAlerts.airtime.cancelLingerMicroseconds = v }
            if let v = try alerts.duration("acknowledgement_linger") { config.airAlerts.airtime.acknowledgementLingerMicroseconds = v }
            if let v = try alerts.duration("max_lifetime") { config.airAlerts.maxLifetimeMicroseconds = max(60_000_000, v) }
            if let v = try alerts.integer("new_per_sender_burst", in: 1...1_000) { config.airAlerts.newPerSenderBurst = v }
            if let v = try alerts.duration("new_per_sender_interval") {
                guard v >= 1_000_000, v <= 3_600_000_000 else { throw alerts.error("radio.alerts.new_per_sender_interval must be between 1s and 1h") }
                config.airAlerts.newPerSenderIntervalMicroseconds = v
            }
            try alerts.finish()
        }
        if let v = try radio.string("network_key") {
            guard let bytes = Hex.decode(v.trimmingCharacters(in: .whitespaces)), bytes.count == 32,
                  (try? NetworkPublicKey(rawRepresentation: bytes)) != nil else {
                throw radio.error("radio.network_key must be the network's public key, 64 hex digits (vigil keys network-init prints it)")
            }
            config.airAlerts.networkKey = bytes
        }
        if let v = try radio.bool("require_signed") { config.airAlerts.requireSigned = v }
        if var signed = try radio.section("signed") {
            if let v = try signed.duration("max_age") {
                guard v >= 1_200_000_000, v <= 86_400_000_000 / 2 else { throw signed.error("radio.signed.max_age must be between 20m and 12h") }
                config.airAlerts.signed.maximumAgeSeconds = v / 1_000_000
            }
            if let v = try signed.duration("max_ahead") {
                guard v <= 3_600_000_000 else { throw signed.error("radio.signed.max_ahead must be at most 1h") }
                config.airAlerts.signed.maximumAheadSeconds = v / 1_000_000
            }
            if let v = try signed.integer("verifications_per_second", in: 10...10_000) { config.airAlerts.signed.verificationsPerSecond = UInt64(v) }
            if let v = try signed.string("clock_synchronised_file") { config.airAlerts.clockSynchronisedPath = v }
            try signed.finish()
        }
        if var snoop = try radio.section("capture") {
            if let v = try snoop.string("path") { config.hci.snoopPath = v }
            if let v = try snoop.size("max_file") { config.hci.snoopMaxFileBytes = max(64 << 10, v) }
            if let v = try snoop.integer("keep", in: 0...100) { config.hci.snoopKeepFiles = v }
            try snoop.finish()
        }
        try radio.finish()
    }

    /// The `simulation:` section.
    static func readSimulation(_ sim: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try sim.integer("advertisers", in: 0...100_000) { config.simulation.advertisers = v }
        if let v = try sim.duration("min_interval") { config.simulation.minIntervalMicroseconds = max(20_000, v) }
        if let v = try sim.duration("max_interval") { config.simulation.maxIntervalMicroseconds = max(20_000, v) }
        if let v = try sim.integer("rssi_step_db", in: 0...20) { config.simulation.rssiStepDB = v }
        if let v = try sim.duration("mean_stay") { config.simulation.meanStayMicroseconds = max(1_000_000, v) }
        if let v = try sim.integer("seed", in: 0...Int.max) { config.simulation.seed = UInt64(v) }
        try sim.finish()
    }
}

/// Alerts over the air (config `radio.alerts`).
public struct AirAlertSettings: Sendable, Equatable {
    /// The shelter's shared key: 64 hex digits (32 bytes), the same on every box of the shelter.
    /// Relative paths are inside the data directory. Without it the box neither sends nor
    /// accepts alerts over the air (and says so at start).
    public var keyFile = "shelter.key"
    public var serviceUUID: UInt16 = AlertFrame.defaultServiceUUID
    public var airtime = AlertAirtime.Settings()
    /// Frames whose expiry is further ahead than this are refused (a forged far-future expiry
    /// would otherwise never age out of the dedupe set).
    public var maxLifetimeMicroseconds: UInt64 = 86_400_000_000
    /// New alerts (raises, cancels, acknowledgements this box had not heard) one sender may bring
    /// at once, then one more per `newPerSenderIntervalMicroseconds` (NewAlertAdmission).
    public var newPerSenderBurst = 10
    public var newPerSenderIntervalMicroseconds: UInt64 = 60_000_000
    /// The network's public key (64 hex digits): signed frames of any box it certified are
    /// believed. Nil: from the hub (its join), or no signed frames checked.
    public var networkKey: [UInt8]?
    /// Refuse shared-key (version 1) frames: only signed frames are believed.
    public var requireSigned = false
    /// Signed frames: maximum age, clock difference, verification budget (docs/signed-frames.md).
    public var signed = FrameVerifier.Settings()
    /// A file that exists while the kernel's clock is synchronised: systemd-timesyncd's.
    public var clockSynchronisedPath = "/run/systemd/timesync/synchronized"
    public init() {}
}

/// The box's rotating presence advertisement (config `radio.advertise`).
public struct PresenceSettings: Sendable, Equatable {
    public var enabled = true
    public var rotationSeconds: UInt32 = PresenceIdentity.defaultRotationSeconds
    public init() {}
}
