/// The sections of the box's links: `connections:` (GATT links, phones, heart-rate sensors) and
/// `hub:` (what is shared with the hub).
extension NodeConfiguration {
    /// The `connections:` section.
    static func readConnections(_ connections: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try connections.bool("enabled") { config.connections.enabled = v }
        if let v = try connections.integer("max_links", in: 1...16) { config.connections.maximumLinks = v }
        if let v = try connections.string("name") {
            guard v.utf8.count <= 248 else { throw connections.error("connections.name is at most 248 bytes (GAP's limit)") }
            config.connections.deviceName = v
        }
        if let v = try connections.integer("message_burst", in: 1...1_000) { config.connections.messageBurst = v }
        if let v = try connections.duration("message_interval") { config.connections.messageIntervalMicroseconds = max(1_000, v) }
        if let v = try connections.integer("violation_limit", in: 1...1_000) { config.connections.violationLimit = v }
        if let v = try connections.integer("max_pending_writes", in: 1...1_000) { config.connections.maximumPendingWrites = v }
        if let v = try connections.bool("heart_rate_sensors") { config.connections.heartRateSensors = v }
        if let v = try connections.string("sensor_bonds") {
            switch v.lowercased() {
            case "auto": config.connections.sensorBonds = .auto
            case "true", "yes", "on": config.connections.sensorBonds = .on
            case "false", "no", "off": config.connections.sensorBonds = .off
            default: throw connections.error("connections.sensor_bonds must be auto, true or false")
            }
        }
        if let v = try connections.integer("max_sensors", in: 1...32) { config.connections.maximumSensors = v }
        if let v = try connections.duration("heart_rate_every") { config.connections.heartRateLogIntervalMicroseconds = max(1_000_000, v) }
        try connections.finish()
    }

    /// The `hub:` section.
    static func readHub(_ hub: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try hub.bool("share_contacts") { config.hubShareContacts = v }
        if let v = try hub.bool("share_occupancy") { config.hubShareOccupancy = v }
        try hub.finish()
    }
}
