import CoreMetrics
import Foundation
import VigilBoard
import VigilCAP
import VigilCalls
import VigilCore
import VigilHubProtocol
import VigilLog
import VigilRadio
import VigilSystem
import VigilWarningFeeds

/// Everything a node can be told, with the defaults documented in docs/configuration.md "Configuration".
public struct NodeConfiguration: Sendable {
    public var dataDirectory = "./var"
    /// Board profile name (looked up in board/) or path to a profile file.
    public var boardName = "sim"
    /// False while `board:` is empty (a packaged file nobody has set up): `vigil run` refuses it.
    public var boardChosen: Bool { !boardName.isEmpty }
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
    /// Public warnings feeds (`warnings.feeds`; docs/warnings.md).
    public var warningFeeds: [WarningFeedSettings] = []
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
            if FileSystem.exists(file) { throw ConfigurationError(file: file, line: nil, message: "cannot read the file", unreadable: true) }
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
    /// `resolvingBoard` false: the board profile is not looked for (`vigil setup` reads a file
    /// whose profile is missing, to ask for another).
    public static func load(text: String, file: String, resolvingBoard: Bool = true) throws -> NodeConfiguration {
        var config = NodeConfiguration()
        config.source = file
        guard var root = try ConfigReader.parse(file: file, text: text) else {
            // An empty file (one cut short by a power cut, say) names no board: refused by `vigil
            // run`, never the simulated board.
            config.boardName = ""
            return config
        }
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
        if var radio = try root.section("radio") { try readRadio(&radio, into: &config) }
        if var x = try root.section("exposure") { try readExposure(&x, into: &config) }
        if var sim = try root.section("simulation") { try readSimulation(&sim, into: &config) }
        if var log = try root.section("log") { try readLog(&log, into: &config) }
        if var alarms = try root.section("alarms") { try readAlarms(&alarms, into: &config) }
        if var notify = try root.section("notify") { try readNotify(&notify, into: &config) }
        var roadDirection: Double?
        if var calls = try root.section("calls") { (callsTestEvery, pendingDefaultTree) = try readCalls(&calls, into: &config) }
        if var site = try root.section("site") { roadDirection = try readSite(&site, into: &config) }
        if var hub = try root.section("hub") { try readHub(&hub, into: &config) }
        if var scheduling = try root.section("scheduling") { try readScheduling(&scheduling, into: &config) }
        if var connections = try root.section("connections") { try readConnections(&connections, into: &config) }
        if var hazards = try root.section("hazards") { try readHazards(&hazards, into: &config) }
        if var warnings = try root.section("warnings") { try readWarnings(&warnings, into: &config) }
        if var http = try root.section("http") { try readHTTP(&http, into: &config) }
        if var p = try root.section("projections") { try readProjections(&p, into: &config) }
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
            config.projections.warnings.site = CAPPoint(latitude: location[0], longitude: location[1])
            config.http.siteLocation = config.projections.warnings.site
        }
        config.http.siteName = config.projections.ladder.siteName
        // `board: ""` is the package's file before `vigil setup`: readable (setup reads it to ask),
        // refused by `vigil run` (`boardChosen`), never quietly the simulated board.
        if config.boardChosen, resolvingBoard {
            config.board = try loadBoard(named: config.boardName, relativeTo: (file as NSString).deletingLastPathComponent)
        }
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
        if let path = try boardFile(named: name, relativeTo: base) { return try BoardProfileFile.load(file: path) }
        return .simulated
    }

    /// The profile file `name` resolves to, or nil for the built-in `sim`; throws when there is none.
    public static func boardFile(named name: String, relativeTo base: String = ".") throws -> String? {
        let candidates: [String]
        if name.hasSuffix(".yaml") || name.contains("/") {
            candidates = [name]
        } else {
            // A configuration file named without a directory is in the working directory.
            let base = base.isEmpty ? "." : base
            candidates = [base + "/board/\(name).yaml", base + "/\(name).yaml", "board/\(name).yaml",
                          "/etc/vigil/board/\(name).yaml", "/usr/share/vigil/board/\(name).yaml"]
        }
        for path in candidates where FileSystem.exists(path) { return path }
        if name == "sim" { return nil }
        throw ConfigurationError(file: name, line: nil, message: "no such board profile (looked in \(candidates.joined(separator: ", ")))")
    }
}

/// Board profile files (board/*.yaml).
enum BoardProfileFile {
    static func load(file: String) throws -> BoardProfile {
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(file: file, line: nil, message: "cannot read the board profile", unreadable: FileSystem.exists(file))
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

