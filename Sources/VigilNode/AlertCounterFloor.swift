import Foundation
import VigilSystem

/// The highest alert counter this box has used, kept outside the log in `DATA/alert-counter`
/// (decision 0002). An alert id is (box, counter) and must never repeat. The log knows the
/// highest counter, but a start that runs before its log is open (`LogOpening`) does not have
/// the log yet: so each alert raised here writes its counter here first, durably, and a start
/// before the open counts on from it.
///
/// One small fsynced write per alert raised here (a person's press or command: rare), none for
/// alerts heard.
struct AlertCounterFloor {
    let path: String
    /// What the file says; nil when it is missing or unreadable.
    private(set) var stored: UInt32?
    /// Counters before the open when a log exists but this file does not (a log older than the
    /// file, or the file lost): from here, which no box's log reaches in practice (2^31 alerts).
    static let unknownFloor: UInt32 = 0x8000_0000
    static let fileName = "alert-counter"

    init(directory: String) {
        path = directory + "/" + Self.fileName
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           let value = UInt32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            stored = value
        }
    }

    /// The counter above which alerts raised before the log is open are numbered.
    func floor(logExists: Bool) -> UInt32 {
        stored ?? (logExists ? Self.unknownFloor : 0)
    }

    /// Makes `counter` durable here, when it is higher than what is stored.
    mutating func record(_ counter: UInt32) throws(SystemError) {
        guard counter > (stored ?? 0) else { return }
        try FileSystem.replaceDurably(path, contents: Array("\(counter)\n".utf8))
        stored = counter
    }
}
