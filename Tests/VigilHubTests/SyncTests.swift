import Foundation
import NIOCore
import PostgresNIO
import Testing
import VigilCore
import VigilEvents
import VigilHex
import VigilHub
import VigilHubProtocol
import VigilLog
import VigilSystem
import VigilTestSupport
@testable import VigilNode

/// The box and a real hub (PostgreSQL, HTTPS): upload exactly once, what leaves the box, and
/// recovery when either side lost something (issue 11, items 2, 3 and 5).
@Suite(.serialized) struct SyncTests {
    /// A call for help raised at the box `origin` (a box speaks only for its own alerts).
    static func sos(_ counter: UInt32, at origin: UInt64) -> EventBody {
        var a = Alert()
        a.id = AlertID(origin: origin, counter: counter)
        a.kind = .sos
        a.severity = .critical
        a.text = "SOS at the front desk"
        return .alertRaised(a)
    }

    static func resident() -> EventBody {
        var r = Resident()
        r.id = "R-7"
        r.name = "Ana"
        r.mode = .off
        r.ownAddress = "+34600000007"
        var c = Contact()
        c.name = "Ben"
        c.address = "+34600000008"
        r.contacts = [c]
        return .residentEnrolled(r)
    }

    /// Compares what the hub holds of `box` (epoch `epoch`) with what its log says must be there.
    static func expectHubHolds(_ hub: HubHarness, _ box: Box, node: UInt64, epoch: UInt32 = 0, from: UInt64 = 0,
                               sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let expected = try box.expectedAtHub(from: from)
        let held = try await hub.database { try await $0.events(node: node, epoch: epoch) }
        #expect(held.map(\.seq) == expected.map(\.seq), "the hub holds exactly the shared events, once each", sourceLocation: sourceLocation)
        #expect(held.map { Hex.encode($0.hash) } == expected.map(\.hash), "with the same content", sourceLocation: sourceLocation)
    }

