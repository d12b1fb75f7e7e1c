/// Messages longer than one ATT value, in parts (docs/connections.md "Connections"). Chat text and phone
/// messages are UTF-8 (JSON is UTF-8), in which the bytes 0xFD and 0xFE never occur, so a value
/// that starts with one of them is unambiguously a part:
///
/// - `FE` + bytes: a part, more follow;
/// - `FD` + bytes: the last part;
/// - anything else: a whole message.
///
/// A peer that knows nothing of parts (a generic UART app, gatttool) sends and receives whole
/// messages of up to one value, as it expects. Parts arrive in order (ATT runs over one reliable
/// L2CAP channel); a link that closes mid-message loses only that message.
public enum MessageFrames {
    public static let more: UInt8 = 0xFE
    public static let last: UInt8 = 0xFD

    /// The values that carry `message` when one value holds at most `valueLength` bytes (ATT_MTU − 3
    /// for a notification, up to 512 for a write).
    public static func split(_ message: [UInt8], valueLength: Int) -> [[UInt8]] {
        let length = max(valueLength, 2)
        if message.count <= length, message.first != more, message.first != last { return [message] }
        var parts: [[UInt8]] = []
        var index = 0
        repeat {
            let end = min(index + length - 1, message.count)
            parts.append([end == message.count ? last : more] + message[index ..< end])
            index = end
        } while index < message.count
        return parts
    }
}

/// Reassembles one peer's messages from values, within a limit: a message longer than
/// `limit` bytes is refused (and what had arrived of it dropped), so a peer cannot make the box
/// hold more than `limit` bytes for it.
public struct MessageAssembler: Sendable {
    public enum Outcome: Equatable, Sendable {
        case message([UInt8])
        case partial
        case tooLong
        /// A value with no bytes (not a message, not a part).
        case empty
    }

    public let limit: Int
    private var buffer: [UInt8] = []
    private var discarding = false

    public init(limit: Int) { self.limit = limit }

    /// Bytes held for a message not yet complete.
    public var held: Int { buffer.count }

    public mutating func add(_ value: [UInt8]) -> Outcome {
        guard let first = value.first else { return .empty }
        guard first == MessageFrames.more || first == MessageFrames.last else {
            // A whole message ends any message in parts the peer abandoned.
            buffer = []
            discarding = false
            return value.count <= limit ? .message(value) : .tooLong
        }
        let isLast = first == MessageFrames.last
        if discarding {
            if isLast { discarding = false }
            return .partial
        }
        guard buffer.count + value.count - 1 <= limit else {
            buffer = []
            discarding = !isLast
            return .tooLong
        }
        buffer += value.dropFirst()
        guard isLast else { return .partial }
        defer { buffer = [] }
        return .message(buffer)
    }
}
