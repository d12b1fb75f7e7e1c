import Foundation
import VigilCore
import VigilEvents
import VigilHex
import VigilJ2735
import VigilMQTT
import VigilSystem

/// The regional hazard feed over MQTT (docs/hazards.md "Active hazards"), as DriveAZ uses it: the broker
/// nearest the site (failing over to the next-nearest), mutual TLS, DriveAZ's public and vendor
/// topics, J2735 PSMs and TIMs decoded into `HazardReported` (source MQTT), and VRU mode: while
/// people are at the box, a PSM for a pedestrian cluster at the site each second.
///
/// libmosquitto runs on the node's loop: its socket is watched like any other (for output only
/// while it has bytes queued) and its keep-alive runs from the feed's one-second timer. Only
/// the connect (DNS may block) runs on a helper thread, handing the client back to the loop.
///
/// A flood never delays an SOS: at most `maximumInFlight` reports are on their way to the card
/// at once and the log may shed them (they are sheddable records); the rest are shed and
/// counted. A road user is logged at most once a second (its first report, and one that makes
/// it relevant, at once) and a zone when it changes or every five minutes: the card is worn by
/// what matters, not by a feed's repeats.
///
/// Its state is internal rather than private only so that its message handling can live in a file
/// of its own (`HazardFeed+Messages`): nothing else touches it, and all of it is used on the loop.
final class HazardFeed: NodeComponent {
    unowned let context: any NodeContext
    let settings: HazardFeedSettings
    /// Where relative certificate and key paths are found (the data directory).
    let dataDirectory: String
    /// The site as configured (`projections.hazard_site`); nil: the log's.
    let configuredSite: HazardSite?
    static let tickTimer = Scheduler.Timer("hazard-feed-tick")
    static let retryTimer = Scheduler.Timer("hazard-feed-retry")
    static let connackTimeoutMicroseconds: UInt64 = 10_000_000
    static let sightingLimit = 20

    enum Phase: Equatable { case off, dialing, linked, waiting }
    var phase = Phase.off
    var client: MQTTClient?
    var socket: Int32?
    var watchingOutput = false
    /// Over TLS before the CONNACK: output is not watched until input comes (see socketReady).
    var outputPausedForHandshake = false
    /// Bumped whenever a connection is dropped, so a late dial result is ignored.
    var generation = 0
    var order: [HazardFeedSettings.Broker] = []
    var brokerIndex = 0
    var failuresHere = 0
    var backoff: Backoff
    var connected = false
    /// SUBSCRIBEs sent and not yet acknowledged, by message id.
    var subscriptions: [Int32: String] = [:]
    var connectedSinceMicroseconds: UInt64 = 0
    var linkedAtMicroseconds: UInt64 = 0
    /// Set by libmosquitto's callbacks, acted on once its call returned (never inside it).
    var failureInCallback: String?
    /// The disconnect callback's code, in words: said only when no call threw a better reason.
    var disconnectReason: String?
    var lastError: String?
    var retryAtMicroseconds: UInt64?
    var counters = HazardFeedCounters()
    var seen: [FeedSighting] = []
    /// Reports appended and not yet durable (or refused).
    var inFlight = Set<UInt64>()
    /// What was last logged of each road user and zone: which repeats are worth the card.
    var memory: FeedMemory
    // VRU mode.
    var ownIDs: [[UInt8]] = []
    var ownIDSinceMicroseconds: UInt64 = 0
    var messageCount: UInt8 = 0
    var vruActive = false
    static let ownIDRotationMicroseconds: UInt64 = 300_000_000

    init(context: any NodeContext, settings: HazardFeedSettings, dataDirectory: String, configuredSite: HazardSite?) {
        self.context = context
        self.settings = settings
        self.dataDirectory = dataDirectory
        self.configuredSite = configuredSite
        backoff = Backoff(base: settings.retryBaseMicroseconds, max: settings.retryMaxMicroseconds)
        memory = FeedMemory(roadUserIntervalMicroseconds: settings.roadUserLogIntervalMicroseconds,
                            zoneIntervalMicroseconds: settings.zoneLogIntervalMicroseconds)
    }

    var now: UInt64 { context.scheduler.now / 1_000 }

