import VigilSystem

/// The loop's timers: a handful of named deadlines on one timerfd (CLOCK_MONOTONIC).
struct Scheduler {
    enum Timer: Hashable {
        case closeScanWindow
        case checkpoint
        case stopAfterDuration
        case ladderDeadline
        case outboxAttempt
        case commandTimeout
        case gesture
        case pattern
        case airtime
        case retention
    }

    private(set) var deadlines: [Timer: UInt64] = [:]
    let timerFD: TimerFD

    init() throws { timerFD = try TimerFD() }

    mutating func schedule(_ timer: Timer, atMonotonicNanoseconds deadline: UInt64) throws {
        deadlines[timer] = deadline
        try rearm()
    }

    mutating func cancel(_ timer: Timer) throws {
        deadlines[timer] = nil
        try rearm()
    }

    /// Removes and returns the timers that are due, earliest first.
    mutating func takeDue(now: UInt64) throws -> [Timer] {
        timerFD.drain()
        let due = deadlines.filter { $0.value <= now }.sorted { $0.value < $1.value }.map(\.key)
        for t in due { deadlines[t] = nil }
        try rearm()
        return due
    }

    private func rearm() throws {
        guard let next = deadlines.values.min() else {
            try timerFD.disarm()
            return
        }
        let now = monotonicNanoseconds()
        try timerFD.arm(afterNanoseconds: next > now ? next - now : 0)
    }
}
