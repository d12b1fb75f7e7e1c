import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilHub
import VigilHubProtocol
import VigilTestSupport
@testable import VigilNode

/// The nearest hub (issue 11, item 6), with DriveAZ's five regional servers as the test data: a
/// box uses the nearest entry point of its network that answers, fails over to the next nearest
/// when it stops answering, and goes back once it answers again.
@Suite(.serialized) struct NearestHubTests {
    /// DriveAZ's MQTT servers' reference points (../shared/seeds, the DriveAZ description).
    static let regions: [(name: String, location: String)] = [
        ("phoenix", "33.4351,-112.0108"),
        ("atlanta", "33.6323,-84.4348"),
        ("detroit", "42.2129,-83.3521"),
        ("new-york", "40.6379,-73.7778"),
        ("los-angeles", "33.9420,-118.4037"),
    ]

    @Test(arguments: [
        ("Tucson", "32.2226,-110.9747", ["phoenix", "los-angeles", "atlanta", "detroit", "new-york"]),
        ("Boston", "42.3601,-71.0589", ["new-york", "detroit", "atlanta", "phoenix", "los-angeles"]),
        ("Cleveland", "41.4993,-81.6944", ["detroit", "new-york", "atlanta", "phoenix", "los-angeles"]),
        ("San Diego", "32.7157,-117.1611", ["los-angeles", "phoenix", "atlanta", "detroit", "new-york"]),
    ])
    func theNearestOfDriveAZsFiveRegionsComesFirst(place: String, site: String, expected: [String]) {
        let order = HubRoute.order(Self.regions.map { GeoPoint(text: $0.location) }, from: GeoPoint(text: site))
        #expect(order.map { Self.regions[$0].name } == expected, "from \(place)")
    }

    @Test func hubsWithoutALocationOrABoxWithoutOneKeepTheOrderTheyWereJoinedIn() {
        let hubs = [GeoPoint(text: "40.6379,-73.7778"), nil, GeoPoint(text: "33.4351,-112.0108")]
        #expect(HubRoute.order(hubs, from: GeoPoint(text: "32.2226,-110.9747")) == [2, 0, 1])
        #expect(HubRoute.order(hubs, from: nil) == [0, 1, 2])
        #expect(GeoPoint(text: "91,0") == nil && GeoPoint(text: "12") == nil && GeoPoint(text: "1,2,3") == nil)
        let phoenix = GeoPoint(latitude: 33.4351, longitude: -112.0108)!
        let losAngeles = GeoPoint(latitude: 33.9420, longitude: -118.4037)!
        #expect(abs(phoenix.kilometres(to: losAngeles) - 592) < 3, "Phoenix to LAX is about 592 km")
    }

