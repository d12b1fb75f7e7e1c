internal import CGPIOD
import VigilSystem
#if canImport(Glibc)
import Glibc
#endif

// Every libgpiod call Vigil makes is in this file, against libgpiod v1 (Debian 12 ships 1.6.3;
// Raspberry Pi OS bookworm the same). Each call is wrapped once: a -1 or NULL result becomes a
// `GPIODError` carrying the operation and errno, so no caller reads errno or an Int32 result.
// Nothing here knows about boards, roles or profiles; GPIOBoard turns these errors into
// `BoardError`s that name the chip and line.

/// A failed libgpiod call: which one, and the errno it left.
struct GPIODError: Error, Sendable {
    let operation: String
    let errno: Errno

    var isBusy: Bool { errno == .busy }
    var isPermission: Bool { errno == .accessDenied || errno.rawValue == EPERM }
    /// ENOENT: no such device node; ENOTTY/ENODEV: a path that is not a gpiochip.
    var isMissing: Bool { errno == .noEntry || errno.rawValue == ENODEV || errno.rawValue == ENOTTY }
}

@inline(__always)
private func gpiod(_ operation: String, _ body: () -> Int32) throws(GPIODError) -> Int32 {
    // libgpiod sets errno on every failure path; ErrnoCall reads it at once (EIO if a failed
    // allocation inside the library left none).
    switch ErrnoCall.negativeFails(body) {
    case .success(let result): return result
    case .failure(let e): throw GPIODError(operation: operation, errno: e)
    }
}

private func isDecimal(_ text: Substring) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
}

/// An open GPIO chip (/dev/gpiochipN). Owns every `GPIOLine` taken from it: closing the chip
/// releases and frees them, so a line must not be used after its chip is closed.
final class GPIOChip {
    private var handle: OpaquePointer?
    /// Kernel name ("gpiochip0") and label ("pinctrl-bcm2711", "vigil-sim").
    let name: String
    let label: String
    let lineCount: UInt32

    private init(_ handle: OpaquePointer) {
        self.handle = handle
        name = gpiod_chip_name(handle).map { String(cString: $0) } ?? "?"
        label = gpiod_chip_label(handle).map { String(cString: $0) } ?? "?"
        lineCount = gpiod_chip_num_lines(handle)
    }

    deinit { close() }

    /// Opens a chip by what a board profile says:
    /// - a path ("/dev/gpiochip0"),
    /// - a kernel name ("gpiochip0") or number ("0"), which can change between kernels,
    /// - anything else is a label ("pinctrl-bcm2711"), which is stable for a given SoC.
    ///
    /// Unlike `gpiod_chip_open_lookup`, which tries every form in turn and reports whatever errno
    /// the last attempt left (a label lookup that hit EACCES would end as ENOENT from the name
    /// attempt), each form is tried only when it is the one meant, so the errno is the real one.
    static func open(_ descriptor: String) throws(GPIODError) -> GPIOChip {
        let opened: Result<OpaquePointer, Errno>
        let operation: String
        if descriptor.hasPrefix("/") {
            operation = "gpiod_chip_open(\(descriptor))"
            opened = ErrnoCall.nilFails { gpiod_chip_open(descriptor) }
        } else if descriptor.hasPrefix("gpiochip"), isDecimal(descriptor.dropFirst(8)) {
            operation = "gpiod_chip_open_by_name(\(descriptor))"
            opened = ErrnoCall.nilFails { gpiod_chip_open_by_name(descriptor) }
        } else if isDecimal(Substring(descriptor)), let number = UInt32(descriptor) {
            operation = "gpiod_chip_open_by_number(\(number))"
            opened = ErrnoCall.nilFails { gpiod_chip_open_by_number(number) }
        } else {
            // Opens every /dev/gpiochip* to read its label: EACCES here means this user cannot
            // open the chips at all, ENOENT that none has the label.
            operation = "gpiod_chip_open_by_label(\(descriptor))"
            opened = ErrnoCall.nilFails { gpiod_chip_open_by_label(descriptor) }
        }
        switch opened {
        case .success(let raw): return GPIOChip(raw)
        case .failure(let e): throw GPIODError(operation: operation, errno: e)
        }
    }

    /// "gpiochip0 [vigil-sim] (8 lines)" for every chip this user can open, like gpiodetect.
    /// Empty when there are none or they cannot be listed; only used for messages.
    static func inventory() -> [String] {
        guard let iterator = gpiod_chip_iter_new() else { return [] }
        defer { gpiod_chip_iter_free(iterator) }
        var found: [String] = []
        // gpiod_chip_iter_next closes the previous chip itself.
        while let chip = gpiod_chip_iter_next(iterator) {
            let name = gpiod_chip_name(chip).map { String(cString: $0) } ?? "?"
            let label = gpiod_chip_label(chip).map { String(cString: $0) } ?? "?"
            found.append("\(name) [\(label)] (\(gpiod_chip_num_lines(chip)) lines)")
        }
        return found
    }

