import VigilEvents

/// Chats with phones and boxes over GATT, per device, as BTFinder keeps them
/// (docs/connections.md "Connections"): each device's messages in and out, whether its link is up, and how many
/// messages arrived since its chat was last opened. The unread count shows 1–99 and then "...",
/// goes back to 0 when staff open the chat (`ChatOpened`) and is cleared when the device
/// disconnects. Messages stay after a disconnect.
///
/// Bounded: at most `historyLimit` messages a device and `deviceLimit` devices (the one quiet
/// longest is forgotten first), whatever peers in range send.
public struct Conversations: Codable, Equatable, Sendable {
    public struct Message: Codable, Equatable, Sendable {
        public var sequence: UInt64
        public var timeMicroseconds: UInt64
        public var channel: Int
        public var outgoing: Bool
        public var text: String
        public var messageID: String
        public var category: String
        public var delivered: Bool
    }

    public struct Conversation: Codable, Equatable, Sendable {
        public var peer: UInt64
        public var random: Bool
        /// The roles (`LinkRole` raw values, ascending) of the links open with the device: it may
        /// hold the box's link as a central and its own to the box at once, and each closes on
        /// its own.
        public var openRoles: [Int] = []
        public var unread = 0
        public var messages: [Message] = []
        /// The time of the last message or link change.
        public var lastActivityMicroseconds: UInt64 = 0

        /// The unread count as BTFinder shows it: nothing, 1–99, or "...".
        public var unreadBadge: String { Conversations.badge(unread) }

        /// Linked now, by either role.
        public var connected: Bool { !openRoles.isEmpty }
    }

    public static let historyLimit = 100
    public static let deviceLimit = 64

    public private(set) var byPeer: [UInt64: Conversation] = [:]
    /// Phone message ids already taken (an SOS written twice, or relayed by two phones, is one).
    public private(set) var seenMessageIDs: [String: UInt64] = [:]
    public static let seenIDLimit = 4_096

    public init() {}

    public static func badge(_ unread: Int) -> String {
        unread <= 0 ? "" : unread <= 99 ? String(unread) : "..."
    }

    /// The devices, most recently active first.
    public var recent: [Conversation] { byPeer.values.sorted { ($0.lastActivityMicroseconds, $0.peer) > ($1.lastActivityMicroseconds, $1.peer) } }

    public var connected: [Conversation] { recent.filter(\.connected) }

    public mutating func apply(_ event: Event) {
        switch event.body {
        case .linkChanged(let link):
            var conversation = byPeer[link.peer] ?? Conversation(peer: link.peer, random: link.peerType == .addressRandom)
            let role = link.role.rawValue
            if link.open {
                if !conversation.openRoles.contains(role) { conversation.openRoles = (conversation.openRoles + [role]).sorted() }
            } else {
                // A close of a role that was not open (a connect attempt that failed) changes
                // nothing else; the last link closing clears the unread count.
                let wasConnected = conversation.connected
                conversation.openRoles.removeAll { $0 == role }
                if wasConnected && !conversation.connected { conversation.unread = 0 }
            }
            conversation.lastActivityMicroseconds = event.timeMicroseconds
            store(conversation)
        case .chatMessage(let chat):
            var conversation = byPeer[chat.peer] ?? Conversation(peer: chat.peer, random: chat.peerType == .addressRandom)
            conversation.messages.append(Message(
                sequence: event.sequence, timeMicroseconds: event.timeMicroseconds, channel: chat.channel.rawValue, outgoing: chat.outgoing,
                text: chat.text, messageID: chat.messageID, category: chat.category, delivered: chat.delivered))
            if conversation.messages.count > Self.historyLimit { conversation.messages.removeFirst(conversation.messages.count - Self.historyLimit) }
            if !chat.outgoing { conversation.unread += 1 }
            conversation.lastActivityMicroseconds = event.timeMicroseconds
            store(conversation)
            if !chat.messageID.isEmpty, !chat.outgoing {
                seenMessageIDs[chat.messageID] = event.sequence
                if seenMessageIDs.count > Self.seenIDLimit, let oldest = seenMessageIDs.min(by: { $0.value < $1.value }) {
                    seenMessageIDs[oldest.key] = nil
                }
            }
        case .chatOpened(let opened):
            byPeer[opened.peer]?.unread = 0
        default:
            break
        }
    }

    private mutating func store(_ conversation: Conversation) {
        byPeer[conversation.peer] = conversation
        guard byPeer.count > Self.deviceLimit else { return }
        // The one quiet longest goes, unless it is connected (then the quietest unconnected one).
        let candidates = byPeer.values.filter { !$0.connected && $0.peer != conversation.peer }
        if let quietest = candidates.min(by: { ($0.lastActivityMicroseconds, $0.peer) < ($1.lastActivityMicroseconds, $1.peer) }) {
            byPeer[quietest.peer] = nil
        }
    }
}
