import VigilCore
import VigilRadio

/// The `exposure:` section: contact windows and risk, tags, verification keys, the box's own keys.
extension NodeConfiguration {
    /// The `exposure:` section.
    static func readExposure(_ x: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try x.duration("retention") {
            guard v >= 86_400_000_000, v <= 366 * 86_400_000_000 else { throw x.error("exposure.retention must be between 1d and 366d") }
            config.exposure.contacts.retentionMicroseconds = v
        }
        if let v = try x.numbers("attenuation_thresholds_db", in: 0...200) {
            guard v.count >= 1, v.count <= 8, zip(v, v.dropFirst()).allSatisfy({ $0 < $1 }) else {
                throw x.error("exposure.attenuation_thresholds_db must be 1 to 8 ascending numbers")
            }
            config.exposure.contacts.bucketThresholdsDB = v.map { Int32($0) }
        }
        if let v = try x.numbers("attenuation_weights", in: 0...10) { config.exposure.contacts.bucketWeights = v }
        guard config.exposure.contacts.bucketWeights.count == config.exposure.contacts.bucketThresholdsDB.count + 1 else {
            throw x.error("exposure.attenuation_weights needs one weight more than there are thresholds")
        }
        if let v = try x.numbers("transmission_risk_weights", in: 0...10) {
            guard v.count == 9 else { throw x.error("exposure.transmission_risk_weights needs 9 weights (levels 0-8)") }
            config.exposure.contacts.transmissionRiskWeights = v
        }
        if let v = try x.number("minimum_minutes", in: 0...1_440) { config.exposure.contacts.minimumMinutes = v }
        if let v = try x.number("high_risk_minutes", in: 0...1_440) { config.exposure.contacts.highRiskWeightedMinutes = v }
        if let v = try x.integer("default_tx_power_dbm", in: -127...20) { config.exposure.contacts.defaultTxPowerDBm = Int32(v) }
        if let v = try x.duration("match_tolerance") { config.exposure.matchToleranceMicroseconds = v }
        if let v = try x.strings("tags") {
            var tags = Set<UInt64>()
            for t in v {
                guard let a = parseAddress(t) else { throw x.error("exposure.tags: \(t) is not an address AA:BB:CC:DD:EE:FF") }
                tags.insert(a)
            }
            config.exposure.contacts.tags = tags
        }
        if let v = try x.strings("verification_keys") { config.exposure.verificationKeys = v }
        if let v = try x.bool("advertise") { config.exposure.advertise = v }
        if let v = try x.integer("tx_power_dbm", in: -127...20) { config.exposure.txPowerDBm = Int8(v) }
        try x.finish()
    }
}

/// Exposure contacts (config `exposure`).
public struct ExposureSettings: Sendable, Equatable {
    public var contacts = ExposureContacts.Settings()
    /// Public keys (PEM files) that diagnosis-key files must be signed with.
    public var verificationKeys: [String] = []
    /// Matches count only within this of the interval a key says it was broadcast in.
    public var matchToleranceMicroseconds: UInt64 = 7_200_000_000
    /// Advertise the box's own identity in GAEN's format (phones' apps can treat the box as an EN
    /// device); off: Vigil's own presence frame.
    public var advertise = false
    /// The calibrated TX power the box puts in its GAEN metadata.
    public var txPowerDBm: Int8 = -10
    /// The first retention check after start (a box that was off catches up then).
    public var retentionFirstCheckMicroseconds: UInt64 = 60_000_000
    public init() {}
}
