import Testing
@testable import VigilHub

/// A long poll that starts waiting as a feed item commits must still be woken by it.
@Suite struct FeedSignalTests {
    /// `wait` checks the generation, then parks from a child task; a notification between the
    /// two once found nobody to wake, and the poll slept to its timeout (here an hour, so a lost
    /// wake-up fails the test by its time limit instead of passing late).
    @Test(.timeLimit(.minutes(1))) func aNotificationWhileAPollIsAboutToParkWakesIt() async {
        let signal = FeedSignal()
        var rng = SplitMix(seed: 27)
        for _ in 0..<2_000 {
            let seen = await signal.generation
            // Many polls, and the notification at a varying point of their way into the wait.
            // In a task group: the time limit cancels a lost poll instead of leaving it behind.
            let yields = rng.next(below: 12)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { await signal.wait(after: seen, seconds: 3_600) } }
                for _ in 0..<yields { await Task.yield() }
                await signal.notifyAll()
            }
        }
    }

    @Test(.timeLimit(.minutes(1))) func aPollAfterANotificationItDidNotSeeDoesNotWait() async {
        let signal = FeedSignal()
        let seen = await signal.generation
        await signal.notifyAll()
        await signal.wait(after: seen, seconds: 3_600)
    }
}

/// A fixed-seed generator, so a failing interleaving search is the same each run.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(below bound: UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return (z ^ (z >> 31)) % bound
    }
}
