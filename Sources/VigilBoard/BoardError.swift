import VigilSystem

/// Why a GPIO board could not be opened or driven. Each message names the chip and the line and
/// tells the person at the box what to do next: they may be a volunteer with a screwdriver, not a
/// kernel developer.
public enum BoardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No chip has this name, label, number or path. `available` lists what the machine does have
    /// ("gpiochip0 [pinctrl-bcm2711]"), so a wrong profile is obvious at a glance.
    case chipNotFound(chip: String, available: [String])
    /// The chip exists but this user may not open it (EACCES/EPERM on /dev/gpiochipN).
    case permissionDenied(chip: String)
    /// Another process (or an earlier request of this one) holds the line. `consumer` is the
    /// name the holder gave the kernel, when it gave one.
    case lineBusy(chip: String, line: UInt32, role: String, consumer: String?)
    /// The profile names a line the chip does not have.
    case lineOutOfRange(chip: String, line: UInt32, role: String, lineCount: UInt32)
    /// The profile uses one line for two purposes.
    case duplicateLine(chip: String, line: UInt32, roles: [String])
    /// Any other failure of a libgpiod call, with its errno.
    case system(chip: String, line: UInt32?, operation: String, errno: Errno)

    public var description: String {
        switch self {
        case .chipNotFound(let chip, let available):
            let seen = available.isEmpty
                ? ", and no GPIO chip could be listed (none present, or none this user may open)"
                : "; this machine has \(available.joined(separator: ", "))"
            return "no GPIO chip named or labelled \(chip)\(seen); run gpiodetect and set chip: in the board profile to a name or label it prints"
        case .permissionDenied(let chip):
            return "permission denied opening GPIO chip \(chip): add the user to group gpio (usermod -aG gpio vigil) and install the udev rule, see board/99-vigil-gpio.rules and docs/hardware.md"
        case .lineBusy(let chip, let line, let role, let consumer):
            let holder: String
            switch consumer {
            case .some("vigil"): holder = "vigil (is another Vigil node or `vigil debug gpio` running?)"
            case .some(let name) where !name.isEmpty: holder = name
            default: holder = "another process that gave no consumer name"
            }
            return "line \(line) of chip \(chip) is in use by \(holder), but the board profile wants it for the \(role); stop that process (gpioinfo \(chip) shows who holds each line) or choose another line"
        case .lineOutOfRange(let chip, let line, let role, let count):
            let range = count == 0 ? "no lines" : "\(count) lines (0-\(count - 1))"
            return "line \(line) (\(role)) is out of range: chip \(chip) has \(range); check the board profile against gpioinfo \(chip)"
        case .duplicateLine(let chip, let line, let roles):
            return "line \(line) of chip \(chip) is given to \(roles.joined(separator: " and ")) in the board profile; give each its own line"
        case .system(let chip, let line, let operation, let errno):
            let which = line.map { "line \($0) of chip \(chip)" } ?? "chip \(chip)"
            return "\(which): \(operation) failed: \(errno)"
        }
    }
}
