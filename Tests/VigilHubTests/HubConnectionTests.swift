import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The hub holds a cap of connections per client and closes those that never finish their TLS
/// handshake (issue 28, finding 5): a client that opens connections and sends nothing cannot
/// take the hub's descriptors, and a box beside it keeps syncing.
@Suite(.serialized) struct HubConnectionTests {
    @Test func aClientHoldingSilentConnectionsIsCappedAndTimedOutWhileABoxSyncs() async throws {
        let hub = HubHarness()
        try FileManager.default.createDirectory(atPath: hub.hubData, withIntermediateDirectories: true)
        // The eight it holds are closed at 20 s: long after the refused ones, however loaded the machine.
        try "connections:\n  per_client: 8\n  idle_timeout_seconds: 20\n"
            .write(toFile: hub.hubData + "/hub.yaml", atomically: true, encoding: .utf8)
        try await hub.start()
        // From 127.0.0.2: twenty connections, no TLS handshake, nothing sent.
        let silent = try (0..<20).map { _ in try connectFromLoopback("127.0.0.2", port: hub.port) }
        defer { for fd in silent { close(fd) } }
        #expect(try await Self.closed(silent, reach: 12, within: .seconds(15)) == 12, "eight held, the rest closed as they were taken")

        // A box (from 127.0.0.1) joins and syncs meanwhile.
        let box = Box()
        try await box.join(hub, as: "beside")
        try await box.start()
        let node = try #require(await box.read { $0.nodeID })
        await box.append(SyncTests.sos(1, at: node))
        try await box.waitUntilSynced()

        // The eight that never spoke are closed at the idle timeout (20 s here).
        #expect(try await Self.closed(silent, reach: 20, within: .seconds(90)) == 20)
        try await box.stop()
        await hub.stop()
    }

    /// How many of `fds` the peer has closed (a read sees its end or a reset), once that is
    /// `count` or `limit` has passed; a held one stays counted as open.
    static func closed(_ fds: [Int32], reach count: Int, within limit: Duration) async throws -> Int {
        let deadline = ContinuousClock.now + limit
        var closed = 0
        repeat {
            closed = 0
            for fd in fds {
                var byte: UInt8 = 0
                let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
                if n == 0 || (n < 0 && errno == ECONNRESET) { closed += 1 }
            }
            if closed >= count { return closed }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        return closed
    }
}
