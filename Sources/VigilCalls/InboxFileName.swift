/// The name gammu-smsd's FILES backend gives a received SMS in its inbox directory:
///
///     IN<date>_<time>_<serial>_<sender>_<part>.<extension>
///     IN20250114_093005_00_+34600111222_00.txt
///
/// as gammu 1.42 (Debian 12) writes it (`smsd/services/files.c`), checked against the real
/// daemon (docs/calls-for-help.md "Replies by SMS"):
///
/// - `<date>_<time>`: the message's SMSC time stamp (when the sender's service centre took it,
///   in that centre's local time; the zone is dropped), `YYYYMMDD_HHMMSS`. Not the time the box
///   received it: use the node's clock for that. When the network's stamp is invalid gammu
///   zeroes the year and prints the rest unchecked, so the fields can be `00MMDD` and wider than
///   2 digits; such a name is still a message (`timestamp` is nil).
/// - `<serial>`: 00 to 99, the first that makes the name new (two messages from one sender in
///   the same second get 00 and 01).
/// - `<sender>`: the sender as the network gave it, decoded in the daemon's locale: `+` and
///   digits for a number, any text for an alphanumeric sender ("Vigil_Test", "Jösé Ñ"),
///   non-ASCII as `?` when the daemon runs in the C locale, `*` written as `X`. It can contain
///   `_`, `.` and spaces; it is read as everything between the serial and the part, so it is
///   never ambiguous. Undecodable bytes become U+FFFD and control characters are dropped.
/// - `<part>`: 00 to 99. In the "standard" and "unicode" formats each part of a linked (long)
///   message is its own file, numbered in order from 00; "detail" keeps every part in one `_00`
///   file.
/// - `<extension>`: `txt` for text, `bin` for an 8-bit (data) message. The inbox format does
///   not change it: a "detail" file is also `.txt` or `.bin` (gammu's docs mention
///   `.smsbackup`, which only its outbox reads).
///
/// Anything else (another file in the directory, a temporary file, a name over 255 bytes) is
/// refused with an `InboxFileNameError`.
public struct InboxFileName: Hashable, Sendable {
    public enum Extension: String, Hashable, Sendable {
        case txt, bin
    }

    /// A valid calendar date and time of day (seconds 0 to 59), as the name gives them.
    public struct Timestamp: Hashable, Sendable, CustomStringConvertible {
        public let year: Int
        public let month: Int
        public let day: Int
        public let hour: Int
        public let minute: Int
        public let second: Int

        public var description: String {
            "\(Self.pad(year, 4))-\(Self.pad(month, 2))-\(Self.pad(day, 2)) \(Self.pad(hour, 2)):\(Self.pad(minute, 2)):\(Self.pad(second, 2))"
        }

        private static func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
    }

    /// The SMSC time stamp, or nil when gammu had none valid (see the type's documentation).
    public let timestamp: Timestamp?
    public let serial: Int
    /// The sender as the name spells it (never empty). `senderAddress` says whether it is a
    /// phone number.
    public let sender: String
    public let part: Int
    public let fileExtension: Extension

    /// Longer names are refused unread: Linux file names are at most 255 bytes.
    public static let maximumLength = 255

    public var senderAddress: InboxSender { InboxSender(sender) }

    /// Parses a file name as the directory listing (or inotify) gives it: bytes, not
    /// necessarily UTF-8.
    public init(_ name: some Collection<UInt8>) throws(InboxFileNameError) {
        let bytes = Array(name)
        guard bytes.count <= Self.maximumLength else { throw .tooLong(byteCount: bytes.count) }
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "I"), bytes[1] == UInt8(ascii: "N") else {
            throw .notAnInboxFile
        }
        guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot >= 2 else { throw .unknownExtension("") }
        let suffix = bytes[(dot + 1)...]
        guard let ext = Extension(rawValue: String(decoding: suffix, as: UTF8.self)) else {
            throw .unknownExtension(InboxText.excerpt(String(decoding: suffix, as: UTF8.self), limit: 16))
        }

        var scanner = DigitScanner(bytes: bytes, position: 2, end: dot)
        guard let date = scanner.digits(min: 6, max: 8), scanner.skip(UInt8(ascii: "_")),
              let time = scanner.digits(min: 6, max: 9), scanner.skip(UInt8(ascii: "_"))
        else { throw .malformedTimestamp }
        guard let serial = scanner.digits(min: 2, max: 2), scanner.skip(UInt8(ascii: "_")) else {
            throw .malformedSerial
        }
        // From the end: "_" and two digits of part, before the extension's dot.
        let senderStart = scanner.position
        guard dot - senderStart >= 3, bytes[dot - 3] == UInt8(ascii: "_"),
              let part = DigitScanner.value(of: bytes[(dot - 2)..<dot])
        else { throw .malformedPart }
        let rawSender = bytes[senderStart..<(dot - 3)]
        let sender = InboxText.sanitised(String(decoding: rawSender, as: UTF8.self).unicodeScalars)
        guard !sender.isEmpty else { throw .emptySender }

        self.timestamp = Self.timestamp(date: date, time: time)
        self.serial = serial.value
        self.sender = sender
        self.part = part
        self.fileExtension = ext
    }

    public init(_ name: String) throws(InboxFileNameError) {
        try self.init(Array(name.utf8))
    }

    /// The time stamp when the date has its 4-digit year and every field is in range.
    private static func timestamp(date: DigitScanner.Digits, time: DigitScanner.Digits) -> Timestamp? {
        guard date.count == 8, time.count == 6 else { return nil }
        let year = date.value / 10_000, month = date.value / 100 % 100, day = date.value % 100
        let hour = time.value / 10_000, minute = time.value / 100 % 100, second = time.value % 100
        guard year >= 1, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour < 24, minute < 60, second < 60
        else { return nil }
        return Timestamp(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// Runs of ASCII digits in a byte string, read without arithmetic that could overflow (at most
/// 9 digits a run).
struct DigitScanner {
    struct Digits {
        let value: Int
        let count: Int
    }

    let bytes: [UInt8]
    var position: Int
    let end: Int

    /// The next `min...max` digits, or nil (and nothing consumed) when there are fewer, or the
    /// run goes on past `max`.
    mutating func digits(min: Int, max: Int) -> Digits? {
        var index = position
        var value = 0
        while index < end, index - position < max, let d = Self.digit(bytes[index]) {
            value = value * 10 + d
            index += 1
        }
        let count = index - position
        guard count >= min, index >= end || Self.digit(bytes[index]) == nil else { return nil }
        position = index
        return Digits(value: value, count: count)
    }

    mutating func skip(_ byte: UInt8) -> Bool {
        guard position < end, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// The value of a short run that must be all digits.
    static func value(of run: some Collection<UInt8>) -> Int? {
        guard !run.isEmpty, run.count <= 9 else { return nil }
        var value = 0
        for byte in run {
            guard let d = digit(byte) else { return nil }
            value = value * 10 + d
        }
        return value
    }

    static func digit(_ byte: UInt8) -> Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int(byte - UInt8(ascii: "0")) : nil
    }
}
