import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import VigilAccess
import VigilHubProtocol
import VigilSystem
import VigilWarningFeeds

/// How a hub runs (`vigil-hub serve`).
public struct HubConfiguration: Sendable {
    public var dataDirectory: String
    public var host: String = "0.0.0.0"
    public var port: Int = 8443
    /// `postgres://user:password@host:port/database`; nil: the hub runs its own cluster in
    /// `DATA/postgres`.
    public var databaseURL: String?
    /// How long a request waits on the database before it is answered 503 (hub.yaml
    /// `database: {request_seconds: N}`): keep it under the boxes' 30 s read timeout.
    public var databaseRequestSeconds = HubDatabase.requestSeconds
    /// Connections held at once and their idle timeout (hub.yaml `connections`); fitted to the
    /// process's descriptor limit at start.
    public var connections = ConnectionLimits.hub
    /// The file systemd-timesyncd keeps while the clock is synchronised (hub.yaml
    /// `clock_synchronised_file`): while it exists, answers say the hub's time can be vouched for.
    public var clockSynchronisedFile = "/run/systemd/timesync/synchronized"
    /// Anyone may read the network's alerts as CAP at `/cap.atom` (hub.yaml `cap: {public: true}`);
    /// otherwise coordinators signed in only. They carry no personal data (docs/warnings.md).
    public var capPublic = false
    /// Public warnings feeds the hub polls once for its boxes (hub.yaml `warnings.feeds`, as a
    /// box's: docs/warnings.md "The hub relays").
    public var warningFeeds: [WarningFeedSettings] = []

    public init(dataDirectory: String, host: String = "0.0.0.0", port: Int = 8443, databaseURL: String? = nil) {
        self.dataDirectory = dataDirectory
        self.host = host
        self.port = port
        self.databaseURL = databaseURL
    }

    /// `HOST:PORT` (`--listen`).
    public mutating func setListen(_ text: String) throws(HubError) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw .configuration("--listen takes HOST:PORT, not \(text)")
        }
        host = String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        self.port = port
    }

    /// The database client's settings: the URL's server, or the local cluster's socket.
    func postgresConfiguration(cluster: LocalCluster?) throws(HubError) -> PostgresClient.Configuration {
        if let cluster {
            return PostgresClient.Configuration(unixSocketPath: cluster.socketPath, username: cluster.userName,
                                                password: nil, database: cluster.databaseName)
        }
        guard let text = databaseURL, let url = URLComponents(string: text), url.scheme == "postgres" || url.scheme == "postgresql",
              let user = url.user else {
            throw .configuration("database.url must look like postgres://USER:PASSWORD@HOST:PORT/DATABASE (or ?host=/socket/directory)")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        // libpq's convention: a host that is a directory means the Unix socket in it.
        if let directory = url.queryItems?.first(where: { $0.name == "host" })?.value, directory.hasPrefix("/") {
            return PostgresClient.Configuration(unixSocketPath: "\(directory)/.s.PGSQL.\(url.port ?? 5432)", username: user,
                                                password: url.password, database: database.isEmpty ? nil : database)
        }
        guard let host = url.host, !host.isEmpty else {
            throw .configuration("database.url names no host")
        }
        // Over TCP the password and residents' data cross a network: TLS unless the URL says
        // `sslmode=disable` (a server on the same machine or a private link).
        let mode = url.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "require"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        default: throw .configuration("database.url: sslmode must be disable, prefer or require, not \(mode)")
        }
        return PostgresClient.Configuration(host: host, port: url.port ?? 5432, username: user, password: url.password,
                                            database: database.isEmpty ? nil : database, tls: tls)
    }
}

