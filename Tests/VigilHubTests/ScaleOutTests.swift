import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilHub
import VigilHubProtocol
import VigilTestSupport
@testable import VigilNode

/// Beyond one machine (issue 11, item 8): the hub keeps no state of its own, so two hub
/// processes on one database serve boxes on either, and the feed's order holds across them.
@Suite(.serialized) struct ScaleOutTests {
    @Test func twoHubProcessesOnOneDatabaseCarryAnSOSFromABoxOnOneToABoxOnTheOther() async throws {
        let first = HubHarness("hub-1")
        try await first.start()
        // The second hub uses the first one's database (its own TLS identity, no cluster).
        let cluster = try LocalCluster(dataDirectory: first.hubData, logger: quietLogger)
        let second = HubHarness("hub-2")
        second.databaseURL = "postgres://vigil@localhost/vigil?host=\(cluster.socketDirectory)"
        try await second.start()

        let a = Box("box-a")
        let b = Box("box-b")
        try await a.join(first, as: "a")
        try await b.join(second, as: "b") // its token comes from the shared database
        try await a.start()
        try await b.start()
        let aNode = try #require(await a.read { $0.nodeID })
        let bNode = try #require(await b.read { $0.nodeID })

        var sos = Alert()
        sos.id = AlertID(origin: aNode, counter: 1)
        sos.kind = .sos
        sos.severity = .critical
        let call = sos
        await a.append(.alertRaised(call))
        // B, on the other process, has it: the NOTIFY crossed processes.
        try await b.until("box B (on hub 2) has box A's SOS (on hub 1)") { n in
            n.projections.alerts.active.contains { $0.origin == aNode && $0.counter == 1 && !$0.raisedHere }
        }
        var answer = AlertAcknowledged()
        answer.id = call.id
        await b.append(.alertAcknowledged(answer))
        try await a.until("box A (on hub 1) sees B's acknowledgement") { n in
            n.projections.alerts.acknowledgement(of: n.projections.alerts.alerts[call.id.text]!) != nil
        }
        try await a.waitUntilSynced()
        try await b.waitUntilSynced()
        // Both boxes' logs are in the one database, whichever process took them.
        try await SyncTests.expectHubHolds(first, a, node: aNode)
        try await SyncTests.expectHubHolds(first, b, node: bNode)
        try await a.stop()
        try await b.stop()
        await second.stop()
        await first.stop()
    }
}
