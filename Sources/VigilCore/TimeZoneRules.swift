/// A time zone's rules, parsed from TZif bytes (RFC 8536, versions 1 to 3): the UTC offset at any
/// UTC instant. Pure: it never opens a file; the node reads /usr/share/zoneinfo/NAME and hands
/// the bytes here, so the projections that use it stay functions of (state, event).
///
/// Times inside the table use its transitions (the 64-bit section of a version 2+ file; the
/// 32-bit one for version 1). Times after the last transition use the footer's POSIX TZ string
/// ("CET-1CEST,M3.5.0,M10.5.0/3"), so the rules do not run out in 2037.
public struct TimeZoneRules: Codable, Equatable, Sendable {
    /// Transition times, seconds since the epoch (UTC), ascending.
    public var transitions: [Int64] = []
    /// The offset (seconds east of UTC) in force from each transition on.
    public var offsets: [Int32] = []
    /// The offset before the first transition.
    public var initialOffset: Int32 = 0
    /// The footer's rule for times past the table (nil: the last offset stays).
    public var footer: PosixRule?

    public enum ParseError: Error, Equatable { case notTZif, truncated, invalid(String) }

    public init(fixedOffsetSeconds: Int32) { initialOffset = fixedOffsetSeconds }

    public init(tzif bytes: [UInt8]) throws(ParseError) {
        var reader = Reader(bytes: bytes)
        let v1 = try reader.header()
        if v1.version == 0 {
            // Version 1: only the 32-bit body.
            try self.init(body: &reader, header: v1, timeSize: 4)
            return
        }
        try reader.skip(v1.bodyLength(timeSize: 4))
        let v2 = try reader.header()
        try self.init(body: &reader, header: v2, timeSize: 8)
        // Footer: "\n" TZ string "\n".
        guard try reader.byte() == 0x0A else { throw .invalid("footer") }
        var text: [UInt8] = []
        while true {
            let b = try reader.byte()
            if b == 0x0A { break }
            text.append(b)
        }
        if !text.isEmpty {
            guard let rule = PosixRule(String(decoding: text, as: UTF8.self)) else { throw .invalid("TZ string") }
            footer = rule
        }
    }

    private init(body reader: inout Reader, header h: Reader.Header, timeSize: Int) throws(ParseError) {
        var times: [Int64] = []
        for _ in 0..<h.timecnt { times.append(timeSize == 8 ? try reader.int64() : Int64(try reader.int32())) }
        var indices: [Int] = []
        for _ in 0..<h.timecnt { indices.append(Int(try reader.byte())) }
        var types: [Int32] = []
        for _ in 0..<h.typecnt {
            types.append(try reader.int32())
            _ = try reader.byte() // isdst
            _ = try reader.byte() // abbreviation index
        }
        guard !types.isEmpty, indices.allSatisfy({ $0 < types.count }) else { throw .invalid("local time types") }
        try reader.skip(h.charcnt + h.leapcnt * (timeSize + 4) + h.isstdcnt + h.isutcnt)
        transitions = times
        offsets = indices.map { types[$0] }
        // RFC 8536 3.2: the first type is the one before the first transition.
        initialOffset = types[0]
        guard zip(times, times.dropFirst()).allSatisfy({ $0 < $1 }) else { throw .invalid("transitions out of order") }
    }

