import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// A damaged log never keeps the node down: a check in a process of its own finds the damage, the
/// node stops, and its next start salvages the log (issue 12, item 1).
@Suite struct LogRecoveryTests {
    /// The `vigil` binary (built with the tests): the node checks and salvages with it.
    static var vigil: String {
        if let path = ProcessInfo.processInfo.environment["VIGIL_BINARY"] { return path }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/vigil").path
    }

    /// A log of `count` check-ins, then a node's run (so the directory is a node's, and its
    /// checkpoint covers them all: a later start reads only the log's tail).
    static func makeLog(_ dir: TemporaryDirectory, count: Int) async throws -> [EventBody] {
        var bodies: [EventBody] = []
        do {
            let log = try EventLog.open(testConfiguration(dir).log)
            for i in 0..<count {
                var c = CheckIn()
                c.resident = "resident-\(i % 50)"
                c.source = .checkInCli
                bodies.append(.checkIn(c))
                let (kind, payload) = EventCodec.encode(.checkIn(c))
                try log.append(LogRecord(kind: kind, timeMicroseconds: 1_800_000_000_000_000 + UInt64(i), payload: payload),
                               priority: .critical)
            }
            _ = try await log.appendDurably(LogRecord(kind: UInt32(EventKind.nodeStopped.rawValue),
                                                      timeMicroseconds: 1_800_000_001_000_000, payload: []), priority: .critical)
            log.close()
        }
        let clock = ManualClock(startMicroseconds: 1_800_000_002_000_000)
        let node = try Node(configuration: testConfiguration(dir, advertisers: 0), clock: clock, monotonic: clock,
                            logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        try await run(node, on: clock, forMicroseconds: 100_000)
        return bodies
    }

    /// Mangles the free-space bounds of one leaf page in the middle of the events tree, as a
    /// failing card would; returns the sequences that page held.
    static func damageAMiddleLeaf(_ dir: TemporaryDirectory) throws -> [UInt64] {
        let path = dir.path + "/data.mdb"
        let reader = try LMDBFileReader.open(path: path)
        let meta = try #require(reader.newestMeta())
        let events = try #require(reader.namedDatabases(meta) { _ in }.first { $0.name == "events" })
        var leaves: [(page: UInt64, keys: [UInt64])] = []
        reader.walk(root: try #require(events.root), depth: events.depth, lastPage: meta.lastPage, entry: { _, _, _, _ in },
                    damage: { _ in }, page: { number, keys in leaves.append((number, keys.map { $0.reduce(0) { $0 << 8 | UInt64($1) } })) })
        let victim = leaves[leaves.count / 2]
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try file.seek(toOffset: victim.page * UInt64(reader.pageSize) + 12)
        try file.write(contentsOf: Data([0xF0, 0xFF])) // `lower` past `upper`
        try file.close()
        return victim.keys
    }

    /// A node that checks its log with the real `vigil` binary. Retention reads the oldest
    /// records, which are what the tests damage: in this test process a crash there would take the
    /// test runner down (on a box, systemd restarts the node and its start salvages, as another test
    /// shows), so it waits for a day.
    static func checkingConfiguration(_ dir: TemporaryDirectory) -> NodeConfiguration {
        var config = testConfiguration(dir, advertisers: 0)
        config.logCheckExecutable = vigil
        config.exposure.retentionFirstCheckMicroseconds = 86_400_000_000
        return config
    }

    /// Starts a node on `dir` (no check executable: checked in-process), stops it, and returns its
    /// health projection as it ran.
    static func healthAfterAStart(_ dir: TemporaryDirectory) async throws -> NodeHealth {
        let clock = ManualClock()
        let node = try Node(configuration: testConfiguration(dir, advertisers: 0), clock: clock, monotonic: clock,
                            logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)
        let health = await onLoop(running) { $0.projections.health }
        try await stop(running)
        return health
    }

    @Test func aCheckFindsDamageTheNodeStopsAndItsNextStartSalvagesEverythingElse() async throws {
        let dir = TemporaryDirectory()
        let written = try await Self.makeLog(dir, count: 3_000)
        let lostSequences = try Self.damageAMiddleLeaf(dir)
        #expect(!lostSequences.isEmpty)

        // The node opens the damaged log (its tail is intact) and runs; the check a minute in,
        // in a process of its own, finds the damage and stops the node.
        let config = Self.checkingConfiguration(dir)
        let clock = ManualClock()
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger,
                            board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)
        // Not `advance` (it waits for the node to settle, and the node may stop meanwhile): the
        // check runs in a real process and its verdict stops the node, which ends the task.
        clock.advance(byMicroseconds: 61_000_000)
        await #expect {
            _ = try await running.stopped()?.get()
        } throws: { error in
            guard let e = error as? NodeError, case .logDamaged(let what) = e else { return false }
            return what.contains("DAMAGED")
        }
        #expect(FileManager.default.fileExists(atPath: dir.path + "/log-damaged"))

