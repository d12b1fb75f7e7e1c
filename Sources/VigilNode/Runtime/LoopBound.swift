/// A loop-confined object as a helper thread may hold it: the one audited way back onto the loop
/// (decision 0008). A thread that reads the log or waits on a child process holds this, never the
/// component, and what it sends runs on the loop thread with the component in hand.
///
/// `@unchecked Sendable` because `Target` is not: the reference crosses threads, but it is
/// dereferenced only inside `EventLoop.perform`, on the loop thread. Misuse the compiler cannot
/// see: capturing `target` some other way; do not add an accessor for it.
struct LoopBound<Target: AnyObject>: @unchecked Sendable {
    private let loop: EventLoop
    /// Weak: a helper thread outliving its node (a slow DNS lookup, a hub request) keeps nothing
    /// alive, and a target that holds its own `LoopBound` makes no cycle.
    private weak var target: Target?

    init(_ target: Target, on loop: EventLoop) {
        self.target = target
        self.loop = loop
    }

    /// Runs `work` on the loop, soon, with the target. Safe from any thread. Once the loop has
    /// stopped, or the target is gone, the work is never run (as with `Node.onLoop`).
    func send(_ work: @escaping @Sendable (Target) -> Void) {
        let bound = self
        loop.perform {
            guard let target = bound.target else { return }
            work(target)
        }
    }

    /// Runs `work` on the loop and hands its result back to an async caller; `gone` when the
    /// target no longer exists. Misuse: awaiting this once the loop has stopped waits for ever
    /// (the loop runs nothing more, and cancelling the waiting task does not end a checked
    /// continuation's wait). The hub's key-file worker is the one caller: a stop abandons its task
    /// in that wait, as `Node.onLoop` with a continuation did before.
    func ask<Answer: Sendable>(_ work: @escaping @Sendable (Target) -> Answer, orIfGone gone: Answer) async -> Answer {
        let bound = self
        return await withCheckedContinuation { (answer: CheckedContinuation<Answer, Never>) in
            loop.perform {
                guard let target = bound.target else { return answer.resume(returning: gone) }
                answer.resume(returning: work(target))
            }
        }
    }
}