    /// Seconds east of UTC at `utcSeconds`.
    public func offset(atUTC utcSeconds: Int64) -> Int32 {
        if let last = transitions.last, utcSeconds >= last, let footer { return footer.offset(atUTC: utcSeconds) }
        if transitions.isEmpty, let footer { return footer.offset(atUTC: utcSeconds) }
        // The last transition at or before the instant.
        var lo = 0, hi = transitions.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if transitions[mid] <= utcSeconds { lo = mid + 1 } else { hi = mid }
        }
        return lo == 0 ? initialOffset : offsets[lo - 1]
    }

    private struct Reader {
        struct Header {
            var version: UInt8
            var isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt: Int
            func bodyLength(timeSize: Int) -> Int {
                timecnt * timeSize + timecnt + typecnt * 6 + charcnt + leapcnt * (timeSize + 4) + isstdcnt + isutcnt
            }
        }
        let bytes: [UInt8]
        var at = 0

        mutating func byte() throws(ParseError) -> UInt8 {
            guard at < bytes.count else { throw .truncated }
            defer { at += 1 }
            return bytes[at]
        }
        mutating func skip(_ n: Int) throws(ParseError) {
            guard n >= 0, bytes.count - at >= n else { throw .truncated }
            at += n
        }
        mutating func uint32() throws(ParseError) -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<4 { v = v << 8 | UInt32(try byte()) }
            return v
        }
        mutating func int32() throws(ParseError) -> Int32 { Int32(bitPattern: try uint32()) }
        mutating func int64() throws(ParseError) -> Int64 {
            Int64(bitPattern: UInt64(try uint32()) << 32 | UInt64(try uint32()))
        }
        mutating func header() throws(ParseError) -> Header {
            guard bytes.count - at >= 44 else { throw .truncated }
            guard Array(bytes[at..<at + 4]) == Array("TZif".utf8) else { throw .notTZif }
            at += 4
            let raw = try byte()
            let version: UInt8 = raw == 0 ? 0 : raw &- 0x30
            try skip(15)
            func count(_ v: UInt32) throws(ParseError) -> Int {
                guard v < 1 << 20 else { throw .invalid("count") }
                return Int(v)
            }
            return Header(version: version, isutcnt: try count(uint32()), isstdcnt: try count(uint32()),
                          leapcnt: try count(uint32()), timecnt: try count(uint32()),
                          typecnt: try count(uint32()), charcnt: try count(uint32()))
        }
    }
}

/// A POSIX TZ string (the TZif footer): a standard offset, and optionally a daylight offset with
/// the rules of when it starts and ends each year.
public struct PosixRule: Codable, Equatable, Sendable {
    /// Seconds east of UTC (POSIX writes them west: "CET-1" is +3600).
    public var standardOffset: Int32
    public var daylightOffset: Int32?
    public var start: Change?
    public var end: Change?

    public struct Change: Codable, Equatable, Sendable {
        /// 0 = Mm.w.d, 1 = Jn (1...365, no Feb 29), 2 = n (0...365).
        public var kind: Int
        public var month = 0, week = 0, weekday = 0, day = 0
        /// Local time of the change, seconds (may be negative or past 24 h in version 3).
        public var time: Int32 = 7_200
    }

    public init?(_ text: String) {
        var s = Substring(text)
        guard Self.name(&s), let std = Self.offset(&s) else { return nil }
        standardOffset = -std
        if s.isEmpty { return }
        guard Self.name(&s) else { return nil }
        if s.first != "," && !s.isEmpty {
            guard let dst = Self.offset(&s) else { return nil }
            daylightOffset = -dst
        } else {
            daylightOffset = standardOffset + 3_600
        }
        guard s.first == "," else { if s.isEmpty { return } else { return nil } }
        s.removeFirst()
        guard let a = Self.change(&s), s.first == "," else { return nil }
        s.removeFirst()
        guard let b = Self.change(&s), s.isEmpty else { return nil }
        start = a
        end = b
    }

    private static func name(_ s: inout Substring) -> Bool {
        if s.first == "<" {
            guard let close = s.firstIndex(of: ">") else { return false }
            s = s[s.index(after: close)...]
            return true
        }
        let letters = s.prefix { $0.isLetter }
        guard letters.count >= 3 else { return false }
        s = s.dropFirst(letters.count)
        return true
    }

    /// [+-]hh[:mm[:ss]] in seconds.
    private static func offset(_ s: inout Substring) -> Int32? {
        var sign: Int32 = 1
        if s.first == "+" || s.first == "-" {
            if s.first == "-" { sign = -1 }
            s.removeFirst()
        }
        var parts: [Int32] = []
        while parts.count < 3 {
            let digits = s.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 3, let v = Int32(digits) else { return nil }
            parts.append(v)
            s = s.dropFirst(digits.count)
            guard s.first == ":" else { break }
            s.removeFirst()
        }
        let h = parts[0], m = parts.count > 1 ? parts[1] : 0, sec = parts.count > 2 ? parts[2] : 0
        guard h <= 167, m < 60, sec < 60 else { return nil }
        return sign * (h * 3_600 + m * 60 + sec)
    }

