import CoreMetrics
import Foundation
import VigilAccess
import VigilBoard
import VigilCalls
import VigilCore
import VigilHubProtocol
import VigilLog
import VigilRadio
import VigilSystem

/// Everything a node can be told, with the defaults documented in docs/configuration.md "Configuration".
public struct NodeConfiguration: Sendable {
    public var dataDirectory = "./var"
    /// Board profile name (looked up in board/) or path to a profile file.
    public var boardName = "sim"
    public var board = BoardProfile.simulated
    /// "sim" for the simulated radio; a BlueZ adapter by name (hci0) or address.
    public var radio = "sim"
    /// The BlueZ radio's settings (its `adapter` is `radio`).
    public var hci = HCIRadioSettings()
    /// Alerts over the air: the shelter's shared key, the frame's UUID, relaying.
    public var airAlerts = AirAlertSettings()
    /// The box's own advertised identity, rotated with its random address.
    public var presence = PresenceSettings()
    /// Exposure contacts (GAEN): the risk model, diagnosis-key verification, retention.
    public var exposure = ExposureSettings()
    public var scanWindowMicroseconds: UInt64 = 2_000_000
    public var simulation = RadioSimulationSettings()
    /// The service manager's notification socket and watchdog (systemd's `Type=notify`,
    /// `WatchdogSec=`): from the environment `vigil run` was started with; nil under no manager.
    public var serviceManager: ServiceManagerSettings?
    public var commitWindowMicroseconds: UInt64 = 5_000
    public var maxBatch = 4_096
    public var queueLimit = 65_536
    public var sync = SyncMode.deferredMeta
    public var initialMapBytes = 64 << 20
    public var maxMapBytes = 8 << 30
    public var criticalReserve = 0.05
    /// Bytes kept allocated beside the log and handed back when the disk fills (`log.disk_reserve`).
    public var diskReserveBytes = 16 << 20
    /// How often a running node checks its log's pages and checksums (`log.check_interval`;
    /// 0 = only at a start that follows an unfinished one). The first check runs a minute in.
    public var logCheckIntervalMicroseconds: UInt64 = 86_400_000_000
    /// After the log stops taking writes the node runs on from memory; this long after, if it has
    /// taken no critical event in memory since, it exits so systemd restarts it on the card
    /// (a passing fault then heals). With one, it stays up: a restart would lose it
    /// (`log.failed_restart_after`).
    public var logFailedRestartAfterMicroseconds: UInt64 = 60_000_000
    /// Raw scan hits older than this are folded into per-identifier, per-minute sightings and
    /// deleted, ten minutes of them at a time (`log.compact_after`; 0 = never: raw hits stay until
    /// retention). docs/log.md "A crowded shelter".
    public var compactAfterMicroseconds: UInt64 = 3_600_000_000
    /// The program that checks the log in a process of its own (`vigil log check`): `vigil run`
    /// sets it to itself. Nil (a node embedded in tests or another program): checked in-process.
    public var logCheckExecutable: String?
    public var projections = ProjectionSettings()
    public var checkpointEveryEvents = 10_000
    public var checkpointIntervalMicroseconds: UInt64 = 30_000_000
    public var logLevel = "info"
    /// Button gestures: debounce and the long press that raises (or cancels) an SOS.
    public var gestures = ButtonGestureDecoder.Settings()
    /// How long an SOS raised at the box stays active unless cancelled (0 = until cancelled).
    public var sosExpiryMicroseconds: UInt64 = 3_600_000_000
    public var notifier = NotifierConfiguration()
    /// The call tree (`calls.tree`, `calls.rounds`, `calls.repeat_after`); nil: the default
    /// tree, `notify.staff` at once (see `callTree`).
    public var configuredCallTree: CallTree?
    /// Replies by SMS from gammu-smsd's inbox (`calls.sms_inbox`, `calls.sms_inbox_format`).
    public var smsInbox = SMSInboxSettings()
    /// The call tree calls for help walk: `calls.tree` when configured, else `notify.staff` at
    /// once (docs/calls-for-help.md).
    public var callTree: CallTree {
        configuredCallTree ?? CallTree.standard(staff: projections.ladder.staff, arc: alarmCentre != nil)
    }
    /// The alarm receiving centre (`arc:`); nil: none.
    public var alarmCentre: AlarmCentreSettings?
    /// The self-test (`calls.test_every`, 0: none; `calls.test_to`, addresses that get a test
    /// message through the notifier): `NotifierSelfTest`, and the centre's test report.
    public var callTestEveryMicroseconds: UInt64 = 86_400_000_000
    public var callTestRecipients: [String] = []
    /// A start after the log was silent this long appends DowntimeDetected (`notify.downtime_report_after`).
    public var downtimeReportAfterMicroseconds: UInt64 = 300_000_000
    /// Issue 10: delivery failures lasting this long (first failed attempt to the latest) show
    /// "no way to tell anyone" on amber (`notify.unreachable_after`).
    public var notifyUnreachableAfterMicroseconds: UInt64 = 900_000_000
    /// Issue 11: residents' contact addresses go to the hub too (`hub.share_contacts`; off: only
    /// their names, so a coordinator sees who is to be called).
    public var hubShareContacts = false
    /// The per-minute count of advertisers heard goes to the hub (`hub.share_occupancy`; a count,
    /// never an address).
    public var hubShareOccupancy = true
    /// The box's own page and API (`http:`): off unless `http.listen` is set.
    public var http = HTTPSettings()
    /// GATT connections with phones and boxes (`connections:`): off unless `connections.enabled`.
    public var connections = ConnectionSettings()
    /// The regional hazard feed over MQTT (`hazards.feed`): off unless brokers are given.
    public var hazardFeed = HazardFeedSettings()
    /// Where the node's metrics go (nil: swift-metrics' global factory, which `vigil run`
    /// bootstraps with Prometheus's; tests give one of their own).
    public var metrics: (any MetricsFactory)?
    /// The event loop's and the log writer's nice value (`scheduling.loop_nice`; nil: the
    /// process's). -10 puts them ahead of the page's and the hub sync's threads on a busy box; it
    /// needs CAP_SYS_NICE, and child processes the loop starts inherit it.
    public var loopNice: Int32?
    /// Where the configuration came from, for messages.
    public var source = "(defaults)"

