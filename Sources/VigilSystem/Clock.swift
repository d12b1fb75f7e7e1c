import Synchronization

/// Where event times come from. Injected everywhere so tests and simulations control time.
public protocol WallClock: Sendable {
    /// Microseconds since the Unix epoch.
    func nowMicroseconds() -> UInt64
}

/// The real clock.
public struct SystemClock: WallClock {
    public init() {}
    public func nowMicroseconds() -> UInt64 { realtimeMicroseconds() }
}

/// A clock that moves only when told to: for tests.
public final class ManualClock: WallClock {
    private let now: Mutex<UInt64>
    public init(startMicroseconds: UInt64 = 1_767_225_600_000_000) { now = Mutex(startMicroseconds) }
    public func nowMicroseconds() -> UInt64 { now.withLock { $0 } }
    public func advance(byMicroseconds delta: UInt64) { now.withLock { $0 += delta } }
    public func set(_ value: UInt64) { now.withLock { $0 = value } }
}