    @Test func aBoxUploadsWhatLeavesItExactlyOnceAndLogsTheAcknowledgement() async throws {
        let hub = HubHarness()
        try await hub.start()
        let box = Box()
        try await box.join(hub, as: "front-desk")
        try await box.start()
        let node = try #require(await box.read { $0.nodeID })
        await box.append(Self.resident())
        await box.advance(byMicroseconds: 2_000_000) // scan hits: they must never leave the box
        await box.append(Self.sos(1, at: node))
        try await box.waitUntilSynced()

        try await Self.expectHubHolds(hub, box, node: node)
        let kinds = try await hub.database { try await $0.events(node: node, epoch: 0) }.map(\.kind)
        #expect(!kinds.contains(UInt32(EventKind.scanHit.rawValue)), "no scan hit reaches the hub")
        #expect(kinds.contains(UInt32(EventKind.alertRaised.rawValue)))
        // The resident's phone numbers stayed on the box; their names went up.
        let payloads = try await hub.database { db in
            try await db.client.query("SELECT payload FROM events WHERE kind = \(Int32(EventKind.residentEnrolled.rawValue))")
                .decode(ByteBuffer.self).reduce(into: [[UInt8]]()) { $0.append(Array($1.readableBytesView)) }
        }
        let uploaded = try EventCodec.decode(kind: UInt32(EventKind.residentEnrolled.rawValue), payload: try #require(payloads.first), sequence: 0)
        guard case .residentEnrolled(let r) = uploaded else { Issue.record("not a resident"); return }
        #expect(r.name == "Ana" && r.contacts.first?.name == "Ben")
        #expect(r.contacts.first?.address == SharePolicy.kept && r.ownAddress == SharePolicy.kept)

        // Acknowledgements are events: the box's log says what is synced.
        let book = try #require(await box.read { $0.projections.hub })
        #expect(book.acknowledgements >= 1 && book.epoch == 0)
        let mark = try HubSyncMark.read(EventLog.openReadOnly(directory: box.directory.path))
        #expect(mark.backlog == 0)
        try await box.stop()
        await hub.stop()
    }

    @Test func aHubThatKeepsRefusingIsShownInTheLiveStatus() async throws {
        let hub = HubHarness()
        try await hub.start()
        let box = Box()
        try await box.join(hub, as: "front-desk")
        try await box.start()
        try await box.waitUntilSynced()
        #expect(await box.read { $0.liveStatus().hubProblem } == .some(nil), "nothing failing")

        // The box is revoked: its uploads and its feed are refused, retried, and shown.
        #expect(try await Hub.revoke(name: "front-desk", configuration: hub.configuration, logger: quietLogger))
        await box.append(Self.resident())
        try await box.until("the refusal is in the live status") { node in
            node.liveStatus().hubProblem.map { $0.contains("upload failing") && $0.contains("401") } ?? false
        }
        let problem = try #require(await box.read { $0.liveStatus().hubProblem } ?? nil)
        #expect(problem.contains("unknown or revoked credential"), "\(problem)")
        try await box.stop()
        await hub.stop()
    }

    @Test func aRunningBoxThatJoinsAHubSyncsWithoutARestart() async throws {
        let hub = HubHarness()
        try await hub.start()
        let box = Box()
        try await box.start()
        await box.append(Self.resident())
        // Joined with the CLI while the node runs: it tells the node, which starts syncing.
        let token = try await hub.enrolmentToken(for: "late-joiner").text
        // Never on the command line, where every user of the box reads it (ps): refused, unused.
        let onArgv = await offPool { runProcess(HubHarness.vigilBinary, ["hub", "join", hub.url, "--token", token, "--data", box.directory.path]) }
        #expect(onArgv.status == 64 && onArgv.output.contains("not taken on the command line"), "\(onArgv.output)")
        let tokenFile = box.directory.path("enrolment-token")
        try FileSystem.createExclusive(tokenFile, contents: Array((token + "\n").utf8), mode: 0o600)
        let joined = await offPool { runProcess(HubHarness.vigilBinary, ["hub", "join", hub.url, "--token-file", tokenFile, "--data", box.directory.path]) }
        #expect(joined.status == 0 && joined.output.contains("the running node syncs with it now"), "\(joined.output)")
        try await box.waitUntilSynced()
        let node = try #require(await box.read { $0.nodeID })
        try await Self.expectHubHolds(hub, box, node: node)
        try await box.stop()
        await hub.stop()
    }

    @Test func aBacklogBuiltWhileTheHubIsDownIsDrainedWithoutLossOrDuplicates() async throws {
        let hub = HubHarness()
        try await hub.start()
        let box = Box()
        try await box.join(hub, as: "hall")
        try await box.start()
        let node = try #require(await box.read { $0.nodeID })
        await box.append(Self.sos(1, at: node))
        try await box.waitUntilSynced()
        await hub.stop()

        // The box keeps working: 300 events while the hub is away, and the backlog is visible.
        await box.append(all: (0..<300).map { i in
            var c = CheckIn()
            c.resident = "R-\(i % 7)"
            c.source = .checkInButton
            return .checkIn(c)
        })
        await box.append(Self.sos(2, at: node))
        let pending = try HubSyncMark.read(EventLog.openReadOnly(directory: box.directory.path)).backlog
        #expect(pending >= 301)

        try await hub.start()
        try await box.waitUntilSynced(seconds: 90) // the uplink retries with back-off
        try await Self.expectHubHolds(hub, box, node: node)
        try await box.stop()
        await hub.stop()
    }

    @Test func aHubKilledMidUploadAndPostgreSQLRestartedUnderLoadLoseNothingAndDuplicateNothing() async throws {
        let hub = HubHarness()
        try await hub.start()
        let box = Box("killed")
        try await box.join(hub, as: "annex")
        await hub.stop()
        try await box.start()
        let node = try #require(await box.read { $0.nodeID })
        // A backlog of 3,000 events (three batches and more) built while the hub was away.
        await box.append(all: (0..<3_000).map { i in
            var c = CheckIn()
            c.resident = "R-\(i % 11)"
            c.source = .checkInButton
            return .checkIn(c)
        })
        try await hub.start()
        // Killed (-9) as soon as the first batch is acknowledged: later ones are mid-flight.
        try await box.until("a first acknowledgement", seconds: 90) { $0.projections.hub.syncedThrough > 0 }
        await hub.kill()
        let before = try #require(await box.read { $0.projections.hub.syncedThrough })
        try await hub.start()
        // PostgreSQL restarted while the box drains.
        try await box.until("another acknowledgement", seconds: 90) { $0.projections.hub.syncedThrough > before }
        try LocalCluster(dataDirectory: hub.hubData, logger: quietLogger).restart()
        try await box.waitUntilSynced(seconds: 120)
        try await Self.expectHubHolds(hub, box, node: node)
        try await box.stop()
        await hub.stop()
    }

    @Test func aBoxRestoredFromAnOlderCardStartsANewEpochInsteadOfColliding() async throws {
        let hub = HubHarness()
        try await hub.start()
        let box = Box()
        try await box.join(hub, as: "gym")
        try await box.start()
        let node = try #require(await box.read { $0.nodeID })
        for i in 1...20 { await box.append(Self.sos(UInt32(i), at: node)) }
        try await box.waitUntilSynced()
        try await box.stop()

        // The SD card is replaced by an older image: the identity and the hub link are there, the
        // log is older (here: empty), so its sequences start again below what the hub holds.
        let restored = Box()
        for file in ["node-id", "node-secret", "hub.json"] {
            try FileManager.default.copyItem(atPath: box.directory.path(file), toPath: restored.directory.path(file))
        }
        try await restored.start()
        #expect(await restored.read { $0.nodeID } == node)
        await restored.append(Self.sos(100, at: node))
        try await restored.until("a new epoch") { $0.projections.hub.epoch > 0 }
        let epoch = try #require(await restored.read { $0.projections.hub.epoch })
        try await restored.waitUntilSynced()
        #expect(epoch == 1)
        let state = try await hub.database { try await $0.syncState(node: node) }
        #expect(state.epochs.map(\.epoch) == [0, 1])
        // Epoch 0 still holds the old card's events, untouched; epoch 1 the new ones.
        let old = try await hub.database { try await $0.events(node: node, epoch: 0) }
        #expect(old.filter { $0.kind == UInt32(EventKind.alertRaised.rawValue) }.count == 20)
        let first = try #require(await restored.read { $0.projections.hub.epochFirstSequence })
        try await Self.expectHubHolds(hub, restored, node: node, epoch: 1, from: first)
        try await restored.stop()
        await hub.stop()
    }
}