    func start() throws(NodeError) {
        guard settings.enabled else { return }
        context.scheduler.register(Self.tickTimer) { [unowned self] in tick() }
        context.scheduler.register(Self.retryTimer) { [unowned self] in retryDue() }
        // The site as configured now (the log's copy is for replaying relevance; the broker is
        // this run's choice).
        order = settings.brokersByDistance(from: configuredSite ?? context.projections.hazards.site)
        context.logger.info("hazard feed: brokers nearest first", metadata: ["brokers": "\(order.map(\.name).joined(separator: ", "))"])
        dial()
        context.scheduler.schedule(Self.tickTimer, afterNanoseconds: 1_000_000_000)
    }

    func stop() {
        guard settings.enabled else { return }
        if connected, let client {
            client.disconnect()
            try? client.writeReady() // DISCONNECT, if the socket takes it now; never waited for
        }
        closeConnection()
        phase = .off
        context.scheduler.cancel(Self.tickTimer)
        context.scheduler.cancel(Self.retryTimer)
    }

    func applied(_ event: Event) { inFlight.remove(event.sequence) }
    /// The log refused a report (shed under load, or a full card): counted as shed, not logged.
    func refused(_ event: Event) {
        guard inFlight.remove(event.sequence) != nil else { return }
        counters.logged &-= min(counters.logged, 1)
        counters.shed += 1
    }

    var status: HazardFeedStatus? {
        guard settings.enabled else { return nil }
        let broker = order.indices.contains(brokerIndex) ? order[brokerIndex] : nil
        let state: String
        switch phase {
        case .off: state = "off"
        case .dialing: state = "connecting"
        case .linked: state = connected ? "connected" : "connecting"
        case .waiting:
            let wait = (retryAtMicroseconds ?? now) > now ? (retryAtMicroseconds ?? now) - now : 0
            state = "retrying in \(max(1, (wait + 999_999) / 1_000_000)) s"
        }
        return HazardFeedStatus(connected: connected, subscribed: connected && subscriptions.isEmpty,
                                broker: broker.map { "\($0.name) (\($0.host):\($0.port))" }, state: state,
                                lastError: lastError, vruActive: vruActive, counters: counters, seen: seen)
    }

    // MARK: Connecting

    func path(_ file: String) -> String {
        file.hasPrefix("/") ? file : dataDirectory + "/" + file
    }

    func dial() {
        guard !context.stopping, !order.isEmpty else { return }
        // Dialing from here on: a client that cannot be made (a certificate not installed yet)
        // is a failed attempt like any other, retried with back-off and shown in status.
        phase = .dialing
        let broker = order[brokerIndex]
        let id = settings.clientID ?? "vigil-" + String(context.nodeID, radix: 16)
        var options = MQTTClient.Options(clientID: String(id.prefix(23)), host: broker.host, port: broker.port)
        if settings.tls {
            options.caFile = path(settings.caFile)
            options.certificateFile = path(settings.certificateFile)
            options.keyFile = path(settings.keyFile)
        }
        let client: MQTTClient
        do {
            client = try MQTTClient(options: options)
        } catch {
            attemptFailed("\(error)")
            return
        }
        client.onConnect = { [unowned self] rc in connackArrived(rc) }
        // Only a reason of last resort: the call that ended the connection throws libmosquitto's
        // code with errno (reset, a TLS error, end of file), which says more than this.
        client.onDisconnect = { [unowned self] rc in
            if rc != 0 { disconnectReason = disconnectReason ?? "the connection ended (\(MQTTError.describe(code: rc)))" }
        }
        client.onMessage = { [unowned self] topic, payload in received(topic: topic, payload: payload) }
        client.onSubscribe = { [unowned self] mid, granted in subscribed(mid, granted) }
        generation += 1
        let dialing = generation
        self.client = client
        phase = .dialing
        let back = context.loopBound(self)
        // The connect resolves the broker's name (DNS can take seconds): never on the loop. The
        // loop does not touch the client until it is handed back.
        Thread.detachNewThread {
            var failure: MQTTError?
            do throws(MQTTError) { try client.connect() } catch { failure = error }
            let result = failure
            back.send { feed in feed.dialed(dialing, failure: result) }
        }
    }

