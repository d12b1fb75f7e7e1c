import VigilSystem

/// A real board: the button and outputs of a board profile on a GPIO chip, through libgpiod v1.
///
/// Every line is requested in `init`, so a wrong chip, a busy line or a missing permission stops
/// the node before it starts, with a message naming chip and line. The lines are held until
/// `stop()` (or deinit): the kernel then gives them to no one else, and `gpioinfo` shows them
/// as used by "vigil".
///
/// Button: requested for both edges; `descriptor` is its line-event fd, made non-blocking, which
/// the node's epoll loop watches. `readReady` drains the kernel FIFO without ever blocking.
///
/// Edge semantics (libgpiod 1.6 on the v1 character-device ABI, checked on Linux 6.1 in the VM
/// by Tests/vm/gpio-backend.sh): for a both-edges request the kernel does not report the pin's
/// transition; when it handles the interrupt it reads the line's *logical* level (active-low
/// applied, as requested with GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) and reports RISING if it is 1,
/// FALLING if 0. So on an active-low button wired to ground, pressing (the pin falls to 0 V)
/// arrives as RISING, releasing as FALLING; `pressed` is simply `rising`, whatever the wiring.
/// Because the level is sampled when the interrupt is handled, two events of a fast bounce can
/// carry the same type; their timestamps still increase. Debouncing is the node's job; this
/// backend reports every edge the kernel reports.
///
/// Outputs: requested as outputs at logical 0 ("off", so an active-low LED's pin is driven
/// high), and driven by logical level: the kernel inverts for active-low lines. `drive` makes
/// no syscall when the line already has the requested level. Outputs missing from the profile
/// are not driven.
public final class GPIOBoard: BoardAdapter {
    /// The consumer name the kernel shows for every line Vigil holds.
    public static let consumer = "vigil"

    public let profile: BoardProfile
    /// The chip as the kernel names it ("gpiochip0") and labels it ("pinctrl-bcm2711").
    public let chipName: String
    public let chipLabel: String
    /// Edges the kernel dropped and the board made up from the line's level.
    public private(set) var droppedEdges: UInt64 = 0
    /// An epoll descriptor over the line-event fds of every input (the SOS button and the
    /// check-in buttons): readable when any of them has an edge. -1 after `stop()`.
    public var descriptor: Int32 { inputs == nil ? -1 : (events?.fd ?? -1) }

    private var chip: GPIOChip?
    private var button: GPIOLine?
    /// Input lines by offset, with their event fds.
    private var inputs: [UInt32: (line: GPIOLine, fd: Int32)]? = [:]
    private var events: Epoll?
    /// The logical level each input last reported (by edge), to notice edges the kernel dropped.
    private var reportedLevel: [UInt32: Bool] = [:]
    /// Lines whose last edge was reported from the level: the kernel may still deliver its own
    /// event for that edge (it was being queued as the FIFO drained), which is then dropped.
    private var reportedFromLevel: Set<UInt32> = []
    /// The time of the last edge reported per line: an edge reported from the level carries
    /// the time it was noticed, so kernel events queued before it must not go back in time.
    private var reportedTime: [UInt32: UInt64] = [:]
    private var outputs: [OutputLine: GPIOLine] = [:]
    private var levels: [OutputLine: Bool] = [:]
    private var pending: [GPIOLineEvent] = []
    /// Times an edge the kernel dropped, when the board makes it up from the level. Kernel
    /// edges keep the kernel's CLOCK_MONOTONIC stamps, so this should be the system's clock
    /// whenever the lines are real; it is injected so that the node's one clock is used.
    private let monotonic: any MonotonicClock

