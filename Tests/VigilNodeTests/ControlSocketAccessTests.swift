import Foundation
import Testing
import VigilSystem
@testable import VigilNode

/// The control socket takes commands from the node's own user and root only.
@Suite struct ControlSocketAccessTests {
    static func directory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("control-access-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func theSocketFileIsTheNodeUsersAloneWhateverItsUmaskWouldGive() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop(onFailure: { _, _ in })
        let server = try ControlServer(path: dir + "/control.sock", loop: loop, clock: SystemMonotonicClock()) { _ in
            .now(.refused(.invalid, "not used"))
        }
        var info = stat()
        #expect(stat(dir + "/control.sock", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "mode \(String(info.st_mode & 0o777, radix: 8))")
        _ = server
    }

    @Test func aProcessOfAnotherUserIsRefusedBeforeItsCommandIsRead() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop(onFailure: { _, _ in })
        var refusals: [(user: UInt32?, total: Int)] = []
        var commands = 0
        // This test's own user stands for "another user": none is allowed.
        let server = try ControlServer(path: dir + "/control.sock", loop: loop, clock: SystemMonotonicClock(), allowedUsers: [],
                                       onRefused: { refusals.append(($0, $1)) }) { _ in
            commands += 1
            return .now(.refused(.invalid, "not used"))
        }
        let client = try UnixSocket.connect(path: dir + "/control.sock", timeoutMilliseconds: 2_000)
        let line = Array(#"{"ping":{}}"#.utf8) + [0x0A]
        _ = line.withUnsafeBytes { write(client.rawValue, $0.baseAddress, $0.count) }
        #expect(loop.turn())
        #expect(server.refusedPeers == 1)
        #expect(refusals.count == 1 && refusals.first?.user == UInt32(geteuid()) && refusals.first?.total == 1)
        #expect(commands == 0, "the command was never read")
        var byte: UInt8 = 0
        #expect(read(client.rawValue, &byte, 1) <= 0, "the connection is closed without an answer")
    }
}
