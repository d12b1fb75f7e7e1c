import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// Issue 27, item 7 (decision 0002): after an unclean stop the log is checked before it is
/// opened, and that no longer holds up the button. The check here is the real `vigil log check`,
/// behind a gate the test opens: while it is shut, the node answers a press with red and a
/// message to its staff; once it opens, what happened meanwhile is in the real log, after what
/// was there, with an alert id that does not repeat one the log holds, and nothing is sent twice.
@Suite(.serialized) struct ButtonBeforeTheLogTests {
    /// The FIFO a gated checker waits on; `open()` lets it run.
    final class Gate {
        let fd: Int32
        init(path: String) {
            // Read-write: opening never blocks, and what is written waits in the FIFO for the script.
            fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        }
        func open() { _ = "go\n".withCString { Glibc.write(fd, $0, 3) } }
        deinit { Glibc.close(fd) }
    }

    /// A checker that waits at `gate` (a FIFO), then runs the real `vigil`.
    static func gatedChecker(_ dir: TemporaryDirectory) throws -> (script: String, gate: Gate) {
        let gatePath = dir.path + "/check-gate"
        #expect(mkfifo(gatePath, 0o600) == 0)
        let script = dir.path + "/gated-vigil.sh"
        try "#!/bin/sh\nread line < \"\(gatePath)\"\nexec \"\(LogRecoveryTests.vigil)\" \"$@\"\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let gate = Gate(path: gatePath)
        #expect(gate.fd >= 0)
        return (script, gate)
    }

    /// A start that did not end clean, as a power cut leaves it: the start's mark is still there.
    static func markUncleanStop(_ dir: TemporaryDirectory) throws {
        try FileSystem.removeIfPresent(dir.path + "/" + LogRecovery.uncheckedStartMarker)
        try FileSystem.createExclusive(dir.path + "/" + LogRecovery.uncheckedStartMarker, contents: Array("1\n".utf8))
    }

    static func alertsRaised(_ events: [Event]) -> [AlertID] {
        events.compactMap { if case .alertRaised(let a) = $0.body { a.id } else { nil } }
    }

    static func press(_ node: NodeThread, _ clock: ManualClock) async {
        node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
        // Not `advance`: a node whose log is being opened is never settled. Each step is a turn.
        for _ in 0..<70 {
            clock.advance(byMicroseconds: 10_000)
            _ = await onLoop(node) { _ in true }
        }
    }

    @Test func aPressWhileTheLogIsCheckedBringsRedAndTheStaffAndIsCarriedIntoTheLogOnce() async throws {
        let dir = TemporaryDirectory()
        var config = try CallsForHelpNodeTests.configuration(dir)
        // A first run: an SOS raised and delivered, then a clean stop.
        do {
            let clock = ManualClock()
            let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger,
                                board: try SimulatedBoard(monotonic: clock))
            let running = try await start(node)
            running.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
            await advance(clock, running, byMicroseconds: 700_000, step: 10_000)
            await CallsForHelpNodeTests.deliverAll(running, clock)
            try await stop(running)
        }
        let before = try storedEvents(dir)
        let firstID = try #require(Self.alertsRaised(before).first)
        #expect(CallsForHelpNodeTests.received(dir).count == 1)

        // The power goes: the next start must check the log before opening it.
        try Self.markUncleanStop(dir)
        let (checker, gate) = try Self.gatedChecker(dir)
        config.logCheckExecutable = checker
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try NodeThread(node, name: "vigil-test-loop")
        #expect(await untilChildProcess(running) { $0.liveStatus().logOpening != nil })