        // The next start salvages before opening: every record but the damaged page's is kept.
        let again = ManualClock()
        let second = try Node(configuration: config, clock: again, monotonic: again, logger: quietLogger,
                              board: try SimulatedBoard(monotonic: again))
        let secondRunning = try await start(second)
        let health = await onLoop(secondRunning) { $0.projections.health }
        try await stop(secondRunning)
        let salvage = try #require(health.lastSalvage)
        #expect(health.salvages == 1)
        #expect(salvage.lostCount == UInt64(lostSequences.count))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/log-damaged"))

        let events = try storedEvents(dir)
        let checkIns = events.filter { if case .checkIn = $0.body { true } else { false } }
        #expect(checkIns.count == written.count - lostSequences.count)
        #expect(Set(events.map(\.sequence)).isDisjoint(with: lostSequences))
        // The salvage is the new epoch's first event, above anything the old log held.
        let salvaged = try #require(events.first { $0.body.kind == .logSalvaged })
        #expect(salvaged.sequence > (events.filter { $0.body.kind == .checkIn }.map(\.sequence).max() ?? 0) + LogSalvage.epochGap)
        guard case .logSalvaged(let s) = salvaged.body else { return }
        #expect(s.trigger == "start")
        #expect(s.damagedPages >= 1)
        #expect(FileManager.default.fileExists(atPath: s.keptAside + "/data.mdb"))
        #expect(LogSalvageText.ranges(s.lost).contains("\(lostSequences.min() ?? 0)"))
    }

    @Test func aSoundCheckIsShownInTheLiveStatusAndClearsTheStartsMark() async throws {
        let dir = TemporaryDirectory()
        _ = try await Self.makeLog(dir, count: 500)
        let clock = ManualClock()
        let node = try Node(configuration: Self.checkingConfiguration(dir), clock: clock, monotonic: clock, logger: quietLogger,
                            board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)
        #expect(FileManager.default.fileExists(atPath: dir.path + "/log-check-pending"), "marked until a check passes")
        await advance(clock, running, byMicroseconds: 61_000_000, step: 61_000_000)
        #expect(await untilChildProcess(running) { $0.logIntegrity.last != nil })
        let live = await onLoop(running) { $0.liveStatus() }
        #expect(live.logCheck == "sound")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/log-check-pending"))
        try await stop(running)
    }

    /// The check runs in "/": a relative data directory (the default, ./var) must reach it whole,
    /// or a sound log would be judged missing, then damaged, and set aside.
    @Test func aRelativeDataDirectoryIsCheckedWhereItIs() async throws {
        let dir = TemporaryDirectory()
        _ = try await Self.makeLog(dir, count: 100)
        try Data().write(to: URL(fileURLWithPath: dir.path + "/log-damaged"))
        let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
        let relative = String(repeating: "../", count: depth) + String(dir.path.dropFirst())
        let report = try LogRecovery.beforeOpen(directory: relative, executable: Self.vigil, logger: quietLogger)
        #expect(report == nil, "the log is sound: nothing is salvaged")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/data.mdb"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/log-damaged"))
    }

    @Test func startsThatKeepEndingUncleanlyEndInASalvageEvenIfTheCheckPasses() async throws {
        let dir = TemporaryDirectory()
        _ = try await Self.makeLog(dir, count: 100)
        try Data("3\n".utf8).write(to: URL(fileURLWithPath: dir.path + "/log-check-pending"))
        let report = try LogRecovery.beforeOpen(directory: dir.path, executable: nil, logger: quietLogger)
        let salvage = try #require(report)
        #expect(salvage.lostCount == 0 && salvage.recovered > 100)
        // Once until a check passes: a box that keeps losing power does not salvage again and again.
        try Data("3\n".utf8).write(to: URL(fileURLWithPath: dir.path + "/log-check-pending"))
        #expect(try LogRecovery.beforeOpen(directory: dir.path, executable: nil, logger: quietLogger) == nil)
        LogRecovery.checkPassed(directory: dir.path)
        try Data("3\n".utf8).write(to: URL(fileURLWithPath: dir.path + "/log-check-pending"))
        #expect(try LogRecovery.beforeOpen(directory: dir.path, executable: nil, logger: quietLogger) != nil)
    }

    @Test func aFileLMDBRefusesIsSetAsideAndTheNodeStartsOnAFreshLog() async throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let garbage = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: dir.path + "/data.mdb"))
        let s = try #require(try await Self.healthAfterAStart(dir).lastSalvage)
        #expect(s.recovered == 0)
        #expect(s.tailUnknown)
        #expect(try Data(contentsOf: URL(fileURLWithPath: s.keptAside + "/data.mdb")) == garbage, "kept untouched")
    }

    @Test func aStartAfterARunThatNeverFinishedChecksTheLogFirst() async throws {
        let dir = TemporaryDirectory()
        _ = try await Self.makeLog(dir, count: 200)
        // A clean stop clears the mark; a run that ended otherwise leaves it.
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/log-check-pending"))
        try Data().write(to: URL(fileURLWithPath: dir.path + "/log-check-pending"))
        _ = try Self.damageAMiddleLeaf(dir)
        #expect(try await Self.healthAfterAStart(dir).salvages == 1, "checked (in-process, no executable configured) and salvaged before opening")
    }
}