    private static func number(_ s: inout Substring) -> Int? {
        let digits = s.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 3 else { return nil }
        s = s.dropFirst(digits.count)
        return Int(digits)
    }

    private static func change(_ s: inout Substring) -> Change? {
        var c: Change
        if s.first == "M" {
            s.removeFirst()
            guard let m = number(&s), s.first == "." else { return nil }
            s.removeFirst()
            guard let w = number(&s), s.first == "." else { return nil }
            s.removeFirst()
            guard let d = number(&s), (1...12).contains(m), (1...5).contains(w), (0...6).contains(d) else { return nil }
            c = Change(kind: 0, month: m, week: w, weekday: d)
        } else if s.first == "J" {
            s.removeFirst()
            guard let n = number(&s), (1...365).contains(n) else { return nil }
            c = Change(kind: 1, day: n)
        } else {
            guard let n = number(&s), (0...365).contains(n) else { return nil }
            c = Change(kind: 2, day: n)
        }
        if s.first == "/" {
            s.removeFirst()
            guard let t = offset(&s) else { return nil }
            c.time = t
        }
        return c
    }

    public func offset(atUTC t: Int64) -> Int32 {
        guard let dst = daylightOffset, let start, let end else { return standardOffset }
        let year = CivilTime(utcSeconds: t + Int64(standardOffset)).year
        // Start is given in standard local time, end in daylight local time.
        let s = Self.localSeconds(start, year: year) - Int64(standardOffset)
        let e = Self.localSeconds(end, year: year) - Int64(dst)
        let inDST = s < e ? (t >= s && t < e) : (t >= s || t < e) // southern hemisphere: wraps the year
        return inDST ? dst : standardOffset
    }

    /// Local seconds since the epoch of the change in `year`.
    static func localSeconds(_ c: Change, year: Int64) -> Int64 {
        let jan1 = CivilTime.days(year: year, month: 1, day: 1)
        var day: Int64
        switch c.kind {
        case 1:
            day = jan1 + Int64(c.day - 1)
            if CivilTime.isLeap(year) && c.day >= 60 { day += 1 }
        case 2:
            day = jan1 + Int64(c.day)
        default:
            let first = CivilTime.days(year: year, month: Int64(c.month), day: 1)
            // 1970-01-01 was a Thursday (weekday 4, Sunday = 0).
            let firstWeekday = ((first + 4) % 7 + 7) % 7
            day = first + (Int64(c.weekday) - firstWeekday + 7) % 7 + Int64(c.week - 1) * 7
            let nextMonth = c.month == 12 ? CivilTime.days(year: year + 1, month: 1, day: 1)
                                          : CivilTime.days(year: year, month: Int64(c.month) + 1, day: 1)
            while day >= nextMonth { day -= 7 } // week 5 = the last one
        }
        return day * 86_400 + Int64(c.time)
    }
}

/// A civil (proleptic Gregorian) date and time from seconds since the epoch, without Foundation
/// (Howard Hinnant's days-from-civil algorithms).
public struct CivilTime: Equatable, Sendable {
    public var year: Int64
    public var month: Int64
    public var day: Int64
    public var hour: Int64
    public var minute: Int64
    public var second: Int64
    /// 0 = Monday ... 6 = Sunday.
    public var weekday: Int64

    public init(utcSeconds t: Int64) {
        let days = t >= 0 ? t / 86_400 : (t - 86_399) / 86_400
        let rest = t - days * 86_400
        hour = rest / 3_600
        minute = rest % 3_600 / 60
        second = rest % 60
        weekday = ((days + 3) % 7 + 7) % 7 // 1970-01-01 was a Thursday
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Days since 1970-01-01 of a civil date.
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func isLeap(_ y: Int64) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }

    /// "2026-11-24 03:05".
    public var text: String {
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(hour)):\(two(minute))"
    }
}
