/// A DC-09 timestamp (§5.5.1.9): `_HH:MM:SS,MM-DD-YYYY`, always UTC. Senders put one on every
/// message (required when encrypted: it is what makes a replayed frame detectable); receivers put
/// one in a NAK (their clock, for the sender to see its own is off) and in an encrypted ACK.
///
/// Built from a count of seconds the caller reads from its own clock: this module reads none.
public struct DC09Timestamp: Sendable, Hashable, CustomStringConvertible {
    public let year: Int
    /// 1...12
    public let month: Int
    /// 1...31, valid for the month
    public let day: Int
    /// 0...23
    public let hour: Int
    /// 0...59
    public let minute: Int
    /// 0...60 (60 only as a receiver's leap second)
    public let second: Int

    /// The moment `utcSeconds` after 1970-01-01T00:00:00Z, or nil before 1970 or after 9999 (the
    /// four-digit year).
    public init?(utcSeconds: Int64) {
        guard utcSeconds >= 0, utcSeconds <= Self.lastRepresentableSecond else { return nil }
        var days = utcSeconds / 86_400
        let secondOfDay = Int(utcSeconds % 86_400)
        var year = 1970 + Int(days / Self.daysPer400Years) * 400
        days %= Self.daysPer400Years
        while days >= Int64(Self.daysIn(year: year)) {
            days -= Int64(Self.daysIn(year: year))
            year += 1
        }
        var month = 1
        while days >= Int64(Self.daysIn(month: month, year: year)) {
            days -= Int64(Self.daysIn(month: month, year: year))
            month += 1
        }
        self.year = year
        self.month = month
        self.day = Int(days) + 1
        self.hour = secondOfDay / 3600
        self.minute = secondOfDay / 60 % 60
        self.second = secondOfDay % 60
    }

    /// The fields as given, or nil if any is out of its range (the day checked against the month,
    /// years 1970...9999).
    public init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        guard (1970...9999).contains(year), (1...12).contains(month),
              day >= 1, day <= Self.daysIn(month: month, year: year),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    /// Seconds since 1970-01-01T00:00:00Z (a leap second counts as the next minute's first).
    public var utcSeconds: Int64 {
        let leapYearsBefore = { (y: Int) -> Int in (y - 1) / 4 - (y - 1) / 100 + (y - 1) / 400 }
        var days = 365 * (year - 1970) + leapYearsBefore(year) - leapYearsBefore(1970)
        for m in 1..<month { days += Self.daysIn(month: m, year: year) }
        days += day - 1
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// As sent, without the leading underscore: `HH:MM:SS,MM-DD-YYYY`.
    public var description: String { String(decoding: ascii.dropFirst(), as: UTF8.self) }

    /// As sent: `_HH:MM:SS,MM-DD-YYYY`, 20 bytes.
    var ascii: [UInt8] {
        [ASCII.underscore] + ASCII.decimal(hour, width: 2) + [ASCII.colon] + ASCII.decimal(minute, width: 2)
            + [ASCII.colon] + ASCII.decimal(second, width: 2) + [ASCII.comma] + ASCII.decimal(month, width: 2)
            + [ASCII.hyphen] + ASCII.decimal(day, width: 2) + [ASCII.hyphen] + ASCII.decimal(year, width: 4)
    }

    /// The length of `_HH:MM:SS,MM-DD-YYYY`.
    static let asciiCount = 20

    /// Reads exactly `_HH:MM:SS,MM-DD-YYYY`; nil for anything else, including valid-looking
    /// fields out of range (13th month, 31 April, hour 24).
    static func parse(_ bytes: ArraySlice<UInt8>) -> DC09Timestamp? {
        guard bytes.count == asciiCount else { return nil }
        let b = Array(bytes)
        guard b[0] == ASCII.underscore, b[3] == ASCII.colon, b[6] == ASCII.colon, b[9] == ASCII.comma,
              b[12] == ASCII.hyphen, b[15] == ASCII.hyphen,
              let hour = ASCII.decimalValue(b[1..<3]), let minute = ASCII.decimalValue(b[4..<6]),
              let second = ASCII.decimalValue(b[7..<9]), let month = ASCII.decimalValue(b[10..<12]),
              let day = ASCII.decimalValue(b[13..<15]), let year = ASCII.decimalValue(b[16..<20])
        else { return nil }
        return DC09Timestamp(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    private static let daysPer400Years: Int64 = 146_097
    /// 9999-12-31T23:59:59Z.
    private static let lastRepresentableSecond: Int64 = 253_402_300_799

    private static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }
    private static func daysIn(year: Int) -> Int { isLeap(year) ? 366 : 365 }
    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
