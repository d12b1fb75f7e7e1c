import VigilLog
import VigilSystem

/// Why a node could not start or run; each case reads as a message for the person at the box.
public enum NodeError: Error, Sendable, CustomStringConvertible {
    case alreadyRunning(directory: String)
    case log(LogError)
    case system(SystemError)
    case radio(String)
    case board(String)
    case unsupported(String)
    /// A check found the log's pages damaged: the node stops, and its next start salvages the log.
    case logDamaged(String)

    /// Whether the log may be what stopped the node (its next start then checks the log first).
    public var mayBeTheLog: Bool {
        switch self {
        case .log, .logDamaged: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .alreadyRunning(let dir): "another Vigil node is already running with data directory \(dir)"
        case .log(let e): e.description
        case .system(let e): e.description
        case .radio(let why): "radio: \(why)"
        case .board(let why): "board: \(why)"
        case .unsupported(let why): why
        case .logDamaged(let what): "the event log is damaged (\(what)); the next start salvages it"
        }
    }
}
