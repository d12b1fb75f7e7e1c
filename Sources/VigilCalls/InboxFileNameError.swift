/// Why a file in gammu-smsd's inbox directory is not one of its received messages. The node
/// logs it and leaves the file alone (it is not gammu's, or not one this code understands).
public enum InboxFileNameError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Over `InboxFileName.maximumLength` bytes.
    case tooLong(byteCount: Int)
    /// Does not start with "IN" (a temporary or hidden file, something else in the directory).
    case notAnInboxFile
    /// Does not end in ".txt" or ".bin" (the text after the last dot, cut short).
    case unknownExtension(String)
    /// The date and time after "IN" are not `digits_digits_` (6 to 8, then 6 to 9 digits).
    case malformedTimestamp
    /// The serial after the time is not two digits and "_".
    case malformedSerial
    /// The name does not end in "_" and two digits of part before the extension.
    case malformedPart
    /// Nothing (or only control characters) between the serial and the part.
    case emptySender

    public var description: String {
        switch self {
        case let .tooLong(count):
            return "not a gammu-smsd inbox file: its name is \(count) bytes, over \(InboxFileName.maximumLength)"
        case .notAnInboxFile:
            return "not a gammu-smsd inbox file: the name does not start with IN"
        case let .unknownExtension(ext):
            return "not a gammu-smsd inbox file: it ends in \".\(ext)\", not .txt or .bin"
        case .malformedTimestamp:
            return "not a gammu-smsd inbox file: IN is not followed by the date and time (IN20250114_093005_…)"
        case .malformedSerial:
            return "not a gammu-smsd inbox file: the time is not followed by a two-digit serial (…_093005_00_…)"
        case .malformedPart:
            return "not a gammu-smsd inbox file: the name does not end in a two-digit part before the extension (…_00.txt)"
        case .emptySender:
            return "gammu-smsd inbox file without a sender: nothing between the serial and the part (…_00__00.txt)"
        }
    }
}
