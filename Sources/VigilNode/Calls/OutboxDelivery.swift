import Foundation
import VigilCore
import VigilSystem

/// How outbox entries leave the box. The log notifier always records each attempt; when a
/// command is configured it is the delivery path (an SMS modem script, a mail sender ...): it
/// gets the message as JSON on stdin and must exit 0 within the timeout.
public struct NotifierConfiguration: Sendable, Equatable {
    public var command: String?
    public var arguments: [String] = []
    public var timeoutMicroseconds: UInt64 = 10_000_000
    public var retryBaseMicroseconds: UInt64 = 5_000_000
    public var retryMaxMicroseconds: UInt64 = 600_000_000
    public init() {}
}

/// One delivery attempt running as a child process.
final class DeliveryAttempt {
    let entry: String
    let attempt: UInt32
    let child: ChildProcess
    /// Set when the timeout killed it: its exit is then reported as a timeout.
    var timedOut = false

    init(entry: String, attempt: UInt32, child: ChildProcess) {
        self.entry = entry
        self.attempt = attempt
        self.child = child
    }
}

/// The JSON a command notifier reads on stdin (one object, then a newline).
struct OutboxMessage: Codable, Equatable {
    var id: String
    var channel: String
    var recipients: [String]
    var text: String
    var attempt: Int
    var node: String
    var createdMicroseconds: UInt64
    /// For a webhook told of a call nobody has taken: how it takes the call.
    var take: TakeLink?

    /// A webhook recipient's way to take a call: POST `{"recipient", "token", "by"}` as JSON to
    /// `url` (or `path` on the box's page, when `http.public_url` is not set).
    /// docs/calls-for-help.md, "Webhook callbacks".
    struct TakeLink: Codable, Equatable {
        var call: String
        var code: String
        var recipient: String
        var path: String
        var url: String?
        var token: String
    }

    enum CodingKeys: String, CodingKey {
        case id, channel, recipients, text, attempt, node, take
        case createdMicroseconds = "created_us"
    }

    init(_ entry: Outbox.Entry, attempt: UInt32, nodeID: UInt64, take: TakeLink? = nil) {
        id = entry.id
        channel = entry.channel.rawValue
        recipients = entry.recipients
        text = entry.text
        self.attempt = Int(attempt)
        node = String(nodeID, radix: 16)
        createdMicroseconds = entry.createdMicroseconds
        self.take = take
    }

    /// A self-test's message (`NotifierSelfTest`): channel "test", one recipient.
    init(testTo recipient: String, id: String, text: String, nodeID: UInt64, createdMicroseconds: UInt64) {
        self.id = id
        channel = "test"
        recipients = [recipient]
        self.text = text
        attempt = 1
        node = String(nodeID, radix: 16)
        self.createdMicroseconds = createdMicroseconds
    }

    var json: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding strings and numbers cannot fail; an empty object would still be a message.
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return Array(data) + [0x0A]
    }
}
