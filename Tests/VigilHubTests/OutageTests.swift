import Foundation
import PostgresNIO
import Testing
import VigilCore
import VigilEvents
import VigilHub
import VigilHex
import VigilHubProtocol
import VigilTestSupport
@testable import VigilNode

/// Must hold (issue 11): the hub down for a simulated day while the box keeps working, then a
/// kill -9 of the box in the middle of an upload; afterwards the hub holds every event that
/// leaves the box exactly once, compared row by row with the box's log. The box is the real
/// `vigil run` process, on a clock 4320 times faster than real time (`--time-scale`).
@Suite(.serialized) struct OutageTests {
    @Test func aDayWithoutTheHubAndAKilledUploadLoseNothingAndDuplicateNothing() async throws {
        let hub = HubHarness("outage-hub")
        try await hub.start()
        let dir = TemporaryDirectory("outage-box")
        let token = try await hub.enrolmentToken(for: "riverside")
        _ = try await HubJoin.join(url: hub.url, token: token, dataDirectory: dir.path)
        let node = try NodeIdentity.load(dataDirectory: dir.path)
        let config = dir.path + "/vigil.yaml"
        let key = dir.path + "/shelter.key"
        FileManager.default.createFile(atPath: key, contents: Data(String(repeating: "5a", count: 32).utf8), attributes: [.posixPermissions: 0o600])
        try """
            simulation:
              advertisers: 3
              min_interval: 1s
              max_interval: 3s
            radio:
              alerts:
                key_file: \(key)
            """.write(toFile: config, atomically: true, encoding: .utf8)
        await hub.stop()

        // A day (20 s at 4320x) with the hub down: the box logs, samples occupancy each minute,
        // takes an SOS, and keeps its backlog on disk.
        let outage = try start(["run", "--data", dir.path, "--config", config, "--time-scale", "4320", "--duration", "20s"])
        try await until("the node answers", seconds: 15) { runProcess(HubHarness.vigilBinary, ["status", "--data", dir.path]).status == 0 }
        let sos = runProcess(HubHarness.vigilBinary, ["alert", "raise", "sos", "--data", dir.path, "--text", "flooded ground floor"])
        #expect(sos.status == 0, "\(sos.output)")
        #expect(await exitStatus(of: outage) == 0)
        let pending = try Box.expectedAtHub(directory: dir.path)
        let samples = pending.filter { $0.kind == UInt32(EventKind.occupancySampled.rawValue) }.count
        #expect(samples >= 1_300, "a simulated day of per-minute occupancy while the hub was down (\(samples))")
        #expect(pending.contains { $0.kind == UInt32(EventKind.alertRaised.rawValue) })

        // The hub is back. The test holds the box's epoch row locked, so the box's first upload
        // waits inside the hub; the box is killed (-9) while it waits, then the lock goes.
        try await hub.start()
        try await hub.database { db in
            try await db.client.withTransaction(logger: quietLogger) { connection in
                // The box's epoch row, made and not yet committed: the upload's first statement (an
                // upsert of it) waits for this transaction; the feed's polls and the sync check do not.
                try await connection.query("INSERT INTO box_epochs (node_id, epoch, held_through) VALUES (\(Int64(bitPattern: node)), 0, 0)",
                                           logger: quietLogger)
                let box = try start(["run", "--data", dir.path, "--config", config])
                try await until("the box's upload waits in the hub", seconds: 30) {
                    var waiting: Int64 = 0
                    for try await (n) in try await db.client.query("SELECT count(*) FROM pg_locks WHERE NOT granted", logger: quietLogger)
                        .decode(Int64.self) { waiting = n }
                    return waiting > 0
                }
                Glibc.kill(box.processIdentifier, SIGKILL)
                _ = await exitStatus(of: box)
            }
        }

        // The box starts again and drains the rest; the hub is asked until it holds everything.
        let box = try start(["run", "--data", dir.path, "--config", config])
        let last = try #require(try Box.expectedAtHub(directory: dir.path).last?.seq)
        try await until("the hub holds the whole backlog", seconds: 60) {
            let state = try await hub.database { try await $0.syncState(node: node) }
            return (state.epochs.first { $0.epoch == 0 }?.heldThrough ?? 0) >= last
        }
        Glibc.kill(box.processIdentifier, SIGTERM)
        #expect(await exitStatus(of: box) == 0)

        let held = try await hub.database { try await $0.events(node: node, epoch: 0) }
        let expected = try Box.expectedAtHub(directory: dir.path)
        let covered = expected.filter { $0.seq <= (held.last?.seq ?? 0) }
        #expect(held.map(\.seq) == covered.map(\.seq), "every event once: none lost, none twice")
        #expect(held.map { Hex.encode($0.hash) } == covered.map(\.hash), "each with the box's content")
        let stopping: Set<UInt32> = [EventKind.nodeStopped, .radioStateChanged].map { UInt32($0.rawValue) }.reduce(into: []) { $0.insert($1) }
        #expect(expected.dropFirst(covered.count).allSatisfy { stopping.contains($0.kind) },
                "only what the box logged as it stopped is still to send")
        #expect(!held.contains { $0.kind == UInt32(EventKind.scanHit.rawValue) })
        let sync = try await hub.database { try await $0.syncState(node: node) }
        #expect(sync.epochs.map(\.epoch) == [0] && sync.conflicts == 0, "no conflict, no new epoch: the resent batch was the same")
        await hub.stop()
    }

    func start(_ arguments: [String]) throws -> TestProcess {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: HubHarness.vigilBinary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Asks until `condition` holds. These are separate processes on real time: there is no
    /// event to wait on, so this polls (every 20 ms), bounded by `seconds`.
    func until(_ what: String, seconds: Double, _ condition: @escaping () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HarnessError("not within \(seconds) s: \(what)")
    }
}
