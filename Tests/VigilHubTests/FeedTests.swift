import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilHub
import VigilHubProtocol
import VigilTestSupport
@testable import VigilNode

/// Download (issue 11, item 4): a call for help at one box reaches every other box through the
/// hub, once, merged with the same alert heard over the air.
@Suite(.serialized) struct FeedTests {
    @Test func anSOSAtOneBoxReachesAnotherOutOfRadioRangeOnceAndItsCancelFollows() async throws {
        let hub = HubHarness()
        try await hub.start()
        let a = Box("box-a")
        let b = Box("box-b")
        try await a.join(hub, as: "a")
        try await b.join(hub, as: "b")
        try await a.start()
        try await b.start()
        let aNode = try #require(await a.read { $0.nodeID })

        let sos = { () -> Alert in
            var sos = Alert()
            sos.id = AlertID(origin: aNode, counter: 1)
            sos.kind = .sos
            sos.severity = .critical
            sos.text = "SOS in hall A"
            return sos
        }()
        await a.append(.alertRaised(sos))
        let key = sos.id.text
        let origin = sos.id.origin
        try await b.until("box B has A's SOS as an active call for help") { n in
            n.projections.alerts.active.contains { $0.origin == origin && $0.counter == 1 && !$0.raisedHere }
        }
        // B heard the same alert over the air too: still one alert, the copy counted.
        var heard = sos
        heard.hops = 1
        heard.heardFrom = 0x77
        await b.append(.alertReceived(heard))
        let (count, duplicates) = try #require(await b.read { n in
            (n.projections.alerts.alerts.values.filter { $0.origin == origin && $0.counter == 1 }.count,
             n.projections.alerts.alerts[key]?.duplicates ?? 0)
        })
        #expect(count == 1 && duplicates >= 1)

        // A cancels: B's copy ends too.
        var cancel = AlertCancelled()
        cancel.id = sos.id
        cancel.by = aNode
        await a.append(.alertCancelled(cancel))
        try await b.until("box B sees the cancel") { n in n.projections.alerts.alerts[key]?.cancelled == true }

        // Each item was taken once, with its position; A never got its own items back.
        let bBook = try #require(await b.read { $0.projections.hub })
        #expect(bBook.received == 2 && bBook.feedCursor == 2)
        #expect(await a.read { $0.projections.hub.received } == 0)

        // B restarts: it asks from its cursor and takes nothing twice. A second call for help
        // shows the feed was read again: the first two items are not among what it brought.
        try await b.stop()
        try await b.start()
        var second = sos
        second.id = AlertID(origin: aNode, counter: 2)
        await a.append(.alertRaised(second))
        try await b.until("box B has A's second SOS") { n in n.projections.hub.feedCursor == 3 }
        #expect(await b.read { $0.projections.hub.received } == 3)
        try await a.stop()
        try await b.stop()
        await hub.stop()
    }

    @Test func aHubRestoredFromABackupGivesPositionsOutAgainAndABoxStillGetsEveryNewAlert() async throws {
        let hub = HubHarness("hub-restored")
        try await hub.start()
        let a = Box("restore-a")
        let b = Box("restore-b")
        try await a.join(hub, as: "a")
        try await b.join(hub, as: "b")
        try await a.start()
        try await b.start()
        let aNode = try #require(await a.read { $0.nodeID })
        func sos(_ counter: UInt32) -> Alert {
            var sos = Alert()
            sos.id = AlertID(origin: aNode, counter: counter)
            sos.kind = .sos
            sos.severity = .critical
            sos.expiresAtUs = 0 // only a cancel ends it: taking it again must not sound it again
            return sos
        }
        await a.append(.alertRaised(sos(1)))
        var cancel = AlertCancelled()
        cancel.id = sos(1).id
        cancel.by = aNode
        await a.append(.alertCancelled(cancel))
        try await b.until("box B took the SOS and its cancel") { $0.projections.hub.feedCursor == 2 }

        // The hub is restored from a backup taken before the cancel reached the feed: stopped,
        // its feed back to position 1, started again. A's next call for help gets position 2
        // again, where box B took the cancel.
        await hub.stop()
        try await hub.database { db in
            try await db.client.query("DELETE FROM feed WHERE position >= 2", logger: quietLogger)
        }
        try await hub.start()
        await a.append(.alertRaised(sos(2)))
        let second = sos(2).id
        try await b.until("box B has the second SOS from the restored hub") { n in
            n.projections.alerts.active.contains { $0.origin == second.origin && $0.counter == second.counter }
        }
        let firstKey = sos(1).id.text
        let state = try #require(await b.read { n in
            (n.projections.hub.feedRewinds, n.projections.alerts.alerts[firstKey]?.cancelled, n.projections.alerts.active.count)
        })
        #expect(state.0 == 1, "one rewind logged")
        #expect(state.1 == true && state.2 == 1, "the first SOS, taken again, stays cancelled: \(state)")
        try await a.stop()
        try await b.stop()
        await hub.stop()
    }

    @Test func aLongPollFromTheStartOfAFeedLongerThanTheSharedWindowMissesNothing() async throws {
        let hub = HubHarness("hub-long-feed")
        try await hub.start()
        let box = Box("long-feed")
        try await box.join(hub, as: "reader")
        let credential = try #require(try HubLinks.load(dataDirectory: box.directory.path).hubs.first?.credential)
        let node = try NodeIdentity.load(dataDirectory: box.directory.path)
        // 2,100 items from coordinators: more than the hub's shared window holds (2,000).
        try await hub.database { db in
            try await db.client.query("""
                INSERT INTO feed (position, origin_node, origin_epoch, origin_seq, kind, time_us, payload)
                SELECT g, 0, 0, 0, 3, g, '\\x00'::bytea FROM generate_series(1, 2100) AS g
                """, logger: quietLogger)
        }
        let client = try HubClient(url: hub.url, certificatePEM: try String(contentsOfFile: hub.hubData + "/tls/hub.crt", encoding: .utf8),
                                   credential: BoxCredential(node: node, secret: credential))
        defer { client.close() }
        // A long poll warms the window first; then one from the start, and one from the window's floor.
        _ = try await client.feed(node: node, after: 2_099, wait: 1)
        let fromStart = try await client.feed(node: node, after: 0, wait: 1)
        #expect(fromStart.items.first?.position == 1 && fromStart.items.count == 200, "\(fromStart.items.first?.position ?? 0)")
        let fromFloor = try await client.feed(node: node, after: 100, wait: 1)
        #expect(fromFloor.items.first?.position == 101 && fromFloor.head == 2_100 && fromFloor.atCursor != nil,
                "a cursor at the window's floor is there: no rewind")
        await hub.stop()
    }
}
