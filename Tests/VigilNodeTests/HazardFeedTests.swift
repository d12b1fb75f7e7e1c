import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilHex
import VigilJ2735
import VigilMQTT
import VigilSystem
import VigilTestSupport
@testable import VigilNode

/// Issue 15: the regional hazard feed against a real Mosquitto broker on loopback with mutual
/// TLS. PSMs and TIMs (raw and in GeoRoutedMsg) published by `mosquitto_pub` become hazards;
/// broken ones are counted by type; VRU mode's PSMs reach `mosquitto_sub`; a restarted broker is
/// reconnected; an unreachable nearest broker fails over to the next; a flood never holds an SOS.
///
/// The node runs on a `ManualClock` (its timers: keep-alive, VRU, retries); the broker and the
/// sockets are real, so the tests wait for them with `untilChildProcess` (bounded, never timing).
@Suite(.serialized) struct HazardFeedTests {
    /// 2025-03-10 14:30 UTC: inside the TIM vectors' road works (14:00, two hours).
    static let wall: UInt64 = 1_741_617_000_000_000
    static let phoenix = (33.4351, -112.0108)

    static func vector(_ file: String, _ index: Int, key: String = "frame") throws -> [UInt8] {
        let url = URL(fileURLWithPath: testsFile("VigilJ2735Tests/Vectors/\(file).json"))
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        let vectors = json?["vectors"] as? [[String: Any]]
        guard let hex = vectors?[index][key] as? String, let bytes = Hex.decode(hex) else { throw BrokerError("no vector \(file) \(index)") }
        return bytes
    }

    static func configuration(_ dir: TemporaryDirectory, brokers: [HazardFeedSettings.Broker], certificates: String,
                              advertisers: Int = 0) -> NodeConfiguration {
        var config = testConfiguration(dir, advertisers: advertisers)
        config.projections.hazardSite = HazardSite(latitude: phoenix.0, longitude: phoenix.1)
        config.hazardFeed.brokers = brokers
        config.hazardFeed.caFile = certificates + "/ca.pem"
        config.hazardFeed.certificateFile = certificates + "/box.crt"
        config.hazardFeed.keyFile = certificates + "/box.key"
        config.hazardFeed.retryBaseMicroseconds = 1_000_000
        config.hazardFeed.retryMaxMicroseconds = 2_000_000
        return config
    }

    static func status(_ node: NodeThread) async -> HazardFeedStatus? { await onLoop(node) { $0.hazardFeed.status } }

    /// Advances the manual clock a second at a time until `condition` holds (retries and
    /// keep-alive run on it), giving the real broker real time between steps.
    static func advanceUntil(_ clock: ManualClock, _ node: NodeThread, until condition: @escaping @Sendable (Node) -> Bool, seconds: Int = 30) async -> Bool {
        for _ in 0 ..< seconds {
            if await untilChildProcess(node, seconds: 1, condition) { return true }
            clock.advance(byMicroseconds: 1_000_000)
        }
        return await onLoop(node, condition)
    }

