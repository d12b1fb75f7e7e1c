/// Pulls whole `LF … CR` frames out of the bytes a centre's TCP stream delivers, in whatever
/// pieces they arrive. Bounded: it holds at most one partial frame of `maximumFrameLength`
/// bytes and `maximumPendingFrames` complete ones, whatever the peer sends. Everything that
/// cannot be part of a frame is dropped and counted: bytes before an LF, a partial frame cut
/// short by a new LF, a frame that grows past the limit before its CR, frames past the queue.
///
/// It only delimits: what is between LF and CR is `DC09Reply.parse`'s to judge.
public struct DC09FrameSplitter: Sendable {
    public let maximumFrameLength: Int
    public let maximumPendingFrames: Int
    /// Bytes dropped as garbage so far (saturating).
    public private(set) var droppedBytes: UInt64 = 0
    /// Complete frames dropped because `maximumPendingFrames` were already waiting (saturating).
    public private(set) var droppedFrames: UInt64 = 0

    /// The frame being collected (starts with LF), empty between frames.
    private var partial: [UInt8] = []
    private var pending: [[UInt8]] = []

    public init(maximumFrameLength: Int = DC09Reply.maximumLength, maximumPendingFrames: Int = 8) {
        self.maximumFrameLength = max(2, maximumFrameLength)
        self.maximumPendingFrames = max(1, maximumPendingFrames)
    }

    /// Bytes held now: the partial frame and the complete ones not yet taken.
    public var bufferedByteCount: Int { pending.reduce(partial.count) { $0 + $1.count } }

    /// Takes the next piece of the stream.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        for byte in bytes { take(byte) }
    }

    /// The oldest complete frame (LF first, CR last), or nil if none is complete yet.
    public mutating func nextFrame() -> [UInt8]? {
        pending.isEmpty ? nil : pending.removeFirst()
    }

    private mutating func take(_ byte: UInt8) {
        if byte == ASCII.lineFeed {
            drop(partial.count)
            partial = [byte]
        } else if partial.isEmpty {
            drop(1)
        } else if byte == ASCII.carriageReturn {
            partial.append(byte)
            if pending.count < maximumPendingFrames {
                pending.append(partial)
            } else {
                drop(partial.count)
                droppedFrames = droppedFrames == .max ? .max : droppedFrames + 1
            }
            partial = []
        } else if partial.count + 1 >= maximumFrameLength {
            // No room left for this byte and a CR: the frame is too long to be a reply.
            drop(partial.count + 1)
            partial = []
        } else {
            partial.append(byte)
        }
    }

    private mutating func drop(_ count: Int) {
        let (sum, overflow) = droppedBytes.addingReportingOverflow(UInt64(count))
        droppedBytes = overflow ? .max : sum
    }
}
