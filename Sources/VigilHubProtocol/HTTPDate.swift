/// The hub's time as its answers carry it: the HTTP `Date` header (RFC 9110 §5.6.7), which every
/// hub answer has. Read over the pinned TLS, it is a time the box can vouch for
/// (docs/signed-frames.md "Time"); a second's resolution is far finer than the freshness rule needs.
///
/// Only the preferred form, IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), is read: a hub sends
/// nothing else, and anything else is no time at all (nil), never a guess.
public enum HTTPDate {
    /// Unix seconds, or nil for anything but an IMF-fixdate from 1970 through 9999.
    public static func seconds(_ text: some StringProtocol) -> UInt64? {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
              b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20, Array(b[26...]) == Array("GMT".utf8),
              weekdays.contains(Array(b[0..<3])),
              let day = number(b[5..<7]), let year = number(b[12..<16]),
              let hour = number(b[17..<19]), let minute = number(b[20..<22]), let second = number(b[23..<25]),
              let monthIndex = months.firstIndex(of: Array(b[8..<11])) else { return nil }
        let month = UInt64(monthIndex + 1)
        guard year >= 1970, day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second < 61 else { return nil }
        return days(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + min(second, 59)
    }

    private static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].map { Array($0.utf8) }

    private static func number(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for d in digits {
            guard d >= 0x30, d <= 0x39 else { return nil }
            value = value * 10 + UInt64(d - 0x30)
        }
        return value
    }

    private static func isLeap(_ year: UInt64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysIn(month: UInt64, year: UInt64) -> UInt64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date (proleptic Gregorian).
    private static func days(year: UInt64, month: UInt64, day: UInt64) -> UInt64 {
        var total: UInt64 = 0
        // Whole years: 365 each and a day per leap year before `year`.
        let before = year - 1
        func leapsThrough(_ y: UInt64) -> UInt64 { y / 4 - y / 100 + y / 400 }
        total = (year - 1970) * 365 + leapsThrough(before) - leapsThrough(1969)
        for m in 1..<month { total += daysIn(month: m, year: year) }
        return total + day - 1
    }
}
