/// One Contact ID event (SIA DC-05) as DC-09 carries it under the `ADM-CID` token (DC-09 annex):
/// the data block is `#ACCT|QEEE GG ZZZ` — qualifier, three-digit event code, two-digit partition
/// (group) and three-digit zone or user number, with single spaces between.
public struct ContactIDEvent: Sendable, Hashable, CustomStringConvertible {
    /// The event qualifier digit.
    public enum Qualifier: Int, Sendable, Hashable {
        /// 1: a new event (an alarm raised, a trouble begun; for open/close codes, an opening).
        case newEvent = 1
        /// 3: a restore (an alarm cancelled, a trouble cleared; for open/close codes, a closing).
        case restore = 3
        /// 6: a previously reported condition still present (status).
        case status = 6
    }

    public let qualifier: Qualifier
    /// 0...999, sent as three digits.
    public let code: Int
    /// 0...99, sent as two digits.
    public let partition: Int
    /// 0...999, sent as three digits: a zone, or a user number for user-caused events.
    public let zone: Int

    /// An event whose fields each fit their digits; throws naming the one that does not.
    public init(_ qualifier: Qualifier, code: Int, partition: Int, zone: Int) throws(DC09EncodeError) {
        guard (0...999).contains(code) else { throw .eventCodeOutOfRange(code) }
        guard (0...99).contains(partition) else { throw .partitionOutOfRange(partition) }
        guard (0...999).contains(zone) else { throw .zoneOutOfRange(zone) }
        (self.qualifier, self.code, self.partition, self.zone) = (qualifier, code, partition, zone)
    }

    /// Only for fields already known to be in range (`AlarmReport`'s table).
    init(unchecked qualifier: Qualifier, code: Int, partition: Int, zone: Int) {
        (self.qualifier, self.code, self.partition, self.zone) = (qualifier, code, partition, zone)
    }

    /// `QEEE GG ZZZ`, e.g. `1120 01 012`.
    public var description: String { String(decoding: ascii, as: UTF8.self) }

    var ascii: [UInt8] {
        ASCII.decimal(qualifier.rawValue, width: 1) + ASCII.decimal(code, width: 3) + [ASCII.space]
            + ASCII.decimal(partition, width: 2) + [ASCII.space] + ASCII.decimal(zone, width: 3)
    }

    /// The data block's content between `[` and `]`: `#ACCT|QEEE GG ZZZ`.
    func data(account: String) -> [UInt8] { [ASCII.hash] + Array(account.utf8) + [ASCII.bar] + ascii }
}