/// The hub: a database client, the schema, and the HTTPS server, as services in one group.
/// It keeps nothing outside PostgreSQL.
public enum Hub {
    /// Runs until the task is cancelled or the process gets SIGTERM/SIGINT. `onListening` gets
    /// the bound port (useful with port 0) and the certificate's fingerprint.
    public static func run(_ configuration: HubConfiguration, logger: Logger,
                           onListening: @escaping @Sendable (_ port: Int, _ fingerprint: String) -> Void = { _, _ in }) async throws {
        let cluster = configuration.databaseURL == nil ? try LocalCluster(dataDirectory: configuration.dataDirectory, logger: logger) : nil
        try cluster?.start()
        defer { cluster?.stop() }
        let identity = try HubIdentity.loadOrCreate(dataDirectory: configuration.dataDirectory, logger: logger)
        let client = PostgresClient(configuration: try configuration.postgresConfiguration(cluster: cluster), backgroundLogger: logger)
        let database = HubDatabase(client: client, logger: logger, requestSeconds: configuration.databaseRequestSeconds)

        let signal = FeedSignal()
        let router = Router(context: HubRequestContext.self)
        let inFlight = InFlightRequests()
        router.add(middleware: InFlightMiddleware(requests: inFlight))
        router.add(middleware: HubClockMiddleware(synchronisedFile: configuration.clockSynchronisedFile))
        let cache = FeedCache()
        let streams = FeedStreams(signal: signal, cache: cache, database: database, logger: logger)
        SyncRoutes(database: database, identity: identity, signal: signal, cache: cache, streams: streams, logger: logger).register(on: router)
        CoordinatorRoutes(database: database, signal: signal, streams: LiveStreams(), logger: logger,
                          now: { UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000)) })
            .register(on: router)
        HubCAPRoutes(database: database, signal: signal, publicAccess: configuration.capPublic, fingerprint: identity.fingerprint,
                     now: { UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000)) })
            .register(on: router)
        let descriptors = (try? DescriptorLimit.raiseToHard()) ?? 1024
        let limits = configuration.connections.fitted(toDescriptorLimit: descriptors)
        if limits != configuration.connections {
            logger.notice("hub: connection caps fitted to the descriptor limit (raise LimitNOFILE for more)", metadata: [
                "descriptors": "\(descriptors)", "connections": "\(limits.total)", "per_client": "\(limits.perClient)",
            ])
        }
        let app = Application(
            router: router,
            server: .http1(tls: try identity.serverTLS(), connections: OpenConnections(limits: limits, logger: logger)),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "vigil-hub"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                logger.info("hub: listening", metadata: ["port": "\(port)", "fingerprint": "\(identity.fingerprint)"])
                onListening(port, identity.fingerprint)
            },
            logger: logger
        )
        let relay = WarningRelay(feeds: configuration.warningFeeds, dataDirectory: configuration.dataDirectory, database: database,
                                 logger: logger, now: { UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000)) })
        let migration = MigrationService(database: database, app: app, relay: relay)
        let listener = FeedListener(client: client, signal: signal, logger: logger)
        let running = RunningServices()
        func named<S: Service>(_ name: String, _ service: S) -> ServiceGroupConfiguration.ServiceConfiguration {
            .init(service: NamedService(name: name, base: service, running: running))
        }
        let watchdog = ShutdownWatchdog(limit: .seconds(30), running: running, inFlight: inFlight, logger: logger) { cluster?.stop() }
        var groupConfiguration = ServiceGroupConfiguration(services: [named("database client", client), named("HTTPS server", migration),
                                                                      named("feed listener", listener),
                                                                      named("feed streams", FeedStreamsService(streams: streams, signal: signal))],
                                                           gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // A service that does not finish its graceful shutdown (a wait that ignores it) is
        // cancelled after this long, so SIGTERM always ends the hub (CI once saw one hang); one
        // that ignores cancellation too is the watchdog's.
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(10)
        let group = ServiceGroup(configuration: groupConfiguration)
        watchdog.start()
        defer { watchdog.finished() }
        try await group.run()
    }

    /// `vigil-hub enroll NAME`: a token for a new box, with the hub's fingerprint in it.
    public static func enrol(name: String, configuration: HubConfiguration, logger: Logger) async throws -> String {
        let identity = try HubIdentity.loadOrCreate(dataDirectory: configuration.dataDirectory, logger: logger)
        return try await administer(configuration, logger: logger) { database in
            let secret = try await database.createEnrolmentToken(name: name)
            return EnrolmentToken(secret: secret, hubFingerprint: identity.fingerprint).text
        }
    }

    /// `vigil-hub coordinator NAME`: adds a coordinator or gives one a new password.
    public static func setCoordinator(name: String, password: String, configuration: HubConfiguration, logger: Logger) async throws {
        guard password.count >= PasswordHash.minimumLength else {
            throw HubError.configuration("a coordinator's password needs at least \(PasswordHash.minimumLength) characters")
        }
        let hash = try PasswordHash.make(password)
        try await administer(configuration, logger: logger) { try await $0.setCoordinator(name: name, passwordHash: hash) }
    }

    /// `vigil-hub keys add`: holds a diagnosis-key export and offers it to every box.
    public static func addKeyFile(name: String, exportBin: [UInt8], exportSig: [UInt8]?, nowMicroseconds: UInt64,
                                  configuration: HubConfiguration, logger: Logger) async throws -> KeyFileAdded {
        let keys = try KeyFiles.check(name: name, exportBin: exportBin, exportSig: exportSig)
        let sig = exportSig ?? []
        return try await administer(configuration, logger: logger) {
            try await $0.addKeyFile(name: name, exportBin: exportBin, exportSig: sig, keys: keys, nowMicroseconds: nowMicroseconds)
        }
    }

    /// `vigil-hub keys list`.
    public static func keyFiles(configuration: HubConfiguration, logger: Logger) async throws -> [KeyFileSummary] {
        try await administer(configuration, logger: logger) { try await $0.keyFiles() }
    }

    /// `vigil-hub revoke NAME`.
    public static func revoke(name: String, configuration: HubConfiguration, logger: Logger) async throws -> Bool {
        try await administer(configuration, logger: logger) {
            try await $0.revoke(name: name, nowSeconds: UInt32(clamping: Int(Date().timeIntervalSince1970)))
        }
    }

    /// An administrative command's database: the hub's own cluster started for it when there is
    /// no `database.url` (stopped after), the schema migrated.
    static func administer<T: Sendable>(_ configuration: HubConfiguration, logger: Logger,
                                        _ body: @escaping @Sendable (HubDatabase) async throws -> T) async throws -> T {
        let cluster = configuration.databaseURL == nil ? try LocalCluster(dataDirectory: configuration.dataDirectory, logger: logger) : nil
        try cluster?.start()
        defer { cluster?.stop() }
        return try await withDatabase(configuration, cluster: cluster, logger: logger) { database in
            try await database.migrate()
            return try await body(database)
        }
    }

    /// Runs `body` with a connected database client, then shuts the client down.
    public static func withDatabase<T: Sendable>(_ configuration: HubConfiguration, cluster: LocalCluster?, logger: Logger,
                                                 _ body: @escaping @Sendable (HubDatabase) async throws -> T) async throws -> T {
        let client = PostgresClient(configuration: try configuration.postgresConfiguration(cluster: cluster), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { await client.run(); return nil }
            defer { group.cancelAll() }
            let result = try await body(HubDatabase(client: client, logger: logger))
            return result
        }
    }
}

/// Migrates the schema, then runs the HTTP server: no request is served on an old schema.
/// The warnings relay runs beside the server, on the migrated schema too.
struct MigrationService<App: ApplicationProtocol>: Service {
    let database: HubDatabase
    let app: App
    let relay: WarningRelay

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The client must be running for the migration to connect; it is a sibling service.
            try await database.migrate()
            group.addTask { try await app.run() }
            group.addTask { await relay.run() }
            try await group.waitForAll()
        }
    }
}
