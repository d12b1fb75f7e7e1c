/// A CAP dateTime: "2026-11-30T21:05:00-05:00", exactly as CAP 1.2 writes it (seconds, a numeric
/// offset, no fraction, no "Z"). Two times are the same time when they are the same instant,
/// whatever offset each was written in; the offset is kept to write the time back as it came.
public struct CAPTime: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// Microseconds since 1970-01-01T00:00:00Z (the box's event time unit).
    public var microseconds: Int64
    /// The offset from UTC it was written in, in minutes (-00:00 and +00:00 are both 0).
    public var offsetMinutes: Int

    public init(microseconds: Int64, offsetMinutes: Int = 0) {
        self.microseconds = microseconds
        self.offsetMinutes = offsetMinutes
    }

    /// Reads a CAP dateTime; nil for anything else (a "Z", a fraction, a date that does not exist).
    public init?(_ text: some StringProtocol) {
        let b = Array(text.utf8)
        guard b.count == 25, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54, b[13] == 0x3A, b[16] == 0x3A,
              b[19] == 0x2B || b[19] == 0x2D, b[22] == 0x3A else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var n = 0
            for i in from..<(from + count) {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                n = n * 10 + Int(b[i] - 0x30)
            }
            return n
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
              let minute = number(14, 2), let second = number(17, 2), let offsetHours = number(20, 2),
              let offsetMinutes = number(23, 2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= Self.days(inMonth: month, year: year), hour < 24, minute < 60,
              second < 60, offsetHours < 24, offsetMinutes < 60 else { return nil }
        let sign = b[19] == 0x2D ? -1 : 1
        let offset = sign * (offsetHours * 60 + offsetMinutes)
        let local = Int64(Self.daysSinceEpoch(year: year, month: month, day: day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
        self.microseconds = (local - Int64(offset) * 60) * 1_000_000
        self.offsetMinutes = offset
    }

    /// The time as CAP writes it, in the offset it was read in (whole seconds).
    public var description: String {
        let seconds = Int64((Double(microseconds) / 1_000_000).rounded(.down)) + Int64(offsetMinutes) * 60
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let inDay = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = Self.civil(daysSinceEpoch: days)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let sign = offsetMinutes < 0 ? "-" : "+"
        let o = abs(offsetMinutes)
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(yearText)-\(two(month))-\(two(day))T\(two(inDay / 3600)):\(two(inDay / 60 % 60)):\(two(inDay % 60))\(sign)\(two(o / 60)):\(two(o % 60))"
    }

    public static func == (a: CAPTime, b: CAPTime) -> Bool { a.microseconds == b.microseconds }
    public func hash(into hasher: inout Hasher) { hasher.combine(microseconds) }
    public static func < (a: CAPTime, b: CAPTime) -> Bool { a.microseconds < b.microseconds }

    static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days-from-civil).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `daysSinceEpoch`.
    static func civil(daysSinceEpoch: Int) -> (year: Int, month: Int, day: Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
