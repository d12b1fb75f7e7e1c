/// The `hazards:` section: the regional feed over MQTT.
extension NodeConfiguration {
    /// The `hazards:` section.
    static func readHazards(_ hazards: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if var feed = try hazards.section("feed") {
            if let v = try feed.strings("brokers") {
                var brokers: [HazardFeedSettings.Broker] = []
                for text in v {
                    guard let b = HazardFeedSettings.Broker(text: text) else {
                        throw feed.error("hazards.feed.brokers: \"\(text)\" is not \"NAME HOST:PORT LAT,LON\" (or a DriveAZ region's name for LAT,LON)")
                    }
                    brokers.append(b)
                }
                guard brokers.count <= 16 else { throw feed.error("hazards.feed.brokers: at most 16") }
                config.hazardFeed.brokers = brokers
            }
            if let v = try feed.bool("tls") { config.hazardFeed.tls = v }
            if let v = try feed.string("ca_file") { config.hazardFeed.caFile = v }
            if let v = try feed.string("cert_file") { config.hazardFeed.certificateFile = v }
            if let v = try feed.string("key_file") { config.hazardFeed.keyFile = v }
            if let v = try feed.strings("channels") {
                guard !v.isEmpty, v.count <= 8, v.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 64 && !$0.contains("/") && !$0.contains("+") && !$0.contains("#") }) else {
                    throw feed.error("hazards.feed.channels: 1 to 8 names (Public, vendor ids), no / + #")
                }
                config.hazardFeed.channels = v
            }
            if let v = try feed.string("client_id") {
                guard !v.isEmpty, v.utf8.count <= 23 else { throw feed.error("hazards.feed.client_id: 1 to 23 bytes (MQTT 3.1.1)") }
                config.hazardFeed.clientID = v
            }
            if let v = try feed.bool("vru") { config.hazardFeed.vru = v }
            for (key, path) in [("publish_region", \HazardFeedSettings.publishRegion), ("publish_cell", \HazardFeedSettings.publishCell)] {
                if let v = try feed.string(key) {
                    guard !v.isEmpty, v.utf8.count <= 64, !v.contains("/"), !v.contains("+"), !v.contains("#") else {
                        throw feed.error("hazards.feed.\(key): a topic level (no / + #)")
                    }
                    config.hazardFeed[keyPath: path] = v
                }
            }
            if let v = try feed.integer("max_in_flight", in: 1...65_536) { config.hazardFeed.maximumInFlight = v }
            if let v = try feed.duration("road_user_log_interval") { config.hazardFeed.roadUserLogIntervalMicroseconds = min(v, 9_000_000) }
            if let v = try feed.duration("zone_log_interval") { config.hazardFeed.zoneLogIntervalMicroseconds = min(max(1_000_000, v), 1_800_000_000) }
            if let v = try feed.duration("retry_base") { config.hazardFeed.retryBaseMicroseconds = max(100_000, v) }
            if let v = try feed.duration("retry_max") { config.hazardFeed.retryMaxMicroseconds = max(config.hazardFeed.retryBaseMicroseconds, v) }
            if let v = try feed.integer("failures_before_failover", in: 1...100) { config.hazardFeed.failuresBeforeFailover = v }
            try feed.finish()
        }
        try hazards.finish()
    }
}