    /// The line at `offset`, with its kernel-side info (consumer, flags) freshly read.
    func line(_ offset: UInt32) throws(GPIODError) -> GPIOLine {
        guard let handle else { throw GPIODError(operation: "gpiod_chip_get_line", errno: Errno(rawValue: EBADF)) }
        switch ErrnoCall.nilFails({ gpiod_chip_get_line(handle, offset) }) {
        case .success(let line): return GPIOLine(handle: line, offset: offset)
        case .failure(let e): throw GPIODError(operation: "gpiod_chip_get_line(\(offset))", errno: e)
        }
    }

    /// Releases every line still requested from this chip and closes it. Idempotent.
    func close() {
        guard let handle else { return }
        gpiod_chip_close(handle)
        self.handle = nil
    }
}

/// One line of an open chip. A plain handle: the chip frees it on close.
struct GPIOLine {
    fileprivate let handle: OpaquePointer
    let offset: UInt32

    /// The consumer name the current holder gave the kernel, re-read now (nil if none or unused).
    func currentConsumer() -> String? {
        guard gpiod_line_update(handle) == 0 else { return nil }
        return gpiod_line_consumer(handle).map { String(cString: $0) }
    }

    private static func flags(activeLow: Bool) -> Int32 {
        activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
    }

    /// Requests the line as an input reporting both edges. With `activeLow` the kernel inverts
    /// levels (and therefore which edge it calls rising; see GPIOBoard).
    func requestBothEdges(consumer: String, activeLow: Bool) throws(GPIODError) {
        _ = try gpiod("gpiod_line_request_both_edges_events_flags") {
            gpiod_line_request_both_edges_events_flags(handle, consumer, Self.flags(activeLow: activeLow))
        }
    }

    /// Requests the line as an output at the logical level `initial` (the kernel applies
    /// active-low, so "off" on an active-low LED drives the pin high).
    func requestOutput(consumer: String, activeLow: Bool, initial: Bool) throws(GPIODError) {
        _ = try gpiod("gpiod_line_request_output_flags") {
            gpiod_line_request_output_flags(handle, consumer, Self.flags(activeLow: activeLow), initial ? 1 : 0)
        }
    }

    /// The line-event descriptor of a line requested for events: readable when edges wait.
    func eventDescriptor() throws(GPIODError) -> Int32 {
        try gpiod("gpiod_line_event_get_fd") { gpiod_line_event_get_fd(handle) }
    }

    /// The logical (active-low applied) level.
    func value() throws(GPIODError) -> Bool {
        try gpiod("gpiod_line_get_value") { gpiod_line_get_value(handle) } != 0
    }

    /// Sets the logical level of an output line (one ioctl).
    func setValue(_ on: Bool) throws(GPIODError) {
        _ = try gpiod("gpiod_line_set_value") { gpiod_line_set_value(handle, on ? 1 : 0) }
    }

    /// Gives the line back to the kernel (closes its request descriptor). Safe on a line that
    /// is not requested.
    func release() {
        gpiod_line_release(handle)
    }
}

/// One edge as the kernel's line-event FIFO holds it.
struct GPIOLineEvent: Sendable, Equatable {
    /// The kernel's edge type. For a both-edges request it is derived from the logical level the
    /// kernel read when it handled the interrupt, not from the pin transition itself.
    let rising: Bool
    /// CLOCK_MONOTONIC nanoseconds (the v1 ABI's clock since Linux 5.7).
    let timestampNanoseconds: UInt64
}

enum GPIOEvents {
    /// The kernel's v1 line-event FIFO holds 16 events; libgpiod reads at most 16 at a time.
    static let batch = 16

    /// Makes a line-event descriptor non-blocking, so reading it when empty returns at once
    /// instead of stalling the event loop. The descriptor belongs to libgpiod (it closes it on
    /// release), which is why this is a plain fcntl on a borrowed fd rather than VigilSystem's
    /// owning `FileDescriptor`.
    static func setNonBlocking(_ fd: Int32) throws(GPIODError) {
        let flags = try gpiod("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        _ = try gpiod("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Reads up to `batch` pending events from a non-blocking line-event descriptor, appending them
    /// to `events`; returns how many were read (0 when none was pending).
    static func read(_ fd: Int32, into events: inout [GPIOLineEvent]) throws(GPIODError) -> Int {
        var buffer = [gpiod_line_event](repeating: gpiod_line_event(), count: batch)
        while true {
            switch ErrnoCall.negativeFails({ gpiod_line_event_read_fd_multiple(fd, &buffer, UInt32(batch)) }) {
            case .success(let n):
                for e in buffer.prefix(Int(n)) {
                    let ns = UInt64(max(0, e.ts.tv_sec)) &* 1_000_000_000 &+ UInt64(max(0, e.ts.tv_nsec))
                    events.append(GPIOLineEvent(rising: e.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE),
                                                timestampNanoseconds: ns))
                }
                return Int(n)
            case .failure(.interrupted): continue
            case .failure(.wouldBlock): return 0
            case .failure(let e): throw GPIODError(operation: "gpiod_line_event_read_fd_multiple", errno: e)
            }
        }
    }
}
