import Glibc

/// Records which thread owns some state and checks it in debug builds.
///
/// The node's loop-owned state may only be touched on the loop thread; a call from elsewhere is
/// a data race that tests would rarely catch by luck. `check()` traps in debug builds (the test
/// suite runs those) and compiles to nothing in release builds, where the loop must not pay for it.
public final class ThreadOwner: Sendable {
    private let owner = LockedValue<pthread_t?>(nil)

    public init() {}

    /// The calling thread owns the state from now on.
    public func claim() {
        let me = pthread_self()
        owner.withLock { $0 = me }
    }

    /// Nobody owns it (the loop has stopped; tests may read the final state).
    public func release() {
        owner.withLock { $0 = nil }
    }

    /// Whether the caller may touch the state: it owns it, or nobody does.
    public var callerMayTouch: Bool {
        let me = pthread_self()
        return owner.withLock { o in o.map { pthread_equal($0, me) != 0 } ?? true }
    }

    /// Traps in debug builds when another thread than the owner calls.
    @inline(__always)
    public func check(_ what: @autoclosure () -> String = "", file: StaticString = #fileID, line: UInt = #line) {
        assert(callerMayTouch, "loop-owned state touched off the loop thread \(what())", file: file, line: line)
    }
}