    @Test func psmsAndTIMsOverTLSBecomeHazardsAndTheBoxSendsItsOwn() async throws {
        let dir = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: dir.path + "/broker", port: freeLoopbackPort())
        try broker.start()
        defer { broker.stop() }
        let local = HazardFeedSettings.Broker(name: "phoenix", host: "127.0.0.1", port: broker.port, latitude: Self.phoenix.0, longitude: Self.phoenix.1)
        let config = Self.configuration(dir, brokers: [local], certificates: broker.directory, advertisers: 12)
        let clock = ManualClock(startMicroseconds: Self.wall)
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)

        var subscribed = await untilChildProcess(running) { $0.hazardFeed.status?.subscribed == true }
        if !subscribed, let lost = await Self.status(running), lost.counters.disconnects > 0 {
            // In the full suite (never alone) the box has read an end of file right after the
            // CONNACK while the broker still held the connection, once in a few runs; the cause is
            // not found (docs/hazards.md "Known"). A box reconnects then, after its back-off,
            // which runs on the manual clock: let it, and say what the first connection ended with.
            print("hazard feed: the first connection ended (\(lost.lastError ?? "no reason")); reconnecting")
            subscribed = await Self.advanceUntil(clock, running, until: { $0.hazardFeed.status?.subscribed == true })
        }
        let feedStatus = await Self.status(running)
        let connectsBefore = feedStatus?.counters.connects ?? 0
        #expect(subscribed, "connected and subscribed: \(String(describing: feedStatus)); broker: \(broker.logText)")
        #expect(feedStatus?.broker == "phoenix (127.0.0.1:\(broker.port))")
        // The connection is closed in programs the process starts (a notifier, here another
        // test's broker): one holding it open would keep the box "connected" at the broker.
        #expect(await onLoop(running) { $0.hazardFeed.client?.socketClosesOnExec == true })

        // A pedestrian's PSM, raw; a road work TIM in a GeoRoutedMsg; the queue TIM raw.
        try broker.publish(topic: "vzimp/1/GeoRelevance/az/12/Public/j2735/PSM/0A1B2C3D", bytes: try Self.vector("psm", 0))
        try broker.publish(topic: "vzimp/1/GeoRelevance/az/12/Public/j2735_gr/TIM/77", bytes: try Self.vector("georouted", 1, key: "payload"))
        try broker.publish(topic: "vzimp/1/GeoRelevance/az/12/Public/j2735/TIM/78", bytes: try Self.vector("tim", 2))
        #expect(await untilChildProcess(running) { $0.projections.hazards.hazards.count == 3 }, "three hazards")
        let hazards = await onLoop(running) { $0.projections.hazards.active }
        let walker = try #require(hazards.first { $0.hazardKind == .pedestrian })
        #expect(walker.id == "0A1B2C3D" && walker.source == HazardSource.mqtt.rawValue && walker.messageType == "PSM")
        #expect(walker.latitudeE7 == 334_351_000 && walker.headingCentidegrees == 9_000 && walker.speedCentimetersPerSecond == 140)
        let zone = try #require(hazards.first { $0.hazardKind == .workZone })
        // 2025-03-10 14:00 UTC and two hours.
        #expect(zone.expiresMicroseconds == 1_741_615_200_000_000 + 7_200_000_000 && zone.messageType == "TIM")
        #expect(hazards.contains { $0.hazardKind == .trafficJam })
        #expect(await onLoop(running) { $0.projections.hazards.warning?.kind == HazardKind.workZone.rawValue }, "a zone at the site warns")

        // Broken ones are counted by the type they claim, never a crash.
        try broker.publish(topic: "vzimp/1/GeoRelevance/az/12/Public/j2735/PSM/1", bytes: [0x00, 0x20, 0x05, 0x01, 0x02])
        try broker.publish(topic: "vzimp/1/GeoRelevance/az/12/Public/j2735/TIM/2", bytes: Array(try Self.vector("tim", 0).prefix(12)))
        try broker.publish(topic: "vzimp/1/GeoRelevance/az/12/Public/j2735_gr/PSM/3", bytes: [0xFF, 0xFF, 0xFF])
        #expect(await untilChildProcess(running) { ($0.hazardFeed.status?.counters.received ?? 0) >= 6 })
        let counters = try #require(await Self.status(running)?.counters)
        #expect(counters.receivedPSM == 1 && counters.receivedTIM == 2)
        #expect(counters.undecodablePSM == 2 && counters.undecodableTIM == 1, "\(counters)")
        #expect(counters.logged == 3)
        let seen = try #require(await Self.status(running)?.seen)
        #expect(seen.first?.type == "PSM (undecodable)" && seen.contains { $0.type == "PSM" && $0.id == "0A1B2C3D" })

        // VRU mode: people at the box (the simulated radio's 12 advertisers, sampled each minute)
        // and a site: a PSM for a large pedestrian cluster there, once a second. The first
        // minute's sample needs a minute of the manual clock (libmosquitto's keep-alive runs on
        // real time, which this does not touch).
        await advance(clock, running, byMicroseconds: 70_000_000, step: 1_000_000)
        #expect(await untilChildProcess(running) { ($0.projections.health.occupancy?.advertisers ?? 0) > 10 })
        let heardSoFar = LockedValue<[(topic: String, hex: String)]?>(nil)
        Thread.detachNewThread {
            let heard = broker.receive(topic: "vzimp/1/GeoRelevance/+/+/Public/j2735/PSM/+", count: 2, seconds: 30)
            heardSoFar.withLock { $0 = heard }
        }
        // A second of the box's time per step, until mosquitto_sub (subscribed at some moment
        // of real time) has heard two.
        for _ in 0 ..< 60 where heardSoFar.withLock({ $0 == nil }) {
            clock.advance(byMicroseconds: 1_000_000)
            _ = await untilChildProcess(running, seconds: 0.5) { _ in heardSoFar.withLock { $0 != nil } }
        }
        _ = await untilChildProcess(running, seconds: 30) { _ in heardSoFar.withLock { $0 != nil } }
        let heard = heardSoFar.withLock { $0 } ?? []
        #expect(heard.count == 2, "mosquitto_sub heard the box's PSMs")
        for (topic, hex) in heard {
            #expect(topic.hasPrefix("vzimp/1/GeoRelevance/vigil/0/Public/j2735/PSM/"))
            let frame = try MessageFrame.decode(Hex.decode(hex) ?? [])
            let psm = try PersonalSafetyMessage.decode(frame.value)
            #expect(psm.userType == .pedestrian && psm.clusterSize == .large && psm.speed == 0)
            #expect(psm.latitude == 334_351_000 && psm.longitude == -1_120_108_000)
            #expect(topic.hasSuffix(Hex.encode(psm.temporaryID).uppercased()))
        }
        #expect(await Self.status(running)?.vruActive == true)
        // Its own PSMs come back on the public topic and are not taken for a hazard.
        #expect((await Self.status(running)?.counters.ignored ?? 0) >= 1, "the box's own PSMs are ignored")
        let own = Set(heard.map { $0.topic.split(separator: "/").last.map(String.init) ?? "" })
        #expect(await onLoop(running) { n in n.projections.hazards.hazards.values.allSatisfy { !own.contains($0.id) } }, "not a hazard of its own")

        // The broker restarts: the feed notices, retries with back-off, and is back.
        broker.stop()
        #expect(await untilChildProcess(running) { $0.hazardFeed.status?.connected == false })
        try broker.start()
        #expect(await Self.advanceUntil(clock, running, until: { $0.hazardFeed.status?.subscribed == true }))
        #expect(await Self.status(running)?.counters.connects == connectsBefore + 1, "one connect more after the restart")
        try broker.publish(topic: "vzimp/1/GeoRelevance/az/12/Public/j2735/PSM/CAFEF00D", bytes: try Self.vector("psm", 5))
        #expect(await untilChildProcess(running) { ($0.hazardFeed.status?.counters.receivedPSM ?? 0) >= 2 }, "subscribed again after the restart")

        #expect(await onLoop(running) { $0.liveStatus().hazardFeed?.connected == true }, "vigil status shows the feed")
        // The page's snapshot carries it; the public view keeps the counts, not the ids seen.
        let snapshot = await onLoop(running) { NodeSnapshot(state: $0.projections, decisions: [:], live: $0.liveStatus(), timeMicroseconds: Self.wall) }
        #expect((snapshot.roadHazards.feed?.counters.receivedPSM ?? 0) >= 2 && snapshot.roadHazards.feed?.seen.isEmpty == false)
        #expect(snapshot.forPublic().roadHazards.feed?.seen.isEmpty == true && (snapshot.forPublic().roadHazards.feed?.counters.receivedPSM ?? 0) >= 2)
        try await stop(running)
    }

    @Test func theFeedIsReadFromTheConfiguration() throws {
        let config = try NodeConfiguration.load(text: """
            site:
              location: "33.4351,-112.0108"
            hazards:
              feed:
                brokers:
                  - "detroit mqtt-det.example.org:8883 detroit"
                  - "phoenix mqtt-phx.example.org:8883 33.4351,-112.0108"
                channels: [Public, "1234"]
                vru: false
                max_in_flight: 32
            """, file: "test.yaml")
        let feed = config.hazardFeed
        #expect(feed.enabled && feed.tls && feed.channels == ["Public", "1234"] && !feed.vru && feed.maximumInFlight == 32)
        #expect(feed.brokers.first?.latitude == 42.2129 && feed.brokers.first?.host == "mqtt-det.example.org" && feed.brokers.first?.port == 8_883)
        #expect(feed.brokersByDistance(from: config.projections.hazardSite).map(\.name) == ["phoenix", "detroit"])
        #expect(throws: (any Error).self) {
            _ = try NodeConfiguration.load(text: "hazards:\n  feed:\n    brokers: [\"nowhere host 1,2\"]\n", file: "bad.yaml")
        }
        #expect(throws: (any Error).self) {
            _ = try NodeConfiguration.load(text: "hazards:\n  feed:\n    channels: [\"a/b\"]\n", file: "bad.yaml")
        }
        #expect(!NodeConfiguration().hazardFeed.enabled, "off without brokers")
    }

    /// Certificates not installed yet: every attempt fails and says why, and is retried, so the
    /// feed comes up by itself once they are.
    @Test func missingCertificatesAreRetriedAndShown() async throws {
        let dir = TemporaryDirectory()
        let local = HazardFeedSettings.Broker(name: "phoenix", host: "127.0.0.1", port: freeLoopbackPort(), latitude: Self.phoenix.0, longitude: Self.phoenix.1)
        let config = Self.configuration(dir, brokers: [local], certificates: dir.path + "/not-yet")
        let clock = ManualClock(startMicroseconds: Self.wall)
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        #expect(await Self.advanceUntil(clock, running, until: { ($0.hazardFeed.status?.counters.connectFailures ?? 0) >= 2 }))
        let status = try #require(await Self.status(running))
        #expect(!status.connected && status.lastError?.contains("mosquitto_tls_set") == true, "\(status)")
        #expect(status.state.hasPrefix("retrying") || status.state == "connecting")
        try await stop(running)
    }

    @Test func anUnreachableNearestBrokerFailsOverToTheNext() async throws {
        let dir = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: dir.path + "/broker", port: freeLoopbackPort())
        try broker.start()
        defer { broker.stop() }
        // Phoenix is nearest the site but nothing listens there; Detroit's broker runs.
        let dead = HazardFeedSettings.Broker(name: "phoenix", host: "127.0.0.1", port: freeLoopbackPort(), latitude: 33.4351, longitude: -112.0108)
        let detroit = HazardFeedSettings.Broker(name: "detroit", host: "127.0.0.1", port: broker.port, latitude: 42.2129, longitude: -83.3521)
        let config = Self.configuration(dir, brokers: [detroit, dead], certificates: broker.directory)
        #expect(config.hazardFeed.brokersByDistance(from: config.projections.hazardSite).map(\.name) == ["phoenix", "detroit"])
        let clock = ManualClock(startMicroseconds: Self.wall)
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        #expect(await Self.advanceUntil(clock, running, until: { $0.hazardFeed.status?.connected == true }))
        let status = try #require(await Self.status(running))
        #expect(status.broker?.hasPrefix("detroit") == true && status.counters.failovers == 1)
        #expect(status.counters.connectFailures == 2, "two tries on the nearest before failing over")
        try await stop(running)
    }

    /// 10,000 PSMs at 10,000 a second, an SOS raised in the middle: the SOS is
    /// durable while the flood is still coming, the feed never has more than its bound on the
    /// way to the card, and every PSM is accounted for (logged, coalesced or shed).
    @Test func aFloodOfPSMsNeverHoldsAnSOS() async throws {
        let dir = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: dir.path + "/broker", port: freeLoopbackPort())
        try broker.start()
        defer { broker.stop() }
        let local = HazardFeedSettings.Broker(name: "phoenix", host: "127.0.0.1", port: broker.port, latitude: Self.phoenix.0, longitude: Self.phoenix.1)
        var config = Self.configuration(dir, brokers: [local], certificates: broker.directory)
        config.hazardFeed.maximumInFlight = 64
        // A shelter key, so an SOS can go on the air.
        try (NodeSecrets.hex([UInt8](repeating: 7, count: 32)) + "\n").write(toFile: dir.path + "/shelter.key", atomically: true, encoding: .utf8)
        let clock = ManualClock(startMicroseconds: Self.wall)
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        #expect(await untilChildProcess(running) { $0.hazardFeed.status?.subscribed == true })

        // 10,000 a second for a second, as the issue's flood.
        let total = 10_000
        let flood = Task {
            await offPool { () -> String? in
                do {
                    try FeedPublisher.flood(broker: broker, count: total, distinctIDs: 2_000, perSecond: 10_000)
                    return nil
                } catch { return "\(error)" }
            }
        }
        #expect(await untilChildProcess(running) { ($0.hazardFeed.status?.counters.receivedPSM ?? 0) >= 1_000 }, "the flood arrives")
        let reply = await running.perform(.raiseAlert(AlertRequest(kind: "sos", lifetimeMicroseconds: 3_600_000_000, text: "flood test")))
        let sos = try #require(reply?.sequence, "the SOS is durable: \(String(describing: reply))")
        let receivedAtSOS = await Self.status(running)?.counters.receivedPSM ?? 0
        #expect(await flood.value == nil)
        #expect(await untilChildProcess(running, seconds: 60) { ($0.hazardFeed.status?.counters.receivedPSM ?? 0) == UInt64(total) })
        await settled(running)
        let counters = try #require(await Self.status(running)?.counters)
        #expect(receivedAtSOS < UInt64(total), "the SOS became durable while the flood was still arriving")
        #expect(counters.maximumInFlight <= 64)
        #expect(counters.logged + counters.coalesced + counters.shed + counters.ignored == UInt64(total), "\(counters)")
        #expect(counters.logged > 0)
        #expect(await onLoop(running) { $0.projections.appliedThrough >= sos })
        try await stop(running)
    }
}

