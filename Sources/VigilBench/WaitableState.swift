import VigilSystem

/// State one thread changes and another waits on, under one condition lock: the probes the
/// benchmarks read a running node through. Waits block on the condition, never poll.
final class WaitableState<State>: @unchecked Sendable {
    private let lock = ConditionLock()
    private var state: State // guarded by `lock`

    init(_ initial: State) { state = initial }

    /// Changes the state and wakes every waiter.
    func update(_ change: (inout State) -> Void) {
        lock.withLock {
            change(&state)
            lock.broadcast()
        }
    }

    func snapshot() -> State { lock.withLock { state } }

    /// The state once `condition` holds; nil when `timeoutNanoseconds` pass first.
    func wait(timeoutNanoseconds: UInt64, until condition: (State) -> Bool) -> State? {
        let deadline = monotonicNanoseconds() + timeoutNanoseconds
        return lock.withLock {
            while !condition(state) {
                if monotonicNanoseconds() >= deadline { return nil }
                lock.wait(untilMonotonicNanoseconds: deadline)
            }
            return state
        }
    }
}
