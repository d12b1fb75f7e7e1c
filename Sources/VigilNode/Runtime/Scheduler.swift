import VigilSystem

/// The loop's timers: named deadlines on one `ClockTimer`, in monotonic time from the injected
/// clock.
///
/// A component registers a handler for each of its timers once (`register`), then arms and
/// cancels them as its state changes. The descriptor is only a wake-up: when it is readable the
/// scheduler asks the clock what is due. On a test's `ManualClock` it becomes readable when
/// `advance` reaches the earliest deadline, so tests fire timers without sleeping.
/// Arming can fail (a timerfd error): that goes to `onFailure`, the node's failure path, never
/// dropped.
final class Scheduler {
    /// A timer's name. Components declare theirs as static constants (`Scheduler.Timer("ladder")`).
    struct Timer: Hashable, Sendable, CustomStringConvertible {
        let name: String
        init(_ name: String) { self.name = name }
        var description: String { name }
    }

    private(set) var deadlines: [Timer: UInt64] = [:]
    private var handlers: [Timer: () -> Void] = [:]
    let timer: ClockTimer
    let clock: any MonotonicClock
    private let onFailure: (String, SystemError) -> Void

    init(clock: any MonotonicClock, onFailure: @escaping (String, SystemError) -> Void) throws(SystemError) {
        timer = try ClockTimer(clock: clock)
        self.clock = clock
        self.onFailure = onFailure
    }

    var now: UInt64 { clock.nowNanoseconds() }

    /// What runs when `timer` is due. One handler per timer, registered before it is armed.
    func register(_ timer: Timer, _ handler: @escaping () -> Void) {
        handlers[timer] = handler
    }

    /// Arms `timer` for the monotonic time `deadline` (replacing an earlier deadline).
    func schedule(_ timer: Timer, atNanoseconds deadline: UInt64) {
        deadlines[timer] = deadline
        rearm()
    }

    /// Arms `timer` to fire `delay` nanoseconds from now.
    func schedule(_ timer: Timer, afterNanoseconds delay: UInt64) {
        schedule(timer, atNanoseconds: now &+ delay)
    }

    func cancel(_ timer: Timer) {
        guard deadlines.removeValue(forKey: timer) != nil else { return }
        rearm()
    }

    func isArmed(_ timer: Timer) -> Bool { deadlines[timer] != nil }

    /// Whether some timer is due now and has not run yet (its wake-up is on its way).
    var hasDue: Bool {
        guard let next = deadlines.values.min() else { return false }
        return next <= now
    }

    /// Runs the handlers of every timer that is due, earliest first. A handler may arm timers
    /// again (its own included); those run on a later wake-up.
    func fireDue() {
        timer.drain()
        let now = self.now
        let due = deadlines.filter { $0.value <= now }.sorted { $0.value < $1.value }.map(\.key)
        for t in due { deadlines[t] = nil }
        rearm()
        for t in due { handlers[t]?() }
    }

    private func rearm() {
        do {
            guard let next = deadlines.values.min() else {
                try timer.disarm()
                return
            }
            try timer.arm(atNanoseconds: next)
        } catch {
            onFailure("the loop's timer cannot be armed", error)
        }
    }
}
