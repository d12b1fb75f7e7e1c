import Foundation
import Logging
import VigilNode
import VigilSystem
// The tests' one temporary directory helper, visible to every file of this module.
@_exported import VigilTestSupport

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