/// Which of the feed's reports reach the card, on explicit times (no broker, no clock).
@Suite struct FeedMemoryTests {
    @Test func aRoadUserIsLoggedOnceASecondAndAtOnceWhenItBecomesRelevant() {
        var memory = FeedMemory(roadUserIntervalMicroseconds: 1_000_000, zoneIntervalMicroseconds: 300_000_000)
        #expect(memory.judge("p", roadUser: true, relevant: false, signature: "", atMicroseconds: 0) == .worthLogging)
        memory.logged("p", roadUser: true, relevant: false, signature: "", atMicroseconds: 0)
        #expect(memory.judge("p", roadUser: true, relevant: false, signature: "", atMicroseconds: 999_999) == .repeatOfLogged)
        #expect(memory.judge("p", roadUser: true, relevant: true, signature: "", atMicroseconds: 500_000) == .worthLogging, "a warning is never late")
        #expect(memory.judge("p", roadUser: true, relevant: false, signature: "", atMicroseconds: 1_000_000) == .worthLogging)
        // Remembered through its lifetime in the projection, then forgotten.
        memory.forget(atMicroseconds: 9_999_999)
        #expect(memory.roadUsers["p"] != nil)
        memory.forget(atMicroseconds: 10_000_000)
        #expect(memory.roadUsers.isEmpty)
    }