    public init(profile: BoardProfile, monotonic: any MonotonicClock = SystemMonotonicClock()) throws(BoardError) {
        self.profile = profile
        self.monotonic = monotonic
        let chipID = profile.chip
        try Self.checkDistinctLines(profile)

        let chip: GPIOChip
        do {
            chip = try GPIOChip.open(chipID)
        } catch {
            if error.isPermission { throw BoardError.permissionDenied(chip: chipID) }
            if error.isMissing { throw BoardError.chipNotFound(chip: chipID, available: GPIOChip.inventory()) }
            throw BoardError.system(chip: chipID, line: nil, operation: error.operation, errno: error.errno)
        }
        self.chip = chip
        chipName = chip.name
        chipLabel = chip.label

        do throws(BoardError) {
            for (role, line) in Self.roles(profile) where line.offset >= chip.lineCount {
                throw BoardError.lineOutOfRange(chip: chipID, line: line.offset, role: role, lineCount: chip.lineCount)
            }
            let epoll: Epoll
            do { epoll = try Epoll() } catch {
                throw BoardError.system(chip: chipID, line: nil, operation: error.operation, errno: error.errno)
            }
            events = epoll
            button = try input(profile.button, role: "button", chip: chip, epoll: epoll)
            for (resident, spec) in profile.checkInButtons.sorted(by: { $0.key < $1.key }) {
                _ = try input(spec, role: "check-in button for \(resident)", chip: chip, epoll: epoll)
            }
            for output in OutputLine.allCases {
                guard let spec = profile.outputs[output] else { continue }
                outputs[output] = try take(spec, role: output.rawValue, from: chip) { (line) throws(GPIODError) in
                    try line.requestOutput(consumer: Self.consumer, activeLow: spec.activeLow, initial: false)
                }
                levels[output] = false
            }
        } catch {
            release()
            throw error
        }
    }

    deinit { release() }

    /// Nothing to do: the lines were requested in `init` and outputs start off.
    public func start() throws {}

    /// Requests an input line for both edges and adds its event fd to the inner epoll set.
    private func input(_ spec: BoardProfile.Line, role: String, chip: GPIOChip, epoll: Epoll) throws(BoardError) -> GPIOLine {
        let line = try take(spec, role: role, from: chip) { (line) throws(GPIODError) in
            try line.requestBothEdges(consumer: Self.consumer, activeLow: spec.activeLow)
        }
        let fd = try gpio(spec.offset) { () throws(GPIODError) in try line.eventDescriptor() }
        try gpio(spec.offset) { () throws(GPIODError) in try GPIOEvents.setNonBlocking(fd) }
        inputs?[spec.offset] = (line, fd)
        reportedLevel[spec.offset] = (try? line.value()) ?? false
        do {
            try epoll.add(fd, token: UInt64(spec.offset))
        } catch {
            throw BoardError.system(chip: profile.chip, line: spec.offset, operation: error.operation, errno: error.errno)
        }
        return line
    }

    /// Appends every pending edge of every ready input, never blocking: for each line the inner
    /// epoll reports, reads until its kernel FIFO is empty (a short read means it was). Edges
    /// of different lines are ordered by their kernel timestamps.
    public func readReady(into edges: inout [ButtonEdge]) throws {
        guard let events, let inputs else { return }
        let ready: [Epoll.Ready]
        do { ready = try events.wait(timeoutMilliseconds: 0) } catch {
            throw BoardError.system(chip: profile.chip, line: nil, operation: error.operation, errno: error.errno)
        }
        let first = edges.count
        for r in ready {
            let offset = UInt32(truncatingIfNeeded: r.token)
            guard let fd = inputs[offset]?.fd else { continue }
            var fifoWasFull = false
            while true {
                pending.removeAll(keepingCapacity: true)
                let n = try gpio(offset) { () throws(GPIODError) in try GPIOEvents.read(fd, into: &pending) }
                for event in pending {
                    if reportedFromLevel.remove(offset) != nil, event.rising == reportedLevel[offset] { continue }
                    let time = max(event.timestampNanoseconds, reportedTime[offset] ?? 0)
                    edges.append(ButtonEdge(line: offset, pressed: event.rising, kernelTimestampNanoseconds: time))
                    reportedLevel[offset] = event.rising
                    reportedTime[offset] = time
                }
                if n < GPIOEvents.batch { break }
                fifoWasFull = true
            }
            // The kernel's event FIFO holds 16 edges and drops the newest when full (a bounce
            // burst during a stall). Then, if the line's level disagrees with the last edge we
            // reported, an edge was lost: report it now, so a dropped release can never leave
            // the button "held" and fire a false SOS (or cancel a real one).
            // Only when the FIFO was full: otherwise nothing was dropped, and a level that
            // disagrees means an edge whose event the kernel is still queueing (the level changes
            // before the interrupt is handled), which would then be reported twice.
            if fifoWasFull, let line = inputs[offset]?.line, let level = try? line.value(), level != reportedLevel[offset] {
                let time = max(monotonic.nowNanoseconds(), reportedTime[offset] ?? 0)
                edges.append(ButtonEdge(line: offset, pressed: level, kernelTimestampNanoseconds: time))
                reportedLevel[offset] = level
                reportedTime[offset] = time
                reportedFromLevel.insert(offset)
                droppedEdges += 1
            }
        }
        if ready.count > 1 { edges[first...].sort { $0.kernelTimestampNanoseconds < $1.kernelTimestampNanoseconds } }
    }

