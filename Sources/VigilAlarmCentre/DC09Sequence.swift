/// A DC-09 sequence number (§5.5.1.5): four decimal digits, 0001 to 9999, one per new message
/// (a retry of the same message keeps its number, so the receiver can tell a repeat). After 9999
/// comes 0001: 0000 is never sent, it is what a NAK carries.
public struct DC09Sequence: Sendable, Hashable, CustomStringConvertible {
    /// 1...9999.
    public let value: Int

    /// The number `value`, or nil outside 1...9999.
    public init?(_ value: Int) {
        guard (1...9999).contains(value) else { return nil }
        self.value = value
    }

    private init(unchecked value: Int) { self.value = value }

    /// 0001: where a sender with no saved sequence starts.
    public static let first = DC09Sequence(unchecked: 1)

    /// The number after this one: 9999 wraps to 0001.
    public func next() -> DC09Sequence { DC09Sequence(unchecked: value == 9999 ? 1 : value + 1) }

    /// The four digits as sent, e.g. "0042".
    public var description: String { String(decoding: ascii, as: UTF8.self) }

    var ascii: [UInt8] { ASCII.decimal(value, width: 4) }
}
