/// The content of one gammu-smsd inbox file, decoded and cleaned: the text to show and to read
/// replies from. Pure: the caller reads the file (at most `maximumFileSize + 1` bytes, so an
/// oversized file is refused rather than read whole) and says which `InboxFormat` the daemon
/// is configured with; the content does not reliably tell.
///
/// Linked (long) messages: gammu-smsd collects the parts on the phone, links them by their
/// concatenation header and waits up to `multiparttimeout` (600 s by default) for missing
/// ones; then it writes them all at once ("detail": one file with a section a part, in order;
/// "standard" and "unicode": one file a part, `_00`, `_01`, …, with nothing in them saying
/// which part of how many). After the timeout an incomplete message is written as far as it
/// got, so in "standard" and "unicode" a lone `_00` file can be the middle or end of a message.
/// `linking` says what the content tells; `InboundSMS` turns it into whether the text may be
/// read as a reply.
public struct InboxMessage: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// A message someone sent (PDU Deliver).
        case message
        /// A delivery report for a message the box sent (PDU Status_Report; its text is
        /// "Delivered", "Failed" or "Pending"). gammu-smsd writes these into the inbox like
        /// messages unless `deliveryreport = log`; only "detail" tells them apart.
        case deliveryReport
    }

    public enum Linking: Hashable, Sendable {
        /// "standard", "unicode": the file is one part; its number is in the file name only.
        case onePartFile
        /// A message of one SMS.
        case single
        /// Every part of a linked message, joined in order.
        case complete(parts: Int)
        /// Some parts of a linked message (their 1-based numbers), joined in order: gammu-smsd
        /// gave up waiting for the rest.
        case incomplete(received: [Int], total: Int)
    }

    /// The text, cleaned (`InboxText.sanitised`): no control characters but "\n".
    public let text: String
    public let kind: Kind
    /// The sender from the content ("detail" only: `NumberUnicode`, exact whatever the
    /// daemon's locale), else nil: use the file name's.
    public let sender: String?
    public let linking: Linking

    /// Larger files are refused: a reply is a few words; a "detail" file of a linked message
    /// takes about 750 bytes a part, so this holds ten.
    public static let maximumFileSize = 8192

    public init(text: String, kind: Kind, sender: String?, linking: Linking) {
        self.text = text
        self.kind = kind
        self.sender = sender
        self.linking = linking
    }

    /// Decodes an inbox file's bytes. `fileExtension` is the name's: in "standard" and
    /// "unicode" a `.bin` file is raw 8-bit data; "detail" says so inside.
    public static func decode(
        _ bytes: some Collection<UInt8>, format: InboxFormat, fileExtension: InboxFileName.Extension = .txt,
        limit: Int = maximumFileSize
    ) throws(InboxMessageError) -> InboxMessage {
        guard bytes.count <= limit else { throw .tooLarge(byteCount: bytes.count, limit: limit) }
        switch format {
        case .standard:
            guard fileExtension == .txt else { throw .binaryMessage }
            return InboxMessage(text: try standardText(Array(bytes)), kind: .message, sender: nil, linking: .onePartFile)
        case .unicode:
            guard fileExtension == .txt else { throw .binaryMessage }
            return InboxMessage(text: try unicodeText(Array(bytes)), kind: .message, sender: nil, linking: .onePartFile)
        case .detail:
            return try SMSBackupReader.message(Array(bytes))
        }
    }

    private static func standardText(_ bytes: [UInt8]) throws(InboxMessageError) -> String {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var scalars: [Unicode.Scalar] = []
        var consumed = 0
        while true {
            switch decoder.decode(&iterator) {
            case let .scalarValue(scalar):
                scalars.append(scalar)
                consumed += UTF8.width(scalar)
            case .emptyInput:
                return InboxText.sanitised(scalars)
            case .error:
                throw .invalidUTF8(offset: consumed)
            }
        }
    }

    private static func unicodeText(_ bytes: [UInt8]) throws(InboxMessageError) -> String {
        guard bytes.count % 2 == 0 else { throw .oddUTF16Length(byteCount: bytes.count) }
        if bytes.starts(with: [0xFF, 0xFE]) {
            let swapped = InboxText.unitsBigEndian(bytes.dropFirst(2)).map(\.byteSwapped)
            return InboxText.decode(utf16: swapped)
        }
        let body = bytes.starts(with: [0xFE, 0xFF]) ? bytes.dropFirst(2) : bytes[...]
        return InboxText.decode(utf16: InboxText.unitsBigEndian(body))
    }
}
