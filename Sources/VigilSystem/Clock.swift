import Synchronization

/// Where event times come from. Injected everywhere so tests and simulations control time.
public protocol WallClock: Sendable {
    /// Microseconds since the Unix epoch.
    func nowMicroseconds() -> UInt64
    /// How many clock microseconds pass per real microsecond (1 except in sped-up simulations);
    /// the loop divides delays by it when it arms timers.
    var rate: Double { get }
}

extension WallClock {
    public var rate: Double { 1 }
}

/// A clock that runs `rate` times faster than real time from when it was made, for
/// demonstrations (`vigil run --time-scale 60` shows a 30-minute ladder in 30 seconds).
public struct ScaledClock: WallClock {
    public let rate: Double
    private let startWall: UInt64
    private let startMonotonic: UInt64

    public init(rate: Double, startMicroseconds: UInt64 = realtimeMicroseconds()) {
        self.rate = max(rate, 0.001)
        startWall = startMicroseconds
        startMonotonic = monotonicNanoseconds()
    }

    public func nowMicroseconds() -> UInt64 {
        let elapsed = Double(monotonicNanoseconds() &- startMonotonic) / 1_000
        return startWall &+ UInt64(elapsed * rate)
    }
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
