internal import CVigilLinux

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
    /// True for a clock that moves only when told (`ManualClock`): a kernel timer armed from its
    /// delays would fire on real time, which means nothing to it, so `ClockTimer` waits for
    /// `onAdvance` instead. False (the default) for clocks that move with real time.
    var isManual: Bool { get }
}

extension MonotonicClock {
    public func onAdvance(_ observer: @escaping @Sendable () -> Void) {}
    public var isManual: Bool { false }
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
    private let state: LockedValue<State>

    public init(startMicroseconds: UInt64 = 1_767_225_600_000_000, monotonicStartNanoseconds: UInt64 = 1_000_000_000) {
        state = LockedValue(State(wallMicroseconds: startMicroseconds, monotonicNanoseconds: monotonicStartNanoseconds))
    }

    public func nowMicroseconds() -> UInt64 { state.withLock { $0.wallMicroseconds } }
    public func nowNanoseconds() -> UInt64 { state.withLock { $0.monotonicNanoseconds } }
    public var isManual: Bool { true }

    public func onAdvance(_ observer: @escaping @Sendable () -> Void) {
        state.withLock { $0.observers.append(observer) }
    }

    /// Moves both clocks forward by `delta` microseconds and tells the observers. The observers
    /// run after the move, outside the clock's lock: they may read the clock.
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

/// A wake-up for an event loop on a monotonic clock: one descriptor, readable once the clock
/// reaches the deadline it was armed for.
///
/// On a clock that moves with real time it is a timerfd armed for the delay the clock gives. On
/// a manual clock no kernel timer is armed: each `advance` checks the deadline and, when it has
/// come, signals an eventfd, so a test that advances the clock finds the descriptor readable at
/// once and never sleeps. Either way it is only a wake-up: whoever wakes asks the clock what is
/// due, and a wake-up with nothing due is harmless.
public final class ClockTimer: Sendable {
    public let clock: any MonotonicClock
    /// Readable when the deadline has come (an epoll over the timerfd and the eventfd).
    public var fd: Int32 { epoll.fd }

    private let epoll: Epoll
    private let timer: TimerFD
    private let due: EventFD
    /// The armed deadline (clock nanoseconds), for the manual clock's observer.
    private let deadline = LockedValue<UInt64?>(nil)

    public init(clock: any MonotonicClock) throws(SystemError) {
        self.clock = clock
        epoll = try Epoll()
        timer = try TimerFD()
        due = try EventFD()
        try epoll.add(timer.fd, token: 0)
        try epoll.add(due.fd, token: 1)
        guard clock.isManual else { return }
        // Weak: the clock outlives its timers in tests that make many; a dead timer's observer
        // does nothing (observers cannot be removed).
        clock.onAdvance { [weak self] in self?.clockMoved() }
    }

    /// Readable once the clock reaches `deadline` (nanoseconds on `clock`); at once if it has.
    /// Replaces any earlier deadline.
    public func arm(atNanoseconds deadline: UInt64) throws(SystemError) {
        if clock.isManual {
            // The deadline first, then the time: an advance racing with this either finds the
            // deadline or is seen here, so no wake-up is lost (at worst there are two).
            self.deadline.withLock { $0 = deadline }
            if deadline <= clock.nowNanoseconds() { fire() }
            return
        }
        let now = clock.nowNanoseconds()
        // A delay of 0 still fires (the shim makes it 1 ns: 0 would disarm).
        try timer.arm(afterNanoseconds: deadline > now ? deadline - now : 0)
    }

    /// Readable `delay` nanoseconds from now on `clock`.
    public func arm(afterNanoseconds delay: UInt64) throws(SystemError) {
        let now = clock.nowNanoseconds()
        try arm(atNanoseconds: now > UInt64.max - delay ? UInt64.max : now + delay)
    }

    /// No wake-up until armed again, not even one already due (a disarmed timer is unreadable).
    public func disarm() throws(SystemError) {
        deadline.withLock { $0 = nil }
        due.drain()
        try timer.disarm() // also clears expirations not yet read
    }

    /// Makes the descriptor unreadable until the next deadline; call on every wake-up.
    public func drain() {
        timer.drain()
        due.drain()
    }

    private func clockMoved() {
        let now = clock.nowNanoseconds()
        let reached = deadline.withLock { d -> Bool in
            guard let at = d, at <= now else { return false }
            d = nil
            return true
        }
        if reached { fire() }
    }

    private func fire() {
        deadline.withLock { $0 = nil }
        due.signal()
    }
}

/// Monotonic nanoseconds, for measuring intervals (never for event times).
public func monotonicNanoseconds() -> UInt64 { cvigil_monotonic_ns() }

/// Wall-clock microseconds since the Unix epoch.
public func realtimeMicroseconds() -> UInt64 { cvigil_realtime_us() }
