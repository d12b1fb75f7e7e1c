/// The lines of a feed stream (`GET /api/v1/boxes/{node}/feed?stream=1`), as they arrive in
/// pieces of any size: each complete line (without its newline) once, none longer than
/// `maximumLength`. The hub is trusted only as far as its pin goes: a stream that never ends a
/// line must not take the box's memory.
public struct FeedLines: Sendable {
    /// 200 items of at most 4 KiB, in base64 and JSON, fit with room to spare.
    public static let defaultMaximumLength = 2 << 20

    public enum Failure: Error, Equatable, Sendable {
        case lineTooLong(limit: Int)
    }

    public let maximumLength: Int
    private var pending: [UInt8] = []

    public init(maximumLength: Int = FeedLines.defaultMaximumLength) {
        self.maximumLength = maximumLength
    }

    /// The lines `bytes` completes, oldest first. Empty lines are skipped; bytes after the last
    /// newline wait for the next piece.
    public mutating func take(_ bytes: some Collection<UInt8>) throws(Failure) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        for byte in bytes {
            if byte == 0x0A {
                if !pending.isEmpty { lines.append(pending) }
                pending.removeAll(keepingCapacity: true)
            } else {
                guard pending.count < maximumLength else { throw .lineTooLong(limit: maximumLength) }
                pending.append(byte)
            }
        }
        return lines
    }

    /// Bytes of an unfinished line (a stream that ends there was cut).
    public var unfinished: Int { pending.count }
}