    /// Whether the button is pressed now (logical level 1), e.g. held down while the node starts.
    public func buttonPressed() throws(BoardError) -> Bool {
        guard let button else { return false }
        return try gpio(profile.button.offset) { () throws(GPIODError) in try button.value() }
    }

    public func drive(_ line: OutputLine, on: Bool, timeMicroseconds: UInt64) throws {
        guard let output = outputs[line], levels[line] != on else { return }
        try gpio(output.offset) { () throws(GPIODError) in try output.setValue(on) }
        levels[line] = on
    }

    /// The level last driven on an output; nil if the profile has no such output (or after stop).
    public func level(_ line: OutputLine) -> Bool? { levels[line] }

    /// Turns every output off, releases every line and closes the chip. Idempotent.
    public func stop() {
        release()
    }

    private func release() {
        // Off first: on a Raspberry Pi a released output keeps driving its last level.
        for (line, output) in outputs where levels[line] != false {
            try? output.setValue(false)
        }
        for output in outputs.values { output.release() }
        outputs.removeAll()
        levels.removeAll()
        for input in (inputs ?? [:]).values { input.line.release() }
        inputs = nil
        button = nil
        events = nil
        chip?.close()
        chip = nil
    }

    /// Gets a line and requests it, turning EBUSY into a message naming who holds it.
    private func take(_ spec: BoardProfile.Line, role: String, from chip: GPIOChip,
                      _ request: (GPIOLine) throws(GPIODError) -> Void) throws(BoardError) -> GPIOLine {
        let line = try gpio(spec.offset) { () throws(GPIODError) in try chip.line(spec.offset) }
        do throws(GPIODError) {
            try request(line)
        } catch {
            if error.isBusy {
                throw BoardError.lineBusy(chip: profile.chip, line: spec.offset, role: role, consumer: line.currentConsumer())
            }
            if error.isPermission { throw BoardError.permissionDenied(chip: profile.chip) }
            throw BoardError.system(chip: profile.chip, line: spec.offset, operation: error.operation, errno: error.errno)
        }
        return line
    }

    /// Runs a libgpiod call on `line`, turning its failure into a BoardError naming chip and line.
    private func gpio<T>(_ line: UInt32, _ body: () throws(GPIODError) -> T) throws(BoardError) -> T {
        do {
            return try body()
        } catch {
            throw BoardError.system(chip: profile.chip, line: line, operation: error.operation, errno: error.errno)
        }
    }

    private static func roles(_ profile: BoardProfile) -> [(String, BoardProfile.Line)] {
        [("button", profile.button)] + OutputLine.allCases.compactMap { o in profile.outputs[o].map { (o.rawValue, $0) } }
            + profile.checkInButtons.sorted { $0.key < $1.key }.map { ("check-in button for \($0.key)", $0.value) }
    }

    private static func checkDistinctLines(_ profile: BoardProfile) throws(BoardError) {
        var seen: [UInt32: String] = [:]
        for (role, line) in roles(profile) {
            if let other = seen[line.offset] {
                throw BoardError.duplicateLine(chip: profile.chip, line: line.offset, roles: [other, role])
            }
            seen[line.offset] = role
        }
    }
}
