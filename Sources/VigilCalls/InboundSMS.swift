/// One gammu-smsd inbox file read whole: its name, its content, who sent it and whether its
/// text may be read as a reply. The node calls `read` when the inbox directory reports a file
/// closed after writing (inotify IN_CLOSE_WRITE: gammu writes with stdio, so a file seen at
/// IN_CREATE can still be empty or partial) or moved in (IN_MOVED_TO).
///
/// The text is read as a reply (`SMSReply.parse`) only when it is a whole message someone sent:
/// - not a delivery report;
/// - not part 2 or later of a linked message ("standard"/"unicode" files `_01`, `_02`, …: the
///   middle or end of a longer text, which can be exactly "OK");
/// - not a linked message missing parts ("detail" only: gammu-smsd wrote what it had after
///   `multiparttimeout`). "standard" and "unicode" cannot tell such a remnant from a message;
///   one more reason to configure "detail".
public struct InboundSMS: Hashable, Sendable {
    public enum Answer: Hashable, Sendable {
        case reply(SMSReply)
        /// Part 2 or later (1-based `part + 1`) of a linked message in its own file.
        case continuation(part: Int)
        /// A linked message with parts missing.
        case incompleteMessage(received: [Int], total: Int)
        /// A delivery report for a message the box sent.
        case deliveryReport
    }

    public let fileName: InboxFileName
    public let message: InboxMessage
    /// The content's sender when the format has one ("detail": exact), else the file name's.
    public let sender: InboxSender
    public let answer: Answer

    public static func read(
        name: some Collection<UInt8>, contents: some Collection<UInt8>, format: InboxFormat,
        limit: Int = InboxMessage.maximumFileSize
    ) throws(InboundSMSError) -> InboundSMS {
        let fileName: InboxFileName
        do { fileName = try InboxFileName(name) } catch { throw .name(error) }
        let message: InboxMessage
        do {
            message = try InboxMessage.decode(contents, format: format, fileExtension: fileName.fileExtension, limit: limit)
        } catch { throw .content(error) }

        let answer: Answer
        if message.kind == .deliveryReport {
            answer = .deliveryReport
        } else if fileName.part > 0 {
            answer = .continuation(part: fileName.part + 1)
        } else if case let .incomplete(received, total) = message.linking {
            answer = .incompleteMessage(received: received, total: total)
        } else {
            answer = .reply(SMSReply.parse(message.text))
        }
        return InboundSMS(fileName: fileName, message: message,
                          sender: InboxSender(message.sender ?? fileName.sender), answer: answer)
    }
}

/// Why an inbox file was not read: its name or its content.
public enum InboundSMSError: Error, Hashable, Sendable, CustomStringConvertible {
    case name(InboxFileNameError)
    case content(InboxMessageError)

    public var description: String {
        switch self {
        case let .name(error): return error.description
        case let .content(error): return error.description
        }
    }
}
