/// Who a message is from, as the alarm receiving centre knows the box: the account number
/// (`#acct`), the line or account prefix (`Lpref`) and, optionally, the receiver number
/// (`Rrcvr`). All hex digits, stored upper-case. A reply must name the same three back.
public struct DC09Identity: Sendable, Hashable {
    /// 3 to 16 hex digits, upper-case (§5.5.1.6).
    public let account: String
    /// 1 to 6 hex digits, upper-case, or nil to send no `R` token (§5.5.1.7). Note: pysiaalarm
    /// (3.2.2) answers a frame without one with a receiver token of `None`, which the reply parser
    /// refuses; configure one when the centre runs pysiaalarm.
    public let receiver: String?
    /// 1 to 6 hex digits, upper-case (§5.5.1.8).
    public let line: String

    /// Checks and upper-cases the three tokens; throws naming the first that is wrong.
    public init(account: String, receiver: String?, line: String) throws(DC09EncodeError) {
        guard let account = Self.hexToken(account, lengths: 3...16) else { throw .badAccount(ASCII.excerpt(Array(account.utf8)[...])) }
        guard let line = Self.hexToken(line, lengths: 1...6) else { throw .badLine(ASCII.excerpt(Array(line.utf8)[...])) }
        var checkedReceiver: String?
        if let receiver {
            guard let r = Self.hexToken(receiver, lengths: 1...6) else { throw .badReceiver(ASCII.excerpt(Array(receiver.utf8)[...])) }
            checkedReceiver = r
        }
        (self.account, self.receiver, self.line) = (account, checkedReceiver, line)
    }

    /// `Rrcvr` (if any) `Lpref` `#acct`, as they follow the sequence number.
    var headerTail: [UInt8] {
        (receiver.map { [ASCII.capitalR] + Array($0.utf8) } ?? []) + [ASCII.capitalL] + Array(line.utf8)
            + [ASCII.hash] + Array(account.utf8)
    }

    private static func hexToken(_ text: String, lengths: ClosedRange<Int>) -> String? {
        let bytes = Array(text.utf8)
        guard lengths.contains(bytes.count), bytes.allSatisfy({ ASCII.hexValue($0) != nil }) else { return nil }
        return String(decoding: bytes.map(ASCII.upper), as: UTF8.self)
    }
}
