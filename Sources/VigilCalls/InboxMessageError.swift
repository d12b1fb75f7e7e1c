/// Why an inbox file's content is not a text message this code reads. The node logs the
/// description with the file name and leaves the file for a person to look at. `part` counts
/// a "detail" file's `[SMSBackupNNN]` sections from 0.
public enum InboxMessageError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Over the limit (`InboxMessage.maximumFileSize` unless the caller gave another).
    case tooLarge(byteCount: Int, limit: Int)
    /// An 8-bit (data) message: a `.bin` file, or `Coding = 8bit`. Not text, so not a reply.
    case binaryMessage
    /// "standard": the bytes are not UTF-8 (the daemon runs in a non-UTF-8 locale, or the file
    /// is not gammu's).
    case invalidUTF8(offset: Int)
    /// "unicode": an odd number of bytes cannot be UTF-16.
    case oddUTF16Length(byteCount: Int)
    /// "detail": a line that is not `[section]`, a comment or `key = value` (1-based).
    case malformedLine(line: Int)
    /// "detail": a key given twice in one section.
    case duplicateKey(String, part: Int)
    /// "detail": no `[SMSBackupNNN]` section.
    case noMessage
    /// "detail": a PDU other than Deliver or Status_Report (nil: none), not a received message.
    case notReceived(pdu: String?, part: Int)
    /// "detail": no `NumberUnicode` or `Number`, or an empty one.
    case missingSender(part: Int)
    /// "detail": a hex value (`NumberUnicode`, `Text`, `UDH`) with a non-hex digit or an odd
    /// length.
    case badHex(key: String, part: Int)
    /// "detail": `TextNN` keys not numbered 00, 01, … without a gap.
    case textGap(part: Int)
    /// "detail": a `Coding` gammu cannot have received as text (compressed, or unknown).
    case unsupportedCoding(String, part: Int)
    /// "detail": sections from different senders in one file (gammu links only one sender's).
    case partsFromDifferentSenders
    /// "detail": a delivery report and a message in one file.
    case mixedKinds
    /// "detail": several sections that are not parts of one linked message.
    case unlinkedParts(Int)
    /// "detail": the same part number twice.
    case repeatedPart(Int)

    public var description: String {
        let prefix = "gammu-smsd inbox file not read: "
        switch self {
        case let .tooLarge(count, limit):
            return prefix + "\(count) bytes, over the \(limit)-byte limit for a reply"
        case .binaryMessage:
            return prefix + "an 8-bit data message, not text"
        case let .invalidUTF8(offset):
            return prefix + "not UTF-8 at byte \(offset) (inboxformat = standard needs gammu-smsd in a UTF-8 locale, e.g. LANG=C.UTF-8; better, inboxformat = detail)"
        case let .oddUTF16Length(count):
            return prefix + "\(count) bytes, an odd length for UTF-16 (inboxformat = unicode)"
        case let .malformedLine(line):
            return prefix + "line \(line) is not a [section], a comment or key = value (inboxformat = detail)"
        case let .duplicateKey(key, part):
            return prefix + "\(key) twice in section \(part)"
        case .noMessage:
            return prefix + "no [SMSBackup…] section (is inboxformat really detail?)"
        case let .notReceived(pdu, part):
            return prefix + "section \(part) has PDU \(pdu ?? "(none)"), not Deliver or Status_Report"
        case let .missingSender(part):
            return prefix + "section \(part) has no sender (NumberUnicode or Number)"
        case let .badHex(key, part):
            return prefix + "section \(part): \(key) is not hex of whole characters"
        case let .textGap(part):
            return prefix + "section \(part): its Text00, Text01, … lines have a gap"
        case let .unsupportedCoding(coding, part):
            return prefix + "section \(part) has Coding \(coding), not Default_No_Compression, Unicode_No_Compression or 8bit"
        case .partsFromDifferentSenders:
            return prefix + "its parts come from different senders"
        case .mixedKinds:
            return prefix + "it mixes a delivery report with a message"
        case let .unlinkedParts(count):
            return prefix + "its \(count) sections are not the parts of one linked message"
        case let .repeatedPart(number):
            return prefix + "part \(number) appears twice"
        }
    }
}
