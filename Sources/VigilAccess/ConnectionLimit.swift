import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOHTTPTypes
import NIOSSL
import Synchronization

/// How many TCP connections one server holds at once, and how long one may sit idle.
///
/// Without them about 1,100 idle connections took every descriptor of the node's process: the
/// control socket, a notifier's pipes, GATT accepts and hub requests then failed (issue 28).
/// A connection past a cap is closed as soon as the server hands it over, before TLS or HTTP
/// read any of it, and counted.
public struct ConnectionLimits: Sendable, Equatable {
    /// Connections open at once, all clients together.
    public var total: Int
    /// Connections open at once from one client address (`ClientAddress.key`: an IPv4 client
    /// seen through the dual-stack listener by its IPv4 address). A browser opens at most six.
    public var perClient: Int
    /// A connection with no request in progress for this long is closed (a keep-alive nobody
    /// uses, or a new one that never sends a request, its TLS handshake included). Hummingbird's
    /// timer, which counts every part of a request as activity: a slow request is `requestSeconds`'.
    /// No shorter deadline for a first request: one at 10 s closed the spare connections
    /// Chromium opens ahead (it closes its own unused ones at 10 s), and Chromium then sent a
    /// coordinator's form twice.
    public var idleTimeoutSeconds: Int
    /// A request must arrive whole (head to end of body) within this: the idle timeout counts
    /// every body part as activity, so a body sent a byte at a time held a place for ever.
    public var requestSeconds: Int
    /// An IPv6 client is its /64 (the hub: a host with a /64 has every address in it), or its
    /// whole address (the page: every device on a shelter's Wi-Fi shares one /64).
    public var ipv6ClientBits: Int

    public init(total: Int, perClient: Int, idleTimeoutSeconds: Int, requestSeconds: Int = 30, ipv6ClientBits: Int = 128) {
        self.total = total
        self.perClient = perClient
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.requestSeconds = requestSeconds
        self.ipv6ClientBits = ipv6ClientBits
    }

    /// The box's page: a shelter's staff and a few scripts, on the shelter's network.
    public static let boxPage = ConnectionLimits(total: 256, perClient: 32, idleTimeoutSeconds: 30)
    /// The hub: boxes hold a long poll and a feed stream each and upload on a pool of up to four;
    /// many boxes may share one carrier-NAT address. Its idle timeout is longer than the boxes'
    /// client pools keep an idle connection (60 s), so a box never reuses one the hub is closing.
    /// An upload's body (a batch of up to 1,000 events) may cross a slow uplink: two minutes.
    public static let hub = ConnectionLimits(total: 4096, perClient: 512, idleTimeoutSeconds: 90, requestSeconds: 120, ipv6ClientBits: 64)

    /// Descriptors kept out of the HTTP server's reach whatever its caps say.
    public static let reservedDescriptors = 256

    /// These limits with `total` (and `perClient`) at most what `descriptorLimit` leaves after
    /// the reserve, never below 16.
    public func fitted(toDescriptorLimit descriptorLimit: Int, reserve: Int = ConnectionLimits.reservedDescriptors) -> ConnectionLimits {
        var fitted = self
        fitted.total = max(16, min(total, descriptorLimit - reserve))
        fitted.perClient = min(perClient, fitted.total)
        return fitted
    }
}