    public init() {}

    /// The log settings derived from this configuration.
    public var log: LogConfiguration {
        var c = LogConfiguration(directory: dataDirectory)
        c.writerNice = loopNice
        c.commitWindowMicroseconds = commitWindowMicroseconds
        c.maxBatch = maxBatch
        c.queueLimit = queueLimit
        c.sync = sync
        c.initialMapSize = initialMapBytes
        c.maxMapSize = max(maxMapBytes, initialMapBytes)
        c.criticalReserve = criticalReserve
        c.diskReserveBytes = diskReserveBytes
        return c
    }

    /// Reads a YAML configuration file. Missing keys keep their defaults; unknown keys, wrong
    /// types and out-of-range values are errors naming the file and line.
    public static func load(file: String) throws -> NodeConfiguration {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigurationError(file: file, line: nil, message: "cannot read the file (does it exist?)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(file: file, line: nil, message: "is not UTF-8 text")
        }
        return try load(text: text, file: file)
    }

    /// Addresses checked and normalised (`ContactAddress`): a typo is an error now, naming the
    /// setting and line, not a message nobody gets later.
    static func addresses(_ list: [String], setting: String, in reader: ConfigReader, allowARC: Bool = false) throws -> [String] {
        guard list.count <= 32 else { throw reader.error("\(setting): at most 32 addresses") }
        var out: [String] = []
        for text in list {
            do {
                let a = try ContactAddress.parse(text, allowARC: allowARC).text
                if !out.contains(a) { out.append(a) }
            } catch {
                throw reader.error("\(setting): \(error)")
            }
        }
        return out
    }