    func dialed(_ dialing: Int, failure: MQTTError?) {
        guard dialing == generation, phase == .dialing, let client else { return }
        if let failure {
            attemptFailed(failure.description)
            return
        }
        guard let fd = client.socket else {
            attemptFailed("no socket after connecting")
            return
        }
        socket = fd
        watchingOutput = client.wantsWrite
        guard context.watch(fd, "the hazard feed's MQTT socket", events: Epoll.readable | (watchingOutput ? Epoll.writable : 0),
                              handler: { [unowned self] events in socketReady(events) }) else {
            attemptFailed("the socket could not be watched")
            return
        }
        phase = .linked
        linkedAtMicroseconds = now
    }

    func connackArrived(_ rc: Int32) {
        guard rc == 0 else {
            failureInCallback = "the broker refused the connection (CONNACK \(rc))"
            return
        }
        connected = true
        connectedSinceMicroseconds = now
        counters.connects += 1
        let broker = order[brokerIndex]
        subscriptions = [:]
        for channel in settings.channels {
            for topic in FeedTopic.subscriptions(channel: channel) {
                do {
                    if let mid = try client?.subscribe(topic) { subscriptions[mid] = topic }
                } catch { failureInCallback = "\(error)" }
            }
        }
        context.logger.info("hazard feed: connected", metadata: ["broker": "\(broker.name)", "host": "\(broker.host):\(broker.port)"])
        lastError = nil
    }

    /// A SUBACK: a topic refused (granted 128) is said in status and counted; the feed goes on
    /// with the others.
    func subscribed(_ mid: Int32, _ granted: [Int32]) {
        guard let topic = subscriptions.removeValue(forKey: mid) else { return }
        if granted.contains(where: { $0 >= 128 }) {
            counters.subscriptionsRefused += 1
            lastError = "the broker refused the subscription to \(topic)"
            context.logger.warning("hazard feed: a subscription was refused", metadata: ["topic": "\(topic)"])
        }
    }

    func socketReady(_ events: UInt32) {
        guard let client else { return }
        if events & Epoll.readable != 0 { outputPausedForHandshake = false }
        do {
            if events & Epoll.writable != 0 {
                // libmosquitto 2.0.11 moves a TLS handshake that is waiting to write only in
                // its read (`loop_write` returns at once while the handshake is pending: fixed
                // upstream in 2.0.15/16): read first, or a slow broker's handshake never leaves
                // and the writable socket spins the loop. With nothing to read it is a no-op.
                try client.readReady()
                try client.writeReady()
                // Still "wanting to write" before the CONNACK over TLS: the handshake waits for
                // the broker (2.0.11 keeps `want_write` set through it). Watch for output again
                // once input came, or a writable socket would spin the loop until then.
                if settings.tls, !connected, client.wantsWrite { outputPausedForHandshake = true }
            }
            if events & (Epoll.readable | Epoll.hangup) != 0 { try client.readReady() }
        } catch {
            connectionLost(failureInCallback ?? error.description)
            return
        }
        // An error or hang-up libmosquitto's read did not see (a refused connect before TLS
        // began): level-triggered, it would wake the loop for ever.
        if events & Epoll.hangup != 0 {
            connectionLost(failureInCallback ?? disconnectReason ?? "the connection was refused or dropped")
            return
        }
        afterCall()
    }

    /// After every libmosquitto call: act on what its callbacks found, and watch for output
    /// only while bytes wait.
    func afterCall() {
        if let failure = failureInCallback ?? disconnectReason {
            connectionLost(failure)
            return
        }
        guard let client, let socket else { return }
        let want = client.wantsWrite && !outputPausedForHandshake
        if want != watchingOutput {
            watchingOutput = want
            context.changeWatch(socket, "the hazard feed's MQTT socket", events: Epoll.readable | (want ? Epoll.writable : 0))
        }
    }

    func connectionLost(_ reason: String) {
        if connected {
            counters.disconnects += 1
            context.logger.warning("hazard feed: connection lost", metadata: ["broker": "\(order[brokerIndex].name)", "reason": "\(reason)"])
            // A link that held a minute was a success: the next failure waits from the start.
            if now &- connectedSinceMicroseconds >= 60_000_000 {
                backoff.reset()
                failuresHere = 0
            }
        }
        attemptFailed(reason)
    }

    func closeConnection() {
        if let socket { context.unwatch(socket, "the hazard feed's MQTT socket") }
        socket = nil
        // Dropping the client closes its socket (mosquitto_destroy); a dial in flight keeps its
        // own reference and its result is ignored.
        client = nil
        connected = false
        watchingOutput = false
        outputPausedForHandshake = false
        failureInCallback = nil
        disconnectReason = nil
        generation += 1
        vruActive = false
    }

