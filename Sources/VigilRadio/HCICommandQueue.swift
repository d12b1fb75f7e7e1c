/// Tracks the host's commands to their Command Complete or Command Status.
///
/// The controller grants command credits (Num_HCI_Command_Packets in every Command Complete and
/// Command Status): the host may have that many commands outstanding and no more. Vigil keeps at
/// most one in flight besides, because each step of its setup depends on the one before. A
/// command not answered by its deadline is reported by `expired(now:)`; `failAll()` ends every
/// command when the socket closes, so none is left dangling.
///
/// Pure: times are passed in.
public struct HCICommandQueue: Sendable {
    public struct Pending: Sendable, Equatable {
        public let command: HCICommand
        /// Caller's tag, to know which step a completion answers.
        public let tag: UInt32
        public var deadline: UInt64 = 0
    }

    public enum Completion: Sendable, Equatable {
        /// Command Complete: `parameters` start with the status byte for nearly every command.
        case complete(Pending, parameters: [UInt8])
        /// Command Status: the controller accepted (status 0) or refused the command.
        case status(Pending, status: UInt8)
    }

    private var waiting: [Pending] = []
    private var waitingHead = 0
    public private(set) var inFlight: Pending?
    /// Commands the controller will take now. One after a reset or a fresh socket, as the
    /// specification lets a host assume.
    public private(set) var credits: Int = 1
    public let timeoutMicroseconds: UInt64
    /// Completions of commands this host did not send (the kernel's, on the raw channel).
    public private(set) var foreignCompletions: UInt64 = 0
    public private(set) var timedOut: UInt64 = 0

    public init(timeoutMicroseconds: UInt64) {
        self.timeoutMicroseconds = timeoutMicroseconds
    }

    public var isIdle: Bool { inFlight == nil && waitingHead == waiting.count }
    public var queued: Int { waiting.count - waitingHead }

    public mutating func enqueue(_ command: HCICommand, tag: UInt32 = 0) {
        waiting.append(Pending(command: command, tag: tag))
    }

    /// The next command to write now, if a credit allows and none is in flight.
    public mutating func next(now: UInt64) -> Pending? {
        guard inFlight == nil, credits > 0, waitingHead < waiting.count else { return nil }
        var command = waiting[waitingHead]
        waitingHead += 1
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        }
        command.deadline = now &+ timeoutMicroseconds
        credits -= 1
        inFlight = command
        return command
    }

    /// A Command Complete event. Every such event renews the credits, whoever sent the command.
    public mutating func complete(opcode: UInt16, credits newCredits: UInt8, parameters: [UInt8]) -> Completion? {
        credits = Int(newCredits)
        guard let pending = inFlight, pending.command.opcode == opcode, opcode != 0 else {
            // Opcode 0x0000 is a NOP: the controller only announcing credits.
            if opcode != 0 { foreignCompletions += 1 }
            return nil
        }
        inFlight = nil
        return .complete(pending, parameters: parameters)
    }

    public mutating func status(opcode: UInt16, credits newCredits: UInt8, status: UInt8) -> Completion? {
        credits = Int(newCredits)
        guard let pending = inFlight, pending.command.opcode == opcode, opcode != 0 else {
            if opcode != 0 { foreignCompletions += 1 }
            return nil
        }
        inFlight = nil
        return .status(pending, status: status)
    }

    /// The earliest deadline to arm a timer for.
    public var nextDeadline: UInt64? { inFlight?.deadline }

    /// The in-flight command whose deadline has passed, removed. A controller that stops
    /// answering stops granting credits too, so the caller treats this as the controller failing.
    public mutating func expired(now: UInt64) -> Pending? {
        guard let pending = inFlight, pending.deadline <= now else { return nil }
        inFlight = nil
        timedOut += 1
        return pending
    }

    /// Drops the commands not yet sent (a sequence that cannot go on); the one in flight, if any,
    /// still waits for its completion, and the credits stay as the controller gave them.
    public mutating func discardQueued() {
        waiting.removeAll()
        waitingHead = 0
    }

    /// Ends every command (the socket closed); returns them so each can be reported.
    public mutating func failAll() -> [Pending] {
        var all = inFlight.map { [$0] } ?? []
        all += waiting[waitingHead...]
        waiting.removeAll()
        waitingHead = 0
        inFlight = nil
        credits = 1
        return all
    }
}
