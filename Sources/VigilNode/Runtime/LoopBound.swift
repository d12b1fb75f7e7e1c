/// A loop-confined object as a helper thread may hold it: the one audited way back onto the loop
/// (decision 0008). A thread that reads the log or waits on a child process holds this, never the
/// component, and what it sends runs on the loop thread with the component in hand.
///
/// `@unchecked Sendable` because `Target` is not: the reference crosses threads, but it is
/// dereferenced only inside `EventLoop.perform`, on the loop thread. Misuse the compiler cannot
/// see: capturing `target` some other way; do not add an accessor for it.
struct LoopBound<Target: AnyObject>: @unchecked Sendable {
    private let loop: EventLoop
    private let target: Target

    init(_ target: Target, on loop: EventLoop) {
        self.target = target
        self.loop = loop
    }

    /// Runs `work` on the loop, soon, with the target. Safe from any thread. Once the loop has
    /// stopped, the work is never run (as with `Node.onLoop`).
    func send(_ work: @escaping @Sendable (Target) -> Void) {
        let target = UncheckedTarget(target)
        loop.perform { work(target.value) }
    }
}

/// Carries the target into the loop's closure; read there only.
private struct UncheckedTarget<Value: AnyObject>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