/// The connections one server holds, counted against its `ConnectionLimits`. Shared by the
/// server's event loops (a mutex; a few integer updates per connection).
public final class OpenConnections: Sendable {
    public let limits: ConnectionLimits
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var open = 0
        var byClient: [String: Int] = [:]
        var refused: UInt64 = 0
        /// When the last refusal was logged (refusals are counted always, logged once a minute).
        var lastLogged: ContinuousClock.Instant?
        /// Refused connections set up and not yet handed over (to be closed then).
        var refusedChannels: Set<ObjectIdentifier> = []
    }

    /// What `/metrics` and the logs report.
    public struct Counts: Sendable, Equatable {
        public var open: Int
        public var refused: UInt64

        public init(open: Int, refused: UInt64) {
            self.open = open
            self.refused = refused
        }
    }

    /// Told of every change, outside the lock: the connections open now, and whether this one
    /// was refused (metrics).
    private let observe: (@Sendable (_ open: Int, _ refused: Bool) -> Void)?

    public init(limits: ConnectionLimits, logger: Logger, observe: (@Sendable (_ open: Int, _ refused: Bool) -> Void)? = nil) {
        self.limits = limits
        self.logger = logger
        self.observe = observe
    }

    public var counts: Counts { state.withLock { Counts(open: $0.open, refused: $0.refused) } }

    /// Counts a new connection from `client` in, or says it is over a cap (and counts that).
    func admit(_ client: String, now: ContinuousClock.Instant = .now) -> Bool {
        let (admitted, open, log): (Bool, Int, UInt64?) = state.withLock { state in
            let fromClient = state.byClient[client, default: 0]
            if state.open < limits.total && fromClient < limits.perClient {
                state.open += 1
                state.byClient[client] = fromClient + 1
                return (true, state.open, nil)
            }
            state.refused &+= 1
            if let last = state.lastLogged, now - last < .seconds(60) { return (false, state.open, nil) }
            state.lastLogged = now
            return (false, state.open, state.refused)
        }
        observe?(open, !admitted)
        if let log {
            logger.warning("http: connections refused at the cap (logged at most once a minute)", metadata: [
                "open": "\(open)", "total_cap": "\(limits.total)", "per_client_cap": "\(limits.perClient)",
                "refused_so_far": "\(log)",
            ])
        }
        return admitted
    }

    /// Remembers a refused connection until the server hands it over, or it closes.
    func markRefused(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { _ = $0.refusedChannels.insert(id) }
        channel.closeFuture.whenComplete { [self] _ in state.withLock { _ = $0.refusedChannels.remove(id) } }
    }

    /// Whether `channel` was refused (and forgets it).
    func takeRefused(_ channel: any Channel) -> Bool {
        state.withLock { $0.refusedChannels.remove(ObjectIdentifier(channel)) != nil }
    }

    /// A connection counted in by `admit` has closed.
    func release(_ client: String) {
        let open = state.withLock { state in
            state.open -= 1
            let left = state.byClient[client, default: 1] - 1
            state.byClient[client] = left > 0 ? left : nil
            return state.open
        }
        observe?(open, false)
    }
}

/// A refused connection's first handler until it is closed: what it sends is dropped unread
/// (no TLS handshake, no HTTP parsing for a client over its cap).
final class RefusedConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

/// A child channel set up by `base`, counted against `connections`.
///
/// A connection over a cap is closed when the server hands it over (`handle`), not while it is
/// set up: closing it during setup dropped its async channel unfinished (a crash in debug
/// builds). Until then what it sends is read and dropped (`RefusedConnectionHandler`).
struct GatedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let connections: OpenConnections

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let client = ClientAddress.key(channel.remoteAddress, ipv6Bits: connections.limits.ipv6ClientBits)
        if connections.admit(client) {
            let released = ReleaseOnce { connections.release(client) }
            channel.closeFuture.whenComplete { _ in released.run() }
            // A failed setup leaves the channel unregistered and never closed (NIO's async
            // bind drops it): its place is given back here, its descriptor closed.
            return base.setup(channel: channel, logger: logger).flatMapErrorThrowing { error in
                released.run()
                channel.close(promise: nil)
                throw error
            }
        }
        connections.markRefused(channel)
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(RefusedConnectionHandler(), position: .first)
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }.flatMapErrorThrowing { error in
            _ = connections.takeRefused(channel)
            channel.close(promise: nil)
            throw error
        }
    }

    func handle(value: Value, logger: Logger) async {
        // Closed first: the base's handling then sees its end at once and finishes cleanly.
        if connections.takeRefused(value.channel) { try? await value.channel.close() }
        await base.handle(value: value, logger: logger)
    }
}

/// Runs its closure once, whoever calls first.
final class ReleaseOnce: Sendable {
    private let body: @Sendable () -> Void
    private let done = Mutex(false)
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    func run() {
        guard done.withLock({ was in defer { was = true }; return !was }) else { return }
        body()
    }
}

/// Closes a connection whose request has not arrived whole within `request` of its head.
/// Responses are not timed: a live stream or a long poll runs on.
final class RequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    private let request: TimeAmount
    private var deadline: Scheduled<Void>?

    init(request: TimeAmount) {
        self.request = request
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            arm(context, request)
        case .end:
            disarm()
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    private func arm(_ context: ChannelHandlerContext, _ after: TimeAmount) {
        disarm()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: after) { loopBound.value.close(promise: nil) }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1, over TLS when `tls` is given, with `connections`' caps and idle timeout: the one
    /// server setup the box's page and the hub share.
    public static func http1(tls: TLSConfiguration?, connections: OpenConnections) -> HTTPServerBuilder {
        let limits = connections.limits
        let http = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestDeadlineHandler(request: .seconds(Int64(limits.requestSeconds)))],
            idleTimeout: .seconds(Int64(limits.idleTimeoutSeconds)))
        if let tls {
            return HTTPServerBuilder { responder in
                GatedChildChannel(base: try TLSChannel(HTTP1Channel(responder: responder, configuration: http), tlsConfiguration: tls),
                                  connections: connections)
            }
        }
        return HTTPServerBuilder { responder in
            GatedChildChannel(base: HTTP1Channel(responder: responder, configuration: http), connections: connections)
        }
    }
}
