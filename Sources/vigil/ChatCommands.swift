import ArgumentParser
import Foundation
import VigilCore
import VigilEvents
import VigilNode
import VigilRadio
import VigilSystem

/// `vigil chat`: conversations with phones and boxes over GATT (docs/connections.md "Connections"), as
/// BTFinder keeps them: per device, with an unread count shown 1–99 and then "...".
struct ChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "Chats with phones and boxes connected over Bluetooth.",
        subcommands: [ChatList.self, ChatOpen.self, ChatSend.self, ChatConnect.self, ChatDisconnect.self])
}

enum ChatText {
    static func peer(_ c: Conversations.Conversation) -> String {
        formatAddress(c.peer) + (c.random ? "/random" : "")
    }

    /// One line for `vigil status` (nothing when there never was a chat).
    static func statusLine(_ conversations: Conversations) -> String {
        guard !conversations.byPeer.isEmpty else { return "" }
        let unread = conversations.recent.filter { $0.unread > 0 }
        var line = "chats: \(conversations.byPeer.count) devices, \(conversations.connected.count) connected"
        if !unread.isEmpty { line += "; unread: " + unread.prefix(5).map { "\(peer($0)) (\($0.unreadBadge))" }.joined(separator: ", ") }
        return line + "\n"
    }

    static func message(_ m: Conversations.Message) -> String {
        let who = m.outgoing ? "box" : "peer (unauthenticated)"
        var text = "\(EventFormatting.time(m.timeMicroseconds)) \(who)"
        if !m.category.isEmpty { text += " [\(printable(m.category, limit: 32))]" }
        if m.outgoing && !m.delivered { text += " (not delivered)" }
        return text + ": " + printable(m.text, limit: 2_000)
    }

    /// Text from a peer as a terminal may show it (`PeerText`).
    static func printable(_ text: String, limit: Int) -> String { PeerText.printable(text, limit: limit) }
}

struct ChatList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Devices with a chat, most recent first, with unread counts.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let state = try Replay.currentState(try openForReading(configuration.dataDirectory), settings: configuration.projections)
            var out = state.conversations.byPeer.isEmpty ? "no chats\n" : ""
            for c in state.conversations.recent {
                out += "\(ChatText.peer(c))  \(c.connected ? "connected" : "not connected")  \(c.messages.count) message\(c.messages.count == 1 ? "" : "s")"
                out += c.unread > 0 ? "  unread \(c.unreadBadge)\n" : "\n"
            }
            FileOutput.standardOutput.write(out)
        }
    }
}

struct ChatOpen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "open", abstract: "Show a device's chat and mark it read.")
    @OptionGroup var options: DataOptions
    @Argument(help: "The device (AA:BB:CC:DD:EE:FF).") var peer: String

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            _ = try CommandSender.sendToRunningNode(.chatOpen(ChatPeerReference(peer: peer)), dataDirectory: configuration.dataDirectory)
            let state = try Replay.currentState(try openForReading(configuration.dataDirectory), settings: configuration.projections)
            guard let address = LEAddress(peer)?.value, let c = state.conversations.byPeer[address] else { throw CLIError("no chat with \(peer)", code: 65) }
            FileOutput.standardOutput.write(c.messages.map(ChatText.message).joined(separator: "\n") + "\n")
        }
    }
}

struct ChatSend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "send", abstract: "Send a message to a connected device.")
    @OptionGroup var options: DataOptions
    @Argument(help: "The device (AA:BB:CC:DD:EE:FF).") var peer: String
    @Argument(help: "The message; - sends each line of standard input as a message, in order.") var text: String

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            guard text == "-" else {
                let reply = try CommandSender.sendToRunningNode(.chatSend(ChatSendRequest(peer: peer, text: text)), dataDirectory: configuration.dataDirectory)
                FileOutput.standardOutput.write("sent (event \(reply.sequence ?? 0))\n")
                return
            }
            var sent = 0
            while let line = readLine(strippingNewline: true) {
                guard !line.isEmpty else { continue }
                _ = try CommandSender.sendToRunningNode(.chatSend(ChatSendRequest(peer: peer, text: line)), dataDirectory: configuration.dataDirectory)
                sent += 1
            }
            FileOutput.standardOutput.write("sent \(sent) messages\n")
        }
    }
}

struct ChatConnect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect", abstract: "Open the box's chat link to a device (one at a time: another device's link is closed).")
    @OptionGroup var options: DataOptions
    @Argument(help: "The device: AA:BB:CC:DD:EE:FF, with /random for a random address.") var peer: String

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            _ = try CommandSender.sendToRunningNode(.chatConnect(ChatPeerReference(peer: peer)), dataDirectory: configuration.dataDirectory)
            FileOutput.standardOutput.write("connecting to \(peer) (vigil chat list shows it connected)\n")
        }
    }
}

struct ChatDisconnect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disconnect", abstract: "Close the box's chat link.")
    @OptionGroup var options: DataOptions
    @Argument(help: "The device (AA:BB:CC:DD:EE:FF).") var peer: String

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            _ = try CommandSender.sendToRunningNode(.chatDisconnect(ChatPeerReference(peer: peer)), dataDirectory: configuration.dataDirectory)
            FileOutput.standardOutput.write("disconnected\n")
        }
    }
}
