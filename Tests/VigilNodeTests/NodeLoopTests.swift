import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

@Suite struct NodeLoopTests {
    @Test func simulatedRadioFillsTheLogAndDeviceListThroughTheRealLoop() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let node = try Node(configuration: testConfiguration(dir, advertisers: 12), clock: clock, monotonic: clock, logger: quietLogger)
        let stopped = try await run(node, on: clock, forMicroseconds: 1_500_000)

        let state = stopped.projections
        #expect(state.health.starts == 1)
        #expect(state.health.stops == 1)
        // A window's hits are logged as one ScanBatch record.
        #expect(state.health.eventsByKind[EventKind.scanHit.rawValue] == 0)
        let batches = state.health.eventsByKind[EventKind.scanBatch.rawValue]
        #expect(batches >= 1)
        #expect(state.devices.devices.count == 12)
        #expect(stopped.counters.shed == 0 && stopped.counters.refused == 0)

        // The log holds the same: started first, stopped last, scan hits with real aggregates.
        let log = try EventLog.openReadOnly(directory: dir.path)
        var kinds: [EventKind] = []
        var multiReportHits = 0
        var hits = 0
        try log.read { txn in
            try txn.forEach(from: 0) { result in
                guard case .event(let e) = Replay.input(result) else {
                    Issue.record("undecodable event")
                    return false
                }
                kinds.append(e.body.kind)
                if case .scanBatch(let batch) = e.body, let packed = try? batch.scanHits() {
                    for h in packed {
                        hits += 1
                        #expect(h.rssiMin <= h.rssiMax)
                        #expect(Int64(h.rssiMin) * Int64(h.count) <= h.rssiSum && h.rssiSum <= Int64(h.rssiMax) * Int64(h.count))
                        #expect(h.firstOffsetUs >= h.lastOffsetUs)
                        if h.count > 1 { multiReportHits += 1 }
                    }
                }
                return true
            }
        }
        #expect(kinds.first == .nodeStarted)
        #expect(kinds.last == .nodeStopped)
        #expect(multiReportHits > 0)
        #expect(hits >= 12, "every advertiser is heard at least once in 1.5 s")
        // Windows fold reports: more reports than hits.
        #expect(stopped.counters.reports > UInt64(hits))
        #expect(UInt64(kinds.count) == state.appliedThrough)
    }

    @Test func outputsFollowStateAndAreReleasedOnStop() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: testConfiguration(dir, advertisers: 2), clock: clock, monotonic: clock,
                            logger: quietLogger, board: board)
        let stopped = try await run(node, on: clock, forMicroseconds: 300_000)
        let stoppedBoard = try #require(stopped.board as? SimulatedBoard)
        // Green came on once the radio-on event was durable, and went off at stop.
        let green = stoppedBoard.transitions.filter { $0.line == .green }.map(\.on)
        #expect(green == [true, false])
        #expect(stoppedBoard.transitions.filter { $0.line == .red }.isEmpty, "no SOS, no red")
        #expect(!stoppedBoard.level(.green))
    }

    @Test func simulatedButtonEdgesAreLoggedWithKernelTimestamps() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: testConfiguration(dir, advertisers: 1), clock: clock, monotonic: clock,
                            logger: quietLogger, board: board)
        node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 200_000, bounces: 2) }
        let stopped = try await run(node, on: clock, forMicroseconds: 600_000, step: 10_000)

        let log = try EventLog.openReadOnly(directory: dir.path)
        var edges: [ButtonInput] = []
        try log.read { txn in
            try txn.forEach(from: 0) { result in
                if case .event(let e) = Replay.input(result), case .buttonInput(let b) = e.body { edges.append(b) }
                return true
            }
        }
        // Press, two bounce pairs, release: six edges in kernel-time order, alternating.
        #expect(edges.count == 6)
        #expect(edges.map(\.edge) == [.falling, .rising, .falling, .rising, .falling, .rising])
        #expect(zip(edges, edges.dropFirst()).allSatisfy { $0.kernelTimestampNs < $1.kernelTimestampNs })
        let held = (edges.last?.kernelTimestampNs ?? 0) - (edges.first?.kernelTimestampNs ?? 0)
        #expect(held >= 200_000_000)
        #expect(stopped.projections.health.buttonEdges == 6)
    }

    @Test func aSecondNodeOnTheSameDataDirectoryIsRefused() throws {
        let dir = TemporaryDirectory()
        let first = try Node(configuration: testConfiguration(dir), logger: quietLogger)
        #expect {
            _ = try Node(configuration: testConfiguration(dir), logger: quietLogger)
        } throws: { error in
            guard let e = error as? NodeError, case .alreadyRunning = e else { return false }
            return true
        }
        _ = first
    }

    @Test func restartResumesFromTheCheckpointAndMatchesAFullReplay() async throws {
        let dir = TemporaryDirectory()
        let config = testConfiguration(dir, advertisers: 6)
        let clock = ManualClock()
        do {
            let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger)
            try await run(node, on: clock, forMicroseconds: 500_000)
        }
        // Read and let go: the next node opens this directory for writing in the same process.
        let (checkpoint, last) = try {
            let log = try EventLog.openReadOnly(directory: dir.path)
            return (try log.read { try $0.checkpoint(named: Projections.checkpointName) }, try log.read { try $0.lastSequence() })
        }()
        #expect(checkpoint?.sequence == last, "the final checkpoint covers everything, NodeStopped included")

        let second = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger)
        #expect(second.projections.appliedThrough == last, "restored without replaying from 0")
        #expect(second.projections.health.stops == 1)
        let secondStopped = try await run(second, on: clock, forMicroseconds: 300_000)
        #expect(secondStopped.projections.health.starts == 2)

        let report = try Replay.verify(try EventLog.openReadOnly(directory: dir.path), settings: config.projections)
        #expect(report.matches)
        #expect(report.replayedEvents == Int(secondStopped.projections.appliedThrough))
    }
}
