import VigilSystem

/// A board in memory: button presses are scheduled by `press` (from `vigil sim press`) and
/// delivered through a timer at their time; every output change is recorded as a transition.
///
/// Press times are on the injected monotonic clock, the clock the node measures gestures on, so
/// a test with a `ManualClock` presses, advances the clock and reads the edges without sleeping.
public final class SimulatedBoard: BoardAdapter {
    public struct Transition: Sendable, Equatable, Codable {
        public var timeMicroseconds: UInt64
        public var line: OutputLine
        public var on: Bool
    }

    public let profile: BoardProfile
    public var descriptor: Int32 { timer.fd }
    private let monotonic: any MonotonicClock
    private let timer: ClockTimer
    /// Edges not yet delivered, sorted by monotonic time.
    private var scheduled: [ButtonEdge] = []
    private var levels: [OutputLine: Bool] = [:]
    /// Recent transitions, oldest first; bounded (older ones are dropped, counted).
    public private(set) var transitions: [Transition] = []
    public private(set) var droppedTransitions: UInt64 = 0
    public let transitionLimit: Int

    public init(profile: BoardProfile = .simulated, transitionLimit: Int = 1_000,
                monotonic: any MonotonicClock = SystemMonotonicClock()) throws {
        self.profile = profile
        self.transitionLimit = transitionLimit
        self.monotonic = monotonic
        self.timer = try ClockTimer(clock: monotonic)
    }

    public func start() throws {
        for line in OutputLine.allCases { levels[line] = false }
    }

    public func stop() {
        try? timer.disarm()
        scheduled.removeAll()
    }

    /// Schedules a press `afterMicroseconds` from now and its release `holdMicroseconds` later,
    /// with optional contact bounce (`bounces` extra short edge pairs of `bounceMicroseconds`
    /// right after the press).
    public func press(holdMicroseconds: UInt64, bounces: Int = 0, bounceMicroseconds: UInt64 = 2_000,
                      afterMicroseconds: UInt64 = 0, line pressedLine: UInt32? = nil) throws {
        // The figures come from the command line: saturate rather than trap on absurd ones.
        let now = Self.add(monotonic.nowNanoseconds(), Self.nanoseconds(afterMicroseconds))
        let line = pressedLine ?? profile.button.offset
        var edges = [ButtonEdge(line: line, pressed: true, kernelTimestampNanoseconds: now)]
        var t = now
        for _ in 0..<max(0, bounces) {
            t = Self.add(t, Self.nanoseconds(bounceMicroseconds))
            edges.append(ButtonEdge(line: line, pressed: false, kernelTimestampNanoseconds: t))
            t = Self.add(t, Self.nanoseconds(bounceMicroseconds))
            edges.append(ButtonEdge(line: line, pressed: true, kernelTimestampNanoseconds: t))
        }
        edges.append(ButtonEdge(line: line, pressed: false, kernelTimestampNanoseconds: Self.add(now, Self.nanoseconds(holdMicroseconds))))
        scheduled.append(contentsOf: edges)
        scheduled.sort { $0.kernelTimestampNanoseconds < $1.kernelTimestampNanoseconds }
        try arm()
    }

    private static func nanoseconds(_ microseconds: UInt64) -> UInt64 {
        microseconds > UInt64.max / 1_000 ? UInt64.max : microseconds * 1_000
    }

    private static func add(_ a: UInt64, _ b: UInt64) -> UInt64 { a > UInt64.max - b ? UInt64.max : a + b }

    public func readReady(into edges: inout [ButtonEdge]) throws {
        timer.drain()
        let now = monotonic.nowNanoseconds()
        let due = scheduled.prefix { $0.kernelTimestampNanoseconds <= now }
        edges.append(contentsOf: due)
        scheduled.removeFirst(due.count)
        try arm()
    }

    private func arm() throws {
        guard let next = scheduled.first else { return }
        try timer.arm(atNanoseconds: next.kernelTimestampNanoseconds)
    }

    public func drive(_ line: OutputLine, on: Bool, timeMicroseconds: UInt64) throws {
        guard levels[line] != on else { return }
        levels[line] = on
        transitions.append(Transition(timeMicroseconds: timeMicroseconds, line: line, on: on))
        if transitions.count > transitionLimit {
            transitions.removeFirst(transitions.count - transitionLimit)
            droppedTransitions += 1
        }
    }

    public func level(_ line: OutputLine) -> Bool { levels[line] ?? false }
}