    @Test func aZoneIsLoggedWhenItChangesOrEveryInterval() {
        var memory = FeedMemory(roadUserIntervalMicroseconds: 1_000_000, zoneIntervalMicroseconds: 300_000_000)
        memory.logged("z", roadUser: false, relevant: false, signature: "a", atMicroseconds: 0)
        #expect(memory.judge("z", roadUser: false, relevant: false, signature: "a", atMicroseconds: 299_999_999) == .repeatOfLogged)
        #expect(memory.judge("z", roadUser: false, relevant: false, signature: "b", atMicroseconds: 1) == .worthLogging)
        #expect(memory.judge("z", roadUser: false, relevant: false, signature: "a", atMicroseconds: 300_000_000) == .worthLogging)
    }

    @Test func aFloodOfRoadUsersNeverCrowdsOutZones() {
        var memory = FeedMemory(roadUserIntervalMicroseconds: 1_000_000, zoneIntervalMicroseconds: 300_000_000)
        for i in 0 ..< FeedMemory.roadUserLimit { memory.logged("p\(i)", roadUser: true, relevant: false, signature: "", atMicroseconds: 0) }
        #expect(memory.judge("new", roadUser: true, relevant: false, signature: "", atMicroseconds: 0) == .full)
        #expect(memory.judge("p1", roadUser: true, relevant: false, signature: "", atMicroseconds: 2_000_000) == .worthLogging, "a known one still is")
        #expect(memory.judge("z", roadUser: false, relevant: false, signature: "", atMicroseconds: 0) == .worthLogging)
    }
}