        // The check is held: the button works all the same.
        await Self.press(running, clock)
        #expect(await untilChildProcess(running) { n in n.projections.alerts.active.contains { $0.raisedHere } })
        #expect(await issue10Level(running, .red), "red is on before the log is open")
        #expect(await untilChildProcess(running) { n in
            CallsForHelpNodeTests.received(dir).count == 2 && n.projections.outbox.pending.allSatisfy { $0.channel != .call }
        }, "the staff are told before the log is open")
        let early = try #require(await onLoop(running) { n in
            n.projections.alerts.active.first { $0.raisedHere }.map { AlertID(origin: $0.origin, counter: $0.counter) }
        })
        #expect(early.counter > firstID.counter, "the counter comes from outside the log: \(early) after \(firstID)")
        let earlyCall = try #require(await onLoop(running) { n in n.projections.calls.open.first.map { ($0.code, $0.number) } })
        let told = CallsForHelpNodeTests.received(dir).last?["text"] as? String ?? ""
        #expect(told.contains(earlyCall.0), "the message names the call's code: \(told)")
        let status = await onLoop(running) { $0.liveStatus() }
        #expect(status.logOpening?.held ?? 0 >= 2)
        let refused = try #require(await running.perform(.enrolResident(ResidentSettings(id: "r1"))))
        #expect(!refused.ok && (refused.error ?? "").contains("being checked"), "\(refused)")
        #expect(try storedEvents(dir).count == before.count, "nothing is in the real log yet")

        // The check passes: the log is taken over and what happened meanwhile is appended to it.
        gate.open()
        #expect(await untilChildProcess(running, seconds: 60) { $0.opening == nil })
        await settled(running)
        let (active, pendingCalls, carried) = await onLoop(running) { n in
            (n.projections.alerts.active.map { AlertID(origin: $0.origin, counter: $0.counter) }, n.projections.outbox.pending.filter { $0.channel == .call }.count, n.liveStatus().logOpening)
        }
        #expect(active.contains(early) && active.contains(firstID), "the restored alert and the one raised before the open")
        #expect(pendingCalls == 0, "nothing waits to be sent again")
        #expect(carried == nil)
        #expect(await issue10Level(running, .red))
        // The code the staff were given before the open still names the call, with the same
        // number for the alarm centre.
        let afterCall = await onLoop(running) { n in n.projections.calls.open.first { $0.code == earlyCall.0 }.map { ($0.id, $0.number) } }
        #expect(afterCall != nil, "the call keeps its code")
        #expect(afterCall?.1 == earlyCall.1)
        let taken = try #require(await running.perform(.takeCall(TakeRequest(call: earlyCall.0, by: "Luis", via: "cli"))))
        #expect(taken.ok, "\(taken)")
        // The taking is told to everyone told; the stop does not wait for messages not yet sent.
        let takingTold = await untilChildProcess(running, seconds: 30) { _ in
            CallsForHelpNodeTests.received(dir).contains { ($0["text"] as? String)?.hasPrefix("TAKEN") == true }
        }
        #expect(takingTold, "the taking was told")
        try await stop(running)

        let texts = CallsForHelpNodeTests.received(dir).compactMap { $0["text"] as? String }
        #expect(texts.filter { !$0.hasPrefix("TAKEN") }.count == 2, "the message sent before the open is not sent twice: \(texts)")
        #expect(texts.last?.hasPrefix("TAKEN") == true, "\(texts)")
        let after = try storedEvents(dir)
        #expect(Array(after.prefix(before.count)).map(\.sequence) == before.map(\.sequence), "the old log is kept as it was")
        let added = after.dropFirst(before.count)
        #expect(Self.alertsRaised(Array(added)) == [early], "the SOS is appended once, with its id")
        #expect(added.contains { $0.body.kind == .nodeStarted })
        #expect(added.contains { $0.body.kind == .outboxAttempt }, "its delivery too")
        #expect(Set(after.map(\.sequence)).count == after.count)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/opening-log"), "the scratch log is gone")
        #expect((AlertCounterFloor(directory: dir.path).stored ?? 0) >= early.counter)
    }

    @Test func aStopAskedForBeforeTheLogIsOpenWaitsForItSoNothingTakenMeanwhileIsLost() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 0)
        let written = try await LogRecoveryTests.makeLog(dir, count: 100)
        try Self.markUncleanStop(dir)
        let (checker, gate) = try Self.gatedChecker(dir)
        config.logCheckExecutable = checker
        let clock = ManualClock()
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger,
                            board: try SimulatedBoard(monotonic: clock))
        let running = try NodeThread(node, name: "vigil-test-loop")
        #expect(await untilChildProcess(running) { $0.liveStatus().logOpening != nil })
        running.requestStop(reason: "test")
        #expect(await onLoop(running) { $0.opening != nil && !$0.stopping }, "the stop waits for the open")
        gate.open()
        try await ended(running)
        let events = try storedEvents(dir)
        #expect(events.filter { $0.body.kind == .checkIn }.count == written.count)
        let lastCheckIn = events.last { $0.body.kind == .checkIn }?.sequence ?? 0
        #expect(events.contains { $0.body.kind == .nodeStarted && $0.sequence > lastCheckIn }, "the start, taken before the open, is in the log")
        #expect(events.last?.body.kind == .nodeStopped)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/" + LogRecovery.uncheckedStartMarker), "a clean stop after the check")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/opening-log/data.mdb"))
    }

    @Test func alertCountersBeforeTheOpenComeFromAFloorKeptOutsideTheLog() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        var floor = AlertCounterFloor(directory: dir.path)
        #expect(floor.floor(logExists: false) == 0)
        #expect(floor.floor(logExists: true) == AlertCounterFloor.unknownFloor, "a log older than the file: above anything it holds")
        try floor.record(0)
        #expect(AlertCounterFloor(directory: dir.path).stored == AlertCounterFloor.block, "a first start reserves the first block")
        try floor.record(1)
        #expect(AlertCounterFloor(directory: dir.path).stored == AlertCounterFloor.block, "inside it: no write")
        FileSystem.remove(dir.path + "/" + AlertCounterFloor.fileName)
        floor = AlertCounterFloor(directory: dir.path)
        try floor.record(1)
        let block = AlertCounterFloor.block
        #expect(AlertCounterFloor(directory: dir.path).stored == 1 + block, "a block reserved before the first alert is appended")
        try floor.record(7)
        #expect(AlertCounterFloor(directory: dir.path).stored == 1 + block, "inside the reserved block: no write")
        try floor.record(block + 2)
        try floor.record(3)
        #expect(AlertCounterFloor(directory: dir.path).stored == 2 * block + 2, "the next block, never lowered by a record")
        #expect(AlertCounterFloor(directory: dir.path).floor(logExists: true) == 2 * block + 2)
        try "garbage".write(toFile: dir.path + "/" + AlertCounterFloor.fileName, atomically: true, encoding: .utf8)
        #expect(AlertCounterFloor(directory: dir.path).floor(logExists: true) == AlertCounterFloor.unknownFloor)
    }
}
