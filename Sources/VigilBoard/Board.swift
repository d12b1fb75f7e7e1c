@_exported import enum VigilCore.OutputLine
import VigilEvents

/// A button edge as the kernel reports it (libgpiod line event) or the simulation makes it.
public struct ButtonEdge: Sendable, Equatable {
    public var line: UInt32
    /// Logical edge: `.pressed` after active-low inversion, whatever the wiring.
    public var pressed: Bool
    /// CLOCK_MONOTONIC nanoseconds from the line event.
    public var kernelTimestampNanoseconds: UInt64

    public init(line: UInt32, pressed: Bool, kernelTimestampNanoseconds: UInt64) {
        self.line = line
        self.pressed = pressed
        self.kernelTimestampNanoseconds = kernelTimestampNanoseconds
    }
}

/// Which chip and lines a board uses (board/*.yaml).
public struct BoardProfile: Sendable, Equatable {
    public struct Line: Sendable, Equatable {
        public var offset: UInt32
        public var activeLow: Bool
        public init(offset: UInt32, activeLow: Bool = false) {
            self.offset = offset
            self.activeLow = activeLow
        }
    }
    public var name: String
    /// gpiochip name ("gpiochip0") or label ("pinctrl-bcm2711"); "sim" for the simulated board.
    public var chip: String
    public var button: Line
    public var outputs: [OutputLine: Line]
    /// Per-resident check-in buttons: resident id → line. A press is that resident's "I'm OK".
    public var checkInButtons: [String: Line]

    public init(name: String, chip: String, button: Line, outputs: [OutputLine: Line],
                checkInButtons: [String: Line] = [:]) {
        self.name = name
        self.chip = chip
        self.button = button
        self.outputs = outputs
        self.checkInButtons = checkInButtons
    }

    /// The resident whose check-in button is on `line`, if any.
    public func checkInResident(line: UInt32) -> String? {
        checkInButtons.first { $0.value.offset == line }?.key
    }

    /// The simulated board's profile, used when board/sim.yaml is not at hand.
    public static let simulated = BoardProfile(
        name: "sim", chip: "sim", button: Line(offset: 0, activeLow: true),
        outputs: [.red: Line(offset: 1), .amber: Line(offset: 2), .green: Line(offset: 3),
                  .blue: Line(offset: 4), .buzzer: Line(offset: 5)])
}

/// The interface every board implements: the simulated board and libgpiod.
///
/// Contract: the loop watches `descriptor` (an epoll fd over every input line's event fd, or the
/// simulation's timerfd) and calls `readReady` only when it is readable. `drive` is idempotent: driving a line
/// to the level it already has changes nothing.
public protocol BoardAdapter: AnyObject {
    var profile: BoardProfile { get }
    var descriptor: Int32 { get }
    func start() throws
    func readReady(into edges: inout [ButtonEdge]) throws
    /// Sets an output; `timeMicroseconds` is the node's event time of the decision.
    func drive(_ line: OutputLine, on: Bool, timeMicroseconds: UInt64) throws
    /// Releases the lines (outputs off).
    func stop()
}
