import Dispatch
import Testing
@testable import VigilAccess

/// The bound on password checks (the hub's coordinator sign-in, the box's page): a flood is
/// turned away at once instead of queueing scrypt work without end (issue 28, finding 6).
@Suite(.timeLimit(.minutes(1))) struct GateTests {
    @Test func aGateWithItsWaitersFullTurnsTheNextAwayAtOnceAndServesTheRestInTurn() async {
        let gate = Gate(width: 1)
        let release = DispatchSemaphore(value: 0)
        let first = Task { await gate.run(maxWaiting: 2) { release.wait(); return 1 } }
        while await gate.load.running < 1 { await Task.yield() }
        let waiters = (0..<2).map { i in Task { await gate.run(maxWaiting: 2) { i + 10 } } }
        while await gate.load.waiting < 2 { await Task.yield() }
        #expect(await gate.run(maxWaiting: 2) { 99 } == nil, "a third waiter is turned away, not queued")
        release.signal()
        #expect(await first.value == 1)
        var served: [Int] = []
        for w in waiters { if let v = await w.value { served.append(v) } }
        #expect(served.sorted() == [10, 11], "the ones let in are all served")
        let load = await gate.load
        #expect(load.running == 0 && load.waiting == 0)
        #expect(await gate.run(maxWaiting: 2) { 7 } == 7, "and the gate is open again")
    }
}
