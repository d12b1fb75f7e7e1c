import Foundation
import Synchronization
import Testing
import VigilCore
import VigilEvents
import VigilSystem
@testable import VigilNode

/// `NodeHandle`: what the page, its API and the service manager hold of a node (decision 0008).
@Suite("A node's handle, as threads beside the loop hold it")
struct NodeHandleTests {
    @Test func theHandleCommandsWatchesAndStopsTheNodeFromAnotherThread() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock(startMicroseconds: 1_767_225_600_000_000)
        let node = try Node(configuration: testConfiguration(dir), clock: clock, monotonic: clock, logger: quietLogger)
        let running = try await start(node)
        let handle = running.handle

        // perform: answered once durable.
        let enrolled = try #require(await handle.perform(.enrolResident(ResidentSettings(id: "r1"))))
        #expect(enrolled.ok, "\(enrolled.error ?? "")")
        let sequence = try #require(enrolled.sequence)

        // submit: answered on the loop once appended.
        let submitted: NodeReply = await withCheckedContinuation { answer in
            handle.submit(.enrolResident(ResidentSettings(id: "r2"))) { answer.resume(returning: $0) }
        }
        #expect(submitted.ok && (submitted.sequence ?? 0) > sequence)

        // Snapshots, once asked for, cover what was performed.
        handle.publishSnapshots()
        await handle.snapshots.waitUntil(covering: sequence, timeoutSeconds: 30)
        let snapshot = try #require(handle.snapshots.latest)
        #expect(snapshot.residents.contains { $0.id == "r1" })

        handle.noteMalformedCallback()
        #expect(await onLoop(running) { $0.malformedCallbacks.withLock { $0 } } == 1)

        handle.requestStop(reason: "asked through the handle")
        try await ended(running)
        #expect(try loggedEvents(dir).contains {
            if case .nodeStopped(let s) = $0 { return s.reason == "asked through the handle" }
            return false
        })
    }

    @Test func aHandleThatOutlivesItsNodeKeepsNothingAliveAndIsAnsweredByNothing() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock(startMicroseconds: 1_767_225_600_000_000)
        // Made in the call: no binding of this scope keeps the node alive.
        let running = try await start(Node(configuration: testConfiguration(dir), clock: clock, monotonic: clock, logger: quietLogger))
        let handle = running.handle
        var node: Node? = try await stop(running)
        weak let gone = node
        node = nil
        #expect(gone == nil, "the handle held the node")
        // Nothing runs the command: the caller hears nil after its timeout, not never.
        #expect(await handle.perform(.enrolResident(ResidentSettings(id: "r1")), timeoutSeconds: 0.2) == nil)
        handle.requestStop(reason: "again")
        handle.publishSnapshots()
    }
}
