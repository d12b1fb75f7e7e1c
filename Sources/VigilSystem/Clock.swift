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

/// A clock that runs `rate` times faster than real time, for demonstrations
/// (`vigil run --time-scale 60` shows a 30-minute ladder in 30 seconds).
///
/// Time counts from `origin`: now = origin + (real now − origin) × rate. With the same origin
/// (the CLI keeps it in the data directory), simulated time is continuous across restarts and
/// downtime passes at the same rate, so a deadline missed while the node was down is overdue
/// when it comes back, exactly as in real time.
public struct ScaledClock: WallClock {
    public let rate: Double
    public let originMicroseconds: UInt64

    public init(rate: Double, originMicroseconds: UInt64 = realtimeMicroseconds()) {
        self.rate = max(rate, 0.001)
        self.originMicroseconds = originMicroseconds
    }

    public func nowMicroseconds() -> UInt64 {
        let real = realtimeMicroseconds()
        guard real > originMicroseconds else { return real }
        return originMicroseconds &+ UInt64(Double(real - originMicroseconds) * rate)
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
