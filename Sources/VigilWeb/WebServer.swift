import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import VigilAccess
import VigilNode
import VigilSystem

/// The box's own page and API (docs/page.md "The box's page"): a Hummingbird server beside the node's
/// loop. It never touches node state: it reads the snapshots the loop publishes (`SnapshotFeed`)
/// and sends `NodeCommand`s (`NodeHandle.perform`), so however many browsers watch and however hard a
/// script hammers the API, the loop that keeps residents safe does not wait for it.
///
/// Run it in the same `ServiceGroup` as the node, after it: a graceful shutdown then stops the
/// server (its live streams end) before the node.
public struct WebServer: Service {
    let node: NodeHandle
    let settings: HTTPSettings
    let credentials: WebCredentials
    let logger: Logger
    let onListening: @Sendable (_ port: Int, _ fingerprint: String?) -> Void
    let secondsNow: @Sendable () -> UInt64
    /// The page's one reader of the node's snapshots, whatever the number of browsers.
    let feed: LiveFeed
    /// What `/metrics` serves (nil: no metrics, 404).
    let metrics: PrometheusCollectorRegistry?

    /// `secondsNow` is a monotonic clock in seconds (sessions, sign-in limits); tests inject one.
    public init(node: NodeHandle, settings: HTTPSettings, dataDirectory: String, logger: Logger, metrics: PrometheusCollectorRegistry? = nil,
                secondsNow: @escaping @Sendable () -> UInt64 = { UInt64(ProcessInfo.processInfo.systemUptime) },
                onListening: @escaping @Sendable (_ port: Int, _ fingerprint: String?) -> Void = { _, _ in }) {
        self.node = node
        self.settings = settings
        self.credentials = WebCredentials(dataDirectory: dataDirectory)
        self.logger = logger
        self.secondsNow = secondsNow
        self.onListening = onListening
        self.metrics = metrics
        feed = LiveFeed(now: secondsNow)
    }

    public func run() async throws {
        do {
            try await serve()
        } catch {
            logger.error("the box's page cannot be served; the node runs on without it", metadata: ["error": "\(error)"])
            throw error
        }
    }

    private func serve() async throws {
        guard let listen = settings.listen, let (host, port) = HTTPSettings.parseListen(listen) else {
            throw AccessError.setup("http.listen must be HOST:PORT")
        }
        let identity = settings.tls
            ? try SelfSignedIdentity.loadOrCreate(directory: credentials.directory, name: "box", commonName: "vigil-box", logger: logger)
            : nil
        let feed = self.feed
        let routes = WebRoutes(node: node, settings: settings, credentials: credentials, sessions: WebSessions(now: secondsNow),
                               feed: feed, metrics: metrics, logger: logger)
        let router = Router(context: WebContext.self)
        routes.register(on: router)
        let fingerprint = identity?.fingerprint
        let logger = self.logger
        let onListening = self.onListening
        let node = self.node
        let configuration = ApplicationConfiguration(address: .hostname(host, port: port), serverName: "vigil")
        let connections = openConnections()
        let running: @Sendable (any Channel) async -> Void = { channel in
            let bound = channel.localAddress?.port ?? port
            logger.notice("the box's page is served", metadata: [
                "address": "\(host):\(bound)", "tls": "\(fingerprint != nil)", "fingerprint": "\(fingerprint ?? "")",
            ])
            // Snapshots only once the page is served: a page that cannot bind costs the loop nothing.
            node.publishSnapshots()
            onListening(bound, fingerprint)
        }
        let app: Application<RouterResponder<WebContext>>
        if let identity {
            app = Application(router: router, server: .http1(tls: try identity.serverTLS(), connections: connections),
                              configuration: configuration, onServerRunning: running, logger: logger)
        } else {
            logger.warning("the box's page is served over plain HTTP (http.tls: false): passwords and cookies cross the network readable")
            app = Application(router: router, server: .http1(tls: nil, connections: connections),
                              configuration: configuration, onServerRunning: running, logger: logger)
        }
        let snapshots = node.snapshots.updates()
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await feed.run(snapshots) }
                group.addTask { try await app.runService() }
                // The server ends first (shutdown) or fails; the feed ends with the node.
                try await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            // Live streams never end by themselves: end them, so the server's shutdown does not
            // wait for browsers that stay.
            feed.finish()
        }
    }
}

extension WebServer {
    /// The page's connection caps, fitted to the descriptors this process may hold: whatever
    /// browsers and scripts hold open, `ConnectionLimits.reservedDescriptors` stay for the log,
    /// the control socket, notifiers' pipes, GATT and the hub's client.
    func openConnections() -> OpenConnections {
        let descriptors = (try? DescriptorLimit.raiseToHard()) ?? 1024
        let limits = settings.connections.fitted(toDescriptorLimit: descriptors)
        if limits != settings.connections {
            logger.notice("the page's connection caps are fitted to the descriptor limit (LimitNOFILE)", metadata: [
                "descriptors": "\(descriptors)", "max_connections": "\(limits.total)", "per_client": "\(limits.perClient)",
            ])
        }
        let open = metrics?.makeGauge(name: "vigil_http_connections_open")
        let refused = metrics?.makeCounter(name: "vigil_http_connections_refused_total")
        return OpenConnections(limits: limits, logger: logger) { count, wasRefused in
            open?.set(Int64(count))
            if wasRefused { refused?.increment() }
        }
    }
}

/// A request's context: the client's address (sign-in limits count failures by it).
typealias WebContext = AddressedContext

extension AddressedContext {
    /// The full address as sign-ins count it (`ClientAddress.key` says why not by /64).
    static func signInKey(_ address: SocketAddress?) -> String { ClientAddress.key(address) }
}
