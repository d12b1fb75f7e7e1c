import VigilAlarmCentre
import VigilSystem

/// The alarm receiving centre (`arc:`): where calls for help and the box's troubles go over SIA
/// DC-09 as Contact ID events (docs/calls-for-help.md, "The alarm receiving centre").
public struct AlarmCentreSettings: Sendable {
    /// One receiver: a numeric address (no name lookup: a centre gives its receivers' addresses,
    /// and DNS is the first thing to fail in a disaster) and its port.
    public struct Receiver: Sendable, Equatable, CustomStringConvertible {
        public var address: String
        public var port: UInt16
        public var description: String { address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)" }
        /// `address` must be numeric (`TCPStream.isNumericAddress`); the configuration checks it.
        public init(address: String, port: UInt16) {
            self.address = address
            self.port = port
        }
    }

    /// Tried in order for every report; the first that answers ACK has it.
    public var receivers: [Receiver]
    /// The account, receiver and line numbers the centre knows the box by.
    public var identity: DC09Identity
    /// The AES key (`key`: its 16, 24 or 32 characters used as the key bytes, as pysiaalarm and
    /// most receivers take it; or `key_hex`). Nil: frames go in the clear.
    public var key: DC09Key?
    /// Contact ID's partition (group) field.
    public var partition = 1
    /// How long a receiver may take to accept the connection.
    public var connectTimeoutMicroseconds: UInt64 = 5_000_000
    /// How long a receiver may take to answer a frame (DC-09 leaves it to the pair; 10 s is well
    /// above a centre's usual answer in milliseconds, and short enough to reach the next in time).
    public var replyTimeoutMicroseconds: UInt64 = 10_000_000
    /// A periodic test report (Contact ID 602) when nothing went to the centre for this long
    /// (`calls.test_every`: the box's self-test of its call paths; 0 = none).
    public var testEveryMicroseconds: UInt64 = 86_400_000_000
    /// The longest wait between attempts at a report every receiver failed (back-off from
    /// `notify.retry_base`, capped here rather than at `notify.retry_max`: a call for help to the
    /// centre is retried at least every minute).
    public var retryMaxMicroseconds: UInt64 = 60_000_000

    public init(receivers: [Receiver], identity: DC09Identity, key: DC09Key? = nil) {
        self.receivers = receivers
        self.identity = identity
        self.key = key
    }

    /// Reads `host:port` or `[v6]:port`; `localhost` is 127.0.0.1. Nil when it is not one.
    static func receiver(_ text: String) -> Receiver? {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            (host, portText) = (parts[0], parts[1])
        }
        if host == "localhost" { host = "127.0.0.1" }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = UInt16(portText), port > 0, TCPStream.isNumericAddress(String(host)) else { return nil }
        return Receiver(address: String(host), port: port)
    }
}

extension NodeConfiguration {
    /// `arc:` read from its section (NodeConfiguration.load).
    static func alarmCentre(from section: inout ConfigReader) throws -> AlarmCentreSettings {
        guard let list = try section.strings("receivers"), !list.isEmpty, list.count <= 8 else {
            throw section.error("arc.receivers must list 1 to 8 receivers as \"address:port\"")
        }
        var receivers: [AlarmCentreSettings.Receiver] = []
        for text in list {
            guard let r = AlarmCentreSettings.receiver(text) else {
                throw section.error("arc.receivers: \"\(text)\" is not a numeric address and port (\"192.0.2.10:9000\", \"[2001:db8::1]:9000\")")
            }
            receivers.append(r)
        }
        guard let account = try section.string("account") else { throw section.error("arc.account is needed: the account number the centre gave the box") }
        let identity: DC09Identity
        do {
            identity = try DC09Identity(account: account, receiver: try section.string("receiver"), line: try section.string("line") ?? "1")
        } catch {
            throw section.error("arc: \(error) (account: 3 to 16 hex digits; receiver and line: 1 to 6)")
        }
        var settings = AlarmCentreSettings(receivers: receivers, identity: identity)
        let text = try section.string("key")
        let hex = try section.string("key_hex")
        if text != nil && hex != nil { throw section.error("arc: give key or key_hex, not both") }
        do {
            if let text { settings.key = try DC09Key(bytes: Array(text.utf8)) }
            if let hex { settings.key = try DC09Key(hex: hex) }
        } catch {
            throw section.error("arc: the key must be 16, 24 or 32 characters (key) or twice as many hex digits (key_hex): \(error)")
        }
        if let v = try section.integer("partition", in: 0...99) { settings.partition = v }
        if let v = try section.duration("connect_timeout") { settings.connectTimeoutMicroseconds = min(max(500_000, v), 60_000_000) }
        if let v = try section.duration("reply_timeout") { settings.replyTimeoutMicroseconds = min(max(500_000, v), 120_000_000) }
        if let v = try section.duration("retry_max") { settings.retryMaxMicroseconds = max(1_000_000, v) }
        try section.finish()
        return settings
    }
}
