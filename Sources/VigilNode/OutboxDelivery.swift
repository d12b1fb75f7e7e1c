import Foundation
import Logging
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

enum OutboxMessage {
    /// The JSON a command notifier reads on stdin.
    static func json(_ entry: Outbox.Entry, attempt: UInt32, nodeID: UInt64) -> [UInt8] {
        let object: [String: Any] = [
            "id": entry.id, "channel": entry.channel.rawValue, "recipients": entry.recipients,
            "text": entry.text, "attempt": Int(attempt), "node": String(nodeID, radix: 16),
            "created_us": entry.createdMicroseconds,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Array(data) + [0x0A]
    }
}
