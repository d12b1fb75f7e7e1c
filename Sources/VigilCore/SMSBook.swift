import VigilEvents

/// SMS that reached the box (`SmsReceived`): which inbox files were read (so a file is read once,
/// across restarts), the most recent messages with what the box made of them (staff see replies
/// from unknown numbers and texts the box did not understand: they are never acted on), and
/// counts.
public struct SMSBook: Codable, Equatable, Sendable {
    public struct Message: Codable, Equatable, Sendable {
        public var sender: String
        public var text: String
        /// `SMSReading` raw value.
        public var reading: Int
        public var outcome: String
        public var receivedMicroseconds: UInt64
        public var sequence: UInt64
    }

    /// Inbox files read, by name, with the sequence of their `SmsReceived`.
    public private(set) var files: [String: UInt64] = [:]
    /// The newest messages, oldest first (at most `keepMessages`).
    public private(set) var recent: [Message] = []
    public private(set) var received: UInt64 = 0
    public private(set) var unreadable: UInt64 = 0
    /// Files remembered: more than a shelter's inbox gets in the day the node looks back over
    /// (older files are not read at all: `SMSInbox.horizon`).
    public static let keepFiles = 5_000
    public static let keepMessages = 50

    public init() {}

    public func hasRead(_ file: String) -> Bool { files[file] != nil }

    mutating func apply(_ m: SMSReceived, event: Event) {
        received += 1
        if m.reading == .unreadable { unreadable += 1 }
        if files.count >= Self.keepFiles, let oldest = files.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }) {
            files[oldest.key] = nil
        }
        files[m.file] = event.sequence
        recent.append(Message(sender: m.sender, text: m.text, reading: m.reading.rawValue, outcome: m.outcome,
                              receivedMicroseconds: m.receivedUs == 0 ? event.timeMicroseconds : m.receivedUs, sequence: event.sequence))
        if recent.count > Self.keepMessages { recent.removeFirst(recent.count - Self.keepMessages) }
    }
}