    @Test func aBoxInTucsonUsesPhoenixFailsOverToLosAngelesAndComesBack() async throws {
        // Five hub processes on one database: Phoenix runs the cluster, the others use it.
        var hubs: [String: HubHarness] = [:]
        let phoenix = HubHarness("hub-phoenix")
        try await phoenix.start()
        hubs["phoenix"] = phoenix
        let cluster = try LocalCluster(dataDirectory: phoenix.hubData, logger: quietLogger)
        for region in Self.regions.dropFirst() {
            let hub = HubHarness("hub-\(region.name)")
            hub.databaseURL = "postgres://vigil@localhost/vigil?host=\(cluster.socketDirectory)"
            try await hub.start()
            hubs[region.name] = hub
        }
        func hub(_ name: String) throws -> HubHarness { try #require(hubs[name]) }

        // The box joins through Atlanta (the token's hub), then lists the other four.
        let box = Box("tucson")
        box.site = ("Tucson shelter", "32.2226,-110.9747")
        let location = Dictionary(uniqueKeysWithValues: Self.regions.map { ($0.name, $0.location) })
        try await box.join(try hub("atlanta"), as: "tucson", location: location["atlanta"])
        for region in Self.regions where region.name != "atlanta" {
            let h = try hub(region.name)
            _ = try await HubJoin.addEntryPoint(url: h.url, fingerprint: h.fingerprint, location: region.location,
                                                dataDirectory: box.directory.path)
        }
        // Another box, in New York, to show the feed follows the Tucson box across a failover.
        let other = Box("new-york")
        try await other.join(try hub("new-york"), as: "new-york", location: location["new-york"])
        try await box.start()
        try await other.start()

        try await box.waitUntilSynced()
        #expect(await box.read { $0.projections.hub.hub } == (try hub("phoenix")).fingerprint, "Phoenix (170 km) acknowledged, not Atlanta")

        // Phoenix dies (kill -9; the database lives on): the next events go to Los Angeles.
        await (try hub("phoenix")).kill()
        var checkIn = CheckIn()
        checkIn.resident = "R-1"
        checkIn.source = .checkInButton
        await box.append(.checkIn(checkIn))
        let losAngeles = try hub("los-angeles").fingerprint
        try await box.until("Los Angeles acknowledged the box's new events") { n in
            n.projections.hub.hub == losAngeles && n.projections.hub.syncedThrough >= Box.lastShareable(n)
        }
        // And the feed still reaches it: an SOS at the New York box arrives through Los Angeles.
        let otherNode = try #require(await other.read { $0.nodeID })
        var sos = Alert()
        sos.id = AlertID(origin: otherNode, counter: 1)
        sos.kind = .sos
        sos.severity = .critical
        await other.append(.alertRaised(sos))
        try await box.until("the New York box's SOS reached Tucson through Los Angeles") { n in
            n.projections.alerts.active.contains { $0.origin == otherNode && $0.counter == 1 }
        }

        // Phoenix answers again; after the fail-back time the box goes back to the nearest.
        try await (try hub("phoenix")).start()
        box.clock.advance(byMicroseconds: HubChoice.failbackMicroseconds)
        await box.settle()
        checkIn.resident = "R-2"
        await box.append(.checkIn(checkIn))
        let phoenixFingerprint = try hub("phoenix").fingerprint
        try await box.until("Phoenix acknowledged again") { n in
            n.projections.hub.hub == phoenixFingerprint && n.projections.hub.syncedThrough >= Box.lastShareable(n)
        }
        // Whichever hub took them, the network's database holds the box's log exactly once.
        let node = try #require(await box.read { $0.nodeID })
        try await SyncTests.expectHubHolds(try hub("phoenix"), box, node: node)

        try await box.stop()
        try await other.stop()
        for region in Self.regions.reversed() { await (try hub(region.name)).stop() }
    }

    @Test func aHubOfAnotherNetworkIsRefusedBeforeTheBoxSendsItsCredential() async throws {
        let mine = HubHarness("hub-mine")
        try await mine.start()
        let theirs = HubHarness("hub-theirs") // its own database: another network
        try await theirs.start()
        let box = Box("joined-mine")
        try await box.join(mine, as: "box")
        let before = try HubLinks.load(dataDirectory: box.directory.path)
        #expect(before.hubs.first?.network != nil, "the join recorded the network")
        do {
            _ = try await HubJoin.addEntryPoint(url: theirs.url, fingerprint: theirs.fingerprint, location: nil, dataDirectory: box.directory.path)
            Issue.record("a hub of another network was added")
        } catch {
            #expect("\(error)".contains("another network"))
        }
        #expect(try HubLinks.load(dataDirectory: box.directory.path) == before, "hub.json is unchanged")
        // The other network holds nothing of this box (the refusal came before any request of it).
        let node = try NodeIdentity.load(dataDirectory: box.directory.path)
        let seen = try await theirs.database { try await $0.syncState(node: node) }
        #expect(seen.epochs.isEmpty)
        await theirs.stop()
        await mine.stop()
    }
}