    /// Reads a configuration from `text` (named `file` in messages).
    public static func load(text: String, file: String) throws -> NodeConfiguration {
        var config = NodeConfiguration()
        config.source = file
        guard var root = try ConfigReader.parse(file: file, text: text) else { return config }
        var pendingDefaultTree: CallTree?
        var callsTestEvery: UInt64?
        if let v = try root.string("data") { config.dataDirectory = v }
        if let v = try root.string("board") { config.boardName = v }
        if let v = try root.string("log_level") {
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(v) else {
                throw root.error("log_level must be one of trace, debug, info, notice, warning, error, critical")
            }
            config.logLevel = v
        }
        if var radio = try root.section("radio") {
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
        if var x = try root.section("exposure") {
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
        if var sim = try root.section("simulation") {
            if let v = try sim.integer("advertisers", in: 0...100_000) { config.simulation.advertisers = v }
            if let v = try sim.duration("min_interval") { config.simulation.minIntervalMicroseconds = max(20_000, v) }
            if let v = try sim.duration("max_interval") { config.simulation.maxIntervalMicroseconds = max(20_000, v) }
            if let v = try sim.integer("rssi_step_db", in: 0...20) { config.simulation.rssiStepDB = v }
            if let v = try sim.duration("mean_stay") { config.simulation.meanStayMicroseconds = max(1_000_000, v) }
            if let v = try sim.integer("seed", in: 0...Int.max) { config.simulation.seed = UInt64(v) }
            try sim.finish()
        }
        if var log = try root.section("log") {
            if let v = try log.duration("commit_window") { config.commitWindowMicroseconds = v }
            if let v = try log.integer("max_batch", in: 1...1_000_000) { config.maxBatch = v }
            if let v = try log.integer("queue_limit", in: 16...10_000_000) { config.queueLimit = v }
            if let v = try log.string("sync") {
                guard let mode = SyncMode(rawValue: v) else {
                    throw log.error("log.sync must be full, deferred-meta or none")
                }
                config.sync = mode
            }
            if let v = try log.size("initial_map") { config.initialMapBytes = v }
            if let v = try log.size("max_map") { config.maxMapBytes = v }
            if let v = try log.fraction("critical_reserve") { config.criticalReserve = v }
            if let v = try log.size("disk_reserve", allowZero: true) { config.diskReserveBytes = v }
            if let v = try log.duration("check_interval") { config.logCheckIntervalMicroseconds = v }
            if let v = try log.duration("failed_restart_after") { config.logFailedRestartAfterMicroseconds = v }
            if let v = try log.duration("compact_after") { config.compactAfterMicroseconds = v }
            try log.finish()
        }
        if var alarms = try root.section("alarms") {
            if let v = try alarms.duration("debounce") { config.gestures.debounceNanoseconds = v * 1_000 }
            if let v = try alarms.duration("long_press") { config.gestures.longPressNanoseconds = max(100_000, v) * 1_000 }
            if let v = try alarms.duration("minimum_press") { config.gestures.minimumPressNanoseconds = v * 1_000 }
            if let v = try alarms.duration("sos_expiry") { config.sosExpiryMicroseconds = v }
            // Issue 10: holding on this long (from the press) cancels this box's own SOS; a long
            // press while it is active only re-affirms it. 0 = never at the box (CLI only).
            if let v = try alarms.duration("cancel_hold") { config.gestures.cancelHoldNanoseconds = v * 1_000 }
            try alarms.finish()
        }
        if var notify = try root.section("notify") {
            if let v = try notify.string("command") {
                guard v.hasPrefix("/") else { throw notify.error("notify.command must be an absolute path") }
                config.notifier.command = v
            }
            if let v = try notify.strings("arguments") { config.notifier.arguments = v }
            if let v = try notify.duration("timeout") { config.notifier.timeoutMicroseconds = max(100_000, v) }
            if let v = try notify.duration("retry_base") { config.notifier.retryBaseMicroseconds = max(1_000_000, v) }
            if let v = try notify.duration("retry_max") { config.notifier.retryMaxMicroseconds = max(1_000_000, v) }
            // The ladder's second step and downtime reports go to the staff channel.
            if let v = try notify.strings("staff") {
                config.projections.ladder.staff = try addresses(v, setting: "notify.staff", in: notify)
            }
            if let v = try notify.duration("downtime_report_after") { config.downtimeReportAfterMicroseconds = max(1_000_000, v) }
            // Issue 10: how long failures may last before amber says "no way to tell anyone".
            if let v = try notify.duration("unreachable_after") { config.notifyUnreachableAfterMicroseconds = v }
            try notify.finish()
        }
        var roadDirection: Double?
        if var calls = try root.section("calls") {
            var tree = CallTree(configured: true)
            if let items = try calls.mappings("tree") {
                guard !items.isEmpty, items.count <= 8 else { throw calls.error("calls.tree must list 1 to 8 tiers") }
                for (i, var item) in items.enumerated() {
                    let wait = try item.duration("after") ?? 0
                    guard i > 0 || wait == 0 else { throw item.error("calls.tree: the first tier starts at once (after: 0s)") }
                    guard let to = try item.strings("to"), !to.isEmpty, to.count <= 16 else {
                        throw item.error("calls.tree: each tier needs to: a list of 1 to 16 recipients")
                    }
                    let recipients = try addresses(to, setting: "calls.tree", in: item, allowARC: true)
                    try item.finish()
                    tree.tiers.append(CallTree.Tier(afterMicroseconds: wait, recipients: recipients))
                }
            }
            if let v = try calls.integer("rounds", in: 1...10) { tree.rounds = UInt32(v) }
            if let v = try calls.string("sms_inbox"), !v.isEmpty {
                guard v.hasPrefix("/") else { throw calls.error("calls.sms_inbox must be an absolute path (gammu-smsd's inboxpath)") }
                config.smsInbox.directory = v
            }
            if let v = try calls.string("sms_inbox_format") {
                guard let format = InboxFormat(rawValue: v) else { throw calls.error("calls.sms_inbox_format must be detail, standard or unicode (gammu-smsd's inboxformat)") }
                config.smsInbox.format = format
            }
            if let v = try calls.duration("repeat_after") { tree.repeatAfterMicroseconds = max(60_000_000, v) }
            if let v = try calls.duration("test_every") { callsTestEvery = v == 0 ? 0 : max(60_000_000, v) }
            if let v = try calls.strings("test_to") {
                guard v.count <= 8 else { throw calls.error("calls.test_to lists at most 8 addresses") }
                config.callTestRecipients = try addresses(v, setting: "calls.test_to", in: calls)
            }
            try calls.finish()
            // rounds or repeat_after alone shape the default tree.
            if tree.tiers.isEmpty {
                tree.configured = false
                pendingDefaultTree = tree
            } else {
                config.configuredCallTree = tree
            }
        }
        if var site = try root.section("site") {
            if let v = try site.string("name") { config.projections.ladder.siteName = v }
            if let v = try site.string("location"), !v.isEmpty {
                guard let location = parseLocation(v) else { throw site.error("site.location must be \"lat,lon\" in degrees (-33.8688,151.2093)") }
                config.projections.ladder.siteLocation = location
            }
            // The road's direction at the entrance, clockwise from north (traffic either way).
            if let v = try site.number("road_direction", in: 0...360) { roadDirection = v.truncatingRemainder(dividingBy: 360) }
            try site.finish()
        }
        if var hub = try root.section("hub") {
            if let v = try hub.bool("share_contacts") { config.hubShareContacts = v }
            if let v = try hub.bool("share_occupancy") { config.hubShareOccupancy = v }
            try hub.finish()
        }
        if var scheduling = try root.section("scheduling") {
            if let v = try scheduling.integer("loop_nice", in: -20...19) { config.loopNice = Int32(v) }
            try scheduling.finish()
        }
        if var connections = try root.section("connections") {
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
        if var hazards = try root.section("hazards") {
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
        if var http = try root.section("http") {
            if let v = try http.string("listen"), !v.isEmpty {
                guard HTTPSettings.parseListen(v) != nil else { throw http.error("http.listen must be HOST:PORT (0.0.0.0:8443)") }
                config.http.listen = v
            }
            if let v = try http.bool("tls") { config.http.tls = v }
            if let v = try http.bool("public_view") { config.http.publicView = v }
            if let v = try http.integer("max_connections", in: 16...100_000) { config.http.connections.total = v }
            if let v = try http.integer("max_connections_per_client", in: 1...100_000) { config.http.connections.perClient = v }
            if let v = try http.duration("idle_timeout") {
                guard (1_000_000...3_600_000_000).contains(v) else { throw http.error("http.idle_timeout must be from 1s to 1h") }
                config.http.connections.idleTimeoutSeconds = Int(v / 1_000_000)
            }
            if let v = try http.string("public_url"), !v.isEmpty {
                guard let url = HTTPSettings.parsePublicURL(v) else {
                    throw http.error("http.public_url must be the page's https address as others reach it, such as https://vigil-a.lan:8443")
                }
                config.http.publicURL = url
            }
            try http.finish()
        }
        if var p = try root.section("projections") {
            if let v = try p.duration("device_prune_after") { config.projections.devicePruneAfterMicroseconds = v }
            if let v = try p.integer("checkpoint_every", in: 1...100_000_000) { config.checkpointEveryEvents = v }
            if let v = try p.duration("checkpoint_interval") { config.checkpointIntervalMicroseconds = max(1_000_000, v) }
            try p.finish()
        }
        if var arc = try root.section("arc") {
            config.alarmCentre = try alarmCentre(from: &arc)
        }
        if let callsTestEvery {
            config.alarmCentre?.testEveryMicroseconds = callsTestEvery
            config.callTestEveryMicroseconds = callsTestEvery
        }
        try root.finish()
        if config.alarmCentre == nil, config.configuredCallTree?.everyone.contains(CallBook.alarmCentre) == true {
            throw ConfigurationError(file: file, line: nil, message: "calls.tree names arc, but no alarm receiving centre is configured (arc:)")
        }
        if let shape = pendingDefaultTree {
            var tree = CallTree.standard(staff: config.projections.ladder.staff, arc: config.alarmCentre != nil)
            tree.rounds = shape.rounds
            tree.repeatAfterMicroseconds = shape.repeatAfterMicroseconds
            config.configuredCallTree = tree
        }
        let location = config.projections.ladder.siteLocation.split(separator: ",").compactMap { Double($0) }
        if roadDirection != nil && location.count != 2 {
            throw ConfigurationError(file: file, line: nil, message: "site.road_direction needs site.location (the entrance the road passes)")
        }
        if location.count == 2 {
            config.projections.hazardSite = HazardSite(latitude: location[0], longitude: location[1], roadDirectionDegrees: roadDirection)
        }
        config.board = try loadBoard(named: config.boardName, relativeTo: (file as NSString).deletingLastPathComponent)
        return config
    }

    /// "lat,lon" in degrees, normalised (no spaces), or nil.
    static func parseLocation(_ text: String) -> String? {
        guard GeoPoint(text: text) != nil else { return nil }
        return text.filter { !$0.isWhitespace }
    }

    /// Resolves a board by path or by name in the usual places; `sim` falls back to the built-in
    /// profile so a node runs anywhere.
    public static func loadBoard(named name: String, relativeTo base: String = ".") throws -> BoardProfile {
        let candidates: [String]
        if name.hasSuffix(".yaml") || name.contains("/") {
            candidates = [name]
        } else {
            candidates = [base + "/board/\(name).yaml", base + "/\(name).yaml", "board/\(name).yaml",
                          "/etc/vigil/board/\(name).yaml", "/usr/share/vigil/board/\(name).yaml"]
        }
        for path in candidates where FileSystem.exists(path) {
            return try BoardProfileFile.load(file: path)
        }
        if name == "sim" { return .simulated }
        throw ConfigurationError(file: name, line: nil, message: "no such board profile (looked in \(candidates.joined(separator: ", ")))")
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

/// The box's rotating presence advertisement (config `radio.advertise`).
public struct PresenceSettings: Sendable, Equatable {
    public var enabled = true
    public var rotationSeconds: UInt32 = PresenceIdentity.defaultRotationSeconds
    public init() {}
}

/// Board profile files (board/*.yaml).
enum BoardProfileFile {
    static func load(file: String) throws -> BoardProfile {
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(file: file, line: nil, message: "cannot read the board profile")
        }
        guard var root = try ConfigReader.parse(file: file, text: text) else {
            throw ConfigurationError(file: file, line: nil, message: "the board profile is empty")
        }
        let name = try root.string("name") ?? (file as NSString).lastPathComponent
        guard let chip = try root.string("chip") else { throw root.error("chip is required (gpiochip name or label)") }
        _ = try root.string("description")
        guard var buttonSection = try root.section("button") else { throw root.error("button is required") }
        let button = try line(&buttonSection)
        var outputs: [OutputLine: BoardProfile.Line] = [:]
        if var section = try root.section("outputs") {
            for output in OutputLine.allCases {
                if var l = try section.section(output.rawValue) { outputs[output] = try line(&l) }
            }
            try section.finish()
        }
        var checkIns: [String: BoardProfile.Line] = [:]
        if let section = try root.section("checkin_buttons"), let mapping = section.node.mapping {
            var reader = section
            for key in mapping.keys.compactMap({ $0.scalar?.string }) {
                if var l = try reader.section(key) { checkIns[key] = try line(&l) }
            }
            try reader.finish()
        }
        try root.finish()
        return BoardProfile(name: name, chip: chip, button: button, outputs: outputs, checkInButtons: checkIns)
    }

    private static func line(_ reader: inout ConfigReader) throws -> BoardProfile.Line {
        guard let offset = try reader.integer("line", in: 0...1023) else { throw reader.error("\(reader.path).line is required") }
        let activeLow = try reader.bool("active_low") ?? false
        try reader.finish()
        return BoardProfile.Line(offset: UInt32(offset), activeLow: activeLow)
    }
}

/// What systemd hands a `Type=notify` service in its environment (sd_notify(3)).
public struct ServiceManagerSettings: Sendable, Equatable {
    /// `NOTIFY_SOCKET`: a path, or a name in the abstract namespace with a leading '@'.
    public var socketPath: String
    /// `WATCHDOG_USEC`: the watchdog's interval; 0 when there is none. The loop pings at half it.
    public var watchdogMicroseconds: UInt64

    public init(socketPath: String, watchdogMicroseconds: UInt64 = 0) {
        self.socketPath = socketPath
        self.watchdogMicroseconds = watchdogMicroseconds
    }

    /// The settings in `environment`, nil without NOTIFY_SOCKET. A watchdog meant for another
    /// process (`WATCHDOG_PID` not `pid`) or an unreadable interval is ignored, as sd_notify does.
    public static func from(environment: [String: String], pid: Int32) -> ServiceManagerSettings? {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        var settings = ServiceManagerSettings(socketPath: path)
        if let text = environment["WATCHDOG_USEC"], let us = UInt64(text), us > 0,
           environment["WATCHDOG_PID"].map({ Int32($0) == pid }) ?? true {
            settings.watchdogMicroseconds = us
        }
        return settings
    }
}

/// The box's page and API (docs/page.md "The box's page").
public struct HTTPSettings: Sendable, Equatable {
    /// `HOST:PORT` to serve on; nil (the default): no page at all.
    public var listen: String?
    /// HTTPS with the box's self-signed certificate (`DATA/http/box.crt`, its fingerprint in
    /// `vigil status`); plain HTTP only by explicit choice (`http.tls: false`).
    public var tls = true
    /// Anyone who reaches the page may see the read-only view without signing in. Off by
    /// default: residents' names and rooms are not for everyone on a shelter's Wi-Fi.
    public var publicView = false
    /// The page's address as the servers of webhook recipients reach it (`https://vigil-a.lan:8443`),
    /// without a trailing slash: messages to webhooks carry a take link under it. nil: they carry
    /// the link's path and token only.
    public var publicURL: String?
    /// Connections held at once (`http.max_connections`, `http.max_connections_per_client`) and
    /// how long one may sit idle (`http.idle_timeout`), fitted at start to the descriptors the
    /// process may hold, less a reserve for the log, the control socket, notifiers and GATT.
    public var connections = ConnectionLimits.boxPage

    public init() {}

    /// An `https://host[:port][/prefix]` URL without spaces, query or fragment, at most 200
    /// bytes (plain `http://` only to this box itself: a take token must not cross a network in
    /// the clear); returned without its trailing slash.
    public static func parsePublicURL(_ text: String) -> String? {
        let trimmed = text.hasSuffix("/") ? String(text.dropLast()) : text
        guard trimmed.utf8.count <= 200, trimmed.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
              trimmed.hasPrefix("https://") || isLoopback(url: trimmed),
              let url = URL(string: trimmed), let host = url.host, !host.isEmpty,
              url.query == nil, url.fragment == nil, url.user == nil else { return nil }
        return trimmed
    }

    /// Whether `url` is plain http to this box itself (127.0.0.0/8, ::1, localhost).
    public static func isLoopback(url: String) -> Bool {
        guard url.lowercased().hasPrefix("http://"), let host = URL(string: url)?.host?.lowercased() else { return false }
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// `HOST:PORT` (an IPv6 host in brackets), or nil.
    public static func parseListen(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65_535).contains(port) else { return nil }
        let host = String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        guard !host.isEmpty else { return nil }
        return (host, port)
    }
}
