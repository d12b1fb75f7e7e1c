import AsyncHTTPClient
import Foundation
import Glibc
import NIOCore
import Testing
import VigilHub
import VigilHubProtocol
import VigilTestSupport
@testable import VigilNode

/// A database that stops answering (a hung server, a partition that drops packets) must not
/// hold a request for ever: the request is answered 503 within the hub's deadline, the box
/// retries, and nothing is stored twice. (CI, 2026-12-01: after PostgreSQL restarted under
/// load, one upload waited on it for 60 s and held the hub's shutdown until its watchdog fired.)
@Suite(.serialized) struct DatabaseDeadlineTests {
    @Test func aRequestToADatabaseThatStopsAnsweringIsAnswered503WithinTheDeadlineAndARetryStoresItOnce() async throws {
        let hub = HubHarness()
        hub.databaseRequestSeconds = 2
        try await hub.start()
        let dir = TemporaryDirectory("deadline-box")
        let box = try await RefusalTests.join(hub, dir, as: "annex")
        let client = try hub.rawClient()
        let url = hub.url + "/api/v1/boxes/\(NodeIDText.format(box.node))/events"
        let first = UploadBatch(node: NodeIDText.format(box.node), epoch: 0, from: 1, through: 1,
                                events: [RefusalTests.event(1, RefusalTests.checkIn("R-1"))])
        #expect(try await RefusalTests.post(client, url, RefusalTests.encode(first), authorization: box.credential.headerValue).0 == 200)

        // Every PostgreSQL process stopped: connections stay open, nothing answers.
        let frozen = try FrozenCluster(dataDirectory: hub.hubData)
        defer { frozen.thaw() }
        let second = UploadBatch(node: first.node, epoch: 0, from: 2, through: 2,
                                 events: [RefusalTests.event(2, RefusalTests.checkIn("R-2"))])
        let started = ContinuousClock.now
        let answer = try await RefusalTests.post(client, url, RefusalTests.encode(second), authorization: box.credential.headerValue)
        let waited = ContinuousClock.now - started
        #expect(answer == (503, "database_unavailable"))
        // The deadline is 2 s; the box's read timeout (30 s) is far off.
        #expect(waited < .seconds(10), "answered after \(waited)")
        // An unauthenticated request that reads the database is bounded the same way.
        let info = try await client.execute(HTTPClientRequest(url: hub.url + "/api/v1/hub"), timeout: .seconds(30))
        #expect(info.status.code == 503)
        #expect(hub.logTail().contains("the database did not answer in time"))

        // Answering again: the hub stops without its watchdog (no request is left waiting), and
        // the batch sent again is stored once, whether or not the timed-out attempt committed.
        frozen.thaw()
        await hub.stop()
        try await hub.start()
        let retryClient = try hub.rawClient()
        let retryURL = hub.url + "/api/v1/boxes/\(NodeIDText.format(box.node))/events"
        #expect(try await RefusalTests.post(retryClient, retryURL, RefusalTests.encode(second), authorization: box.credential.headerValue).0 == 200)
        let held = try await hub.database { try await $0.events(node: box.node, epoch: 0) }
        #expect(held.map(\.seq) == [1, 2])
        try await client.shutdown()
        try await retryClient.shutdown()
        await hub.stop()
    }
}

/// A hub's own PostgreSQL cluster with every process stopped (SIGSTOP) until `thaw()`.
final class FrozenCluster: @unchecked Sendable {
    private var pids: [pid_t]

    init(dataDirectory: String) throws {
        let pidFile = try String(contentsOfFile: dataDirectory + "/postgres/postmaster.pid", encoding: .utf8)
        guard let first = pidFile.split(separator: "\n").first, let postmaster = pid_t(first) else {
            throw HarnessError("no postmaster pid in \(dataDirectory)/postgres/postmaster.pid")
        }
        // The postmaster and its children (backends, checkpointer, writers).
        var pids = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == postmaster { pids.append(pid) }
        }
        self.pids = pids
        for pid in pids { kill(pid, SIGSTOP) }
    }

    func thaw() {
        for pid in pids { kill(pid, SIGCONT) }
        pids = []
    }
}