    func attemptFailed(_ reason: String) {
        let wasConnected = connected
        closeConnection()
        guard !context.stopping, phase != .off else { return }
        if !wasConnected { counters.connectFailures += 1 }
        let first = backoff.isFresh
        lastError = reason
        failuresHere += 1
        if failuresHere >= settings.failuresBeforeFailover, order.count > 1 {
            let from = order[brokerIndex].name
            brokerIndex = (brokerIndex + 1) % order.count
            failuresHere = 0
            counters.failovers += 1
            context.logger.warning("hazard feed: failing over", metadata: ["from": "\(from)", "to": "\(order[brokerIndex].name)"])
        }
        // ±25% so that every box of a region does not come back to a restarted broker at once.
        var generator = SystemRandomNumberGenerator()
        let delay = UInt64(Double(backoff.next()) * Double.random(in: 0.75...1.25, using: &generator))
        if first {
            context.logger.warning("hazard feed: cannot reach the broker; retrying with back-off",
                                metadata: ["reason": "\(reason)", "broker": "\(order[brokerIndex].name)"])
        }
        phase = .waiting
        retryAtMicroseconds = now &+ delay
        context.scheduler.schedule(Self.retryTimer, afterNanoseconds: delay &* 1_000)
    }

    func retryDue() {
        guard phase == .waiting else { return }
        dial()
    }

    // MARK: Once a second

    func tick() {
        defer { context.scheduler.schedule(Self.tickTimer, afterNanoseconds: 1_000_000_000) }
        guard phase != .off else { return }
        if phase == .linked, let client {
            if !connected, now &- linkedAtMicroseconds >= Self.connackTimeoutMicroseconds {
                attemptFailed("no answer from the broker in \(Self.connackTimeoutMicroseconds / 1_000_000) s")
                return
            }
            do {
                try client.housekeeping()
            } catch {
                connectionLost(failureInCallback ?? error.description)
                return
            }
            afterCall()
        }
        publishOwnPSM()
        memory.forget(atMicroseconds: now)
    }

    // MARK: VRU mode

    /// The people at the box: the last minute's distinct advertisers, when that minute is recent.
    var peopleAtTheBox: UInt32 {
        guard let o = context.projections.health.occupancy else { return 0 }
        let wall = context.clock.nowMicroseconds()
        return wall &- o.minuteStartMicroseconds <= 180_000_000 ? o.advertisers : 0
    }

    func publishOwnPSM() {
        let people = peopleAtTheBox
        guard settings.vru, connected, let client, let site = context.projections.hazards.site, people > 0 else {
            vruActive = false
            return
        }
        vruActive = true
        if ownIDs.isEmpty || now &- ownIDSinceMicroseconds >= Self.ownIDRotationMicroseconds {
            var generator = SystemRandomNumberGenerator()
            ownIDs.insert((0 ..< 4).map { _ in UInt8.random(in: 0...255, using: &generator) }, at: 0)
            if ownIDs.count > 2 { ownIDs.removeLast() }
            ownIDSinceMicroseconds = now
        }
        let wall = context.clock.nowMicroseconds()
        // J2735's cluster sizes: small 2-5 people, medium 6-10, large over 10.
        let cluster: PersonalSafetyMessage.ClusterSize = people > 10 ? .large : people > 5 ? .medium : .small
        let psm = PersonalSafetyMessage(userType: .pedestrian, secondMark: UInt16(wall / 1_000 % 60_000), messageCount: messageCount,
                                        temporaryID: ownIDs[0], latitude: Int32((site.latitude * 1e7).rounded()),
                                        longitude: Int32((site.longitude * 1e7).rounded()),
                                        speed: 0, heading: PersonalSafetyMessage.headingUnavailable, clusterSize: cluster)
        messageCount = (messageCount + 1) % 128
        let frame = MessageFrame(messageID: MessageFrame.personalSafetyMessage, value: psm.encode()).encode()
        let topic = FeedTopic.publication(region: settings.publishRegion, cell: settings.publishCell, channel: "Public",
                                          id: Hex.encode(ownIDs[0]).uppercased())
        do {
            try client.publish(topic, payload: frame)
            counters.sent += 1
        } catch {
            counters.sendFailures += 1
        }
        afterCall()
    }

}
