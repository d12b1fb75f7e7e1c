import Foundation
import VigilSystem

/// The highest alert counter this box has used, kept outside the log in `DATA/alert-counter`
/// (decision 0002). An alert id is (box, counter) and must never repeat. The log knows the
/// highest counter, but a start that runs before its log is open (`LogOpening`) does not have
/// the log yet: so each alert raised here writes its counter here first, durably, and a start
/// before the open counts on from it.
///
/// Counters are reserved in blocks (`block`): the file says the highest counter that may have
/// been used, so one small fsynced write (on the loop, before the alert is appended) covers the
/// next 64 alerts raised here, none for alerts heard. A counter skipped by a restart is a gap,
/// never a repeat.
struct AlertCounterFloor {
    let path: String
    /// What the file says; nil when it is missing or unreadable.
    private(set) var stored: UInt32?
    /// Counters before the open when a log exists but this file does not (a log older than the
    /// file, or the file lost): from here, which no box's log reaches in practice (2^31 alerts).
    static let unknownFloor: UInt32 = 0x8000_0000
    static let fileName = "alert-counter"
    static let block: UInt32 = 64

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

    /// Makes sure the file covers `counter`: when it does not (or does not exist yet), reserves
    /// the block above it. A failed write removes the file (removing works on a full card): a
    /// floor that might be stale must not be trusted, and without one the start counts from
    /// `unknownFloor`.
    mutating func record(_ counter: UInt32) throws(SystemError) {
        if let stored, counter <= stored { return }
        try store(counter > UInt32.max - Self.block ? UInt32.max : counter + Self.block)
    }

    /// Writes the file; on failure removes it, since a floor that might be stale must not be
    /// trusted.
    private mutating func store(_ value: UInt32) throws(SystemError) {
        do {
            try FileSystem.replaceDurably(path, contents: Array("\(value)\n".utf8))
        } catch {
            FileSystem.remove(path)
            stored = nil
            throw error
        }
        stored = value
    }
}
