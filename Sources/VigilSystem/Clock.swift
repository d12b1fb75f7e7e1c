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

/// Where waits and measurements take their time from: deadlines, back-off, timeouts, gesture and
/// pattern timing. It never goes back and does not follow the wall clock's steps.
///
/// Everything that waits or measures takes one of these instead of reading CLOCK_MONOTONIC
/// itself, so unit tests drive time with a `ManualClock` and never sleep. A timerfd armed from a
/// delay computed with this clock is only a wake-up: whoever wakes asks the clock what is due.
public protocol MonotonicClock: Sendable {
    /// Nanoseconds since an arbitrary fixed point (boot, for the system's clock).
    func nowNanoseconds() -> UInt64
    /// Calls `observer` (on the advancing thread) whenever time moves by something other than
    /// real time passing, so a loop sleeping on a timerfd can look again. The system's clock
    /// never does; a manual clock does on every `advance`.
    func onAdvance(_ observer: @escaping @Sendable () -> Void)
}

extension MonotonicClock {
    public func onAdvance(_ observer: @escaping @Sendable () -> Void) {}
}

/// CLOCK_MONOTONIC.
public struct SystemMonotonicClock: MonotonicClock {
    public init() {}
    public func nowNanoseconds() -> UInt64 { monotonicNanoseconds() }
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

/// A clock that moves only when told to, for tests: wall time and monotonic time move together,
/// so one value can be given as both clocks. `advance` tells the observers (a node's loop wakes
/// and fires what became due).
public final class ManualClock: WallClock, MonotonicClock {
    private struct State {
        var wallMicroseconds: UInt64
        var monotonicNanoseconds: UInt64
        var observers: [@Sendable () -> Void] = []
    }
    private let state: Mutex<State>

    public init(startMicroseconds: UInt64 = 1_767_225_600_000_000, monotonicStartNanoseconds: UInt64 = 1_000_000_000) {
        state = Mutex(State(wallMicroseconds: startMicroseconds, monotonicNanoseconds: monotonicStartNanoseconds))
    }

    public func nowMicroseconds() -> UInt64 { state.withLock { $0.wallMicroseconds } }
    public func nowNanoseconds() -> UInt64 { state.withLock { $0.monotonicNanoseconds } }

    public func onAdvance(_ observer: @escaping @Sendable () -> Void) {
        state.withLock { $0.observers.append(observer) }
    }

    /// Moves both clocks forward by `delta` microseconds and tells the observers.
    public func advance(byMicroseconds delta: UInt64) {
        let observers = state.withLock { s in
            s.wallMicroseconds &+= delta
            s.monotonicNanoseconds &+= delta &* 1_000
            return s.observers
        }
        for o in observers { o() }
    }

    /// Moves both clocks forward by `delta` nanoseconds and tells the observers.
    public func advance(byNanoseconds delta: UInt64) {
        let observers = state.withLock { s in
            s.wallMicroseconds &+= delta / 1_000
            s.monotonicNanoseconds &+= delta
            return s.observers
        }
        for o in observers { o() }
    }

    /// Sets the wall clock (a step, as NTP or an operator would make); monotonic time stays.
    public func set(_ value: UInt64) {
        let observers = state.withLock { s in
            s.wallMicroseconds = value
            return s.observers
        }
        for o in observers { o() }
    }
}
