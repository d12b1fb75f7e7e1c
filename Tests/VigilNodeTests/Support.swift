import Foundation
import Logging
import VigilNode
import VigilSystem

/// A data directory that disappears after the test.
final class TemporaryDirectory {
    let path: String
    init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        path = "/tmp/vigil-node-tests-\(safe)-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.removeItem(atPath: path)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

let quietLogger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

func testConfiguration(_ dir: TemporaryDirectory, advertisers: Int = 12) -> NodeConfiguration {
    var c = NodeConfiguration()
    c.dataDirectory = dir.path
    c.simulation.advertisers = advertisers
    c.simulation.minIntervalMicroseconds = 50_000
    c.simulation.maxIntervalMicroseconds = 150_000
    c.scanWindowMicroseconds = 300_000
    c.commitWindowMicroseconds = 1_000
    c.initialMapBytes = 4 << 20
    return c
}

func run(_ node: Node, forMicroseconds duration: UInt64?) async throws {
    try await node.runOnOwnThread(duration: duration)
}
