/// Exponential back-off: the first failure waits `base`, each further one twice as long, never
/// more than `max`. The one rule for every retry in Vigil (the radio's recovery and advertising,
/// the outbox's deliveries), so a figure is read in one place and tested once.
///
/// Pure, and unit-free: `base` and `max` are in whatever unit the caller counts (microseconds
/// for all current users); times are the caller's, this only says how long to wait.
public struct Backoff: Sendable, Equatable {
    public let base: UInt64
    public let max: UInt64
    /// Failures in the current streak: what the next `next()` counts on.
    public private(set) var failures: UInt32 = 0

    public init(base: UInt64, max: UInt64) {
        self.base = base
        self.max = max
    }

    /// The wait after the `failures`-th failure in a row: 0 before any, then
    /// min(max, base × 2^(failures − 1)). Saturates rather than overflows, however long the streak.
    public func delay(afterFailures failures: UInt32) -> UInt64 {
        guard failures > 0, base > 0 else { return 0 }
        let shift = UInt64(Swift.min(failures - 1, 63))
        // base << shift > max, without computing base << shift (which may overflow).
        if base > max >> shift { return max }
        return base << shift
    }

    /// Counts one more failure and returns how long to wait before the next try.
    public mutating func next() -> UInt64 {
        if failures < UInt32.max { failures += 1 }
        return delay(afterFailures: failures)
    }

    /// A success (or a long enough quiet spell): the next failure waits `base` again.
    public mutating func reset() { failures = 0 }

    /// True when no failure has been counted since the start or the last `reset()`: the first
    /// failure of a streak, which is worth telling someone about once.
    public var isFresh: Bool { failures == 0 }
}
