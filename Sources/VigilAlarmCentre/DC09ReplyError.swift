/// Why a reply from the centre was refused. A refused reply acknowledges nothing: the sender
/// treats it like no reply at all (keep the event, resend it with the same sequence after the
/// usual wait), and counts the case, since most of them mean something to fix:
/// framing, CRC and length cases a broken link or a peer that is not a DC-09 receiver; the
/// `wrong…` cases a reply to another frame or another box (or a misconfigured centre); the key
/// cases a key mismatch. Strings in cases are bytes of the reply, printable ASCII only, at most 16.
public enum DC09ReplyError: Error, Equatable, Sendable {
    /// Over `DC09Reply.maximumLength` bytes: refused unread.
    case tooLong(count: Int)
    /// Not one `LF … CR` frame of printable ASCII.
    case badFraming(FramingProblem)
    /// The four bytes after LF are not hex digits.
    case badCRCField
    /// The next four are not "0" and three hex digits.
    case badLengthField
    /// The length field does not count the bytes from the ID token to CR.
    case lengthMismatch(declared: Int, actual: Int)
    /// The CRC field does not match the bytes (a damaged or forged frame).
    case crcMismatch(declared: UInt16, computed: UInt16)
    /// The ID token is not one a reply has: `"ACK"`, `"*ACK"`, `"NAK"`, `"DUH"`, `"*DUH"`.
    case unexpectedToken(String)
    /// A field is not written as DC-09 writes it (or stray bytes follow one).
    case malformed(Field)
    /// A well-formed reply to another message: its sequence is not the one sent.
    case wrongSequence(expected: Int, received: Int)
    /// A reply naming another receiver number (nil: none named where one was sent, or the reverse).
    case wrongReceiver(expected: String?, received: String?)
    /// A reply naming another line (account prefix).
    case wrongLine(expected: String, received: String)
    /// A reply for another account.
    case wrongAccount(expected: String, received: String)
    /// An encrypted reply to a frame sent in the clear: no key to read it with.
    case encryptedReplyWithoutKey
    /// A clear ACK to an encrypted frame. Anyone on the path can forge one, so it does not count:
    /// the centre must answer in kind (§5.4: the ACK proves the centre holds the key).
    case unencryptedAcknowledgement
    /// The encrypted region could not be read.
    case cannotDecrypt(DecryptProblem)
    /// The timestamp is not `_HH:MM:SS,MM-DD-YYYY` with fields in range.
    case badTimestamp
    /// An encrypted reply without the timestamp that keeps it from being replayed.
    case missingTimestamp
    /// An encrypted reply whose time is further from the frame's own timestamp than the
    /// expectation's window. Its encrypted region holds only pad and time — not the sequence or
    /// account, which travel in the clear — so a captured ACK re-headed for another frame
    /// decrypts fine; its old time is what gives it away. (Or the centre's clock is far off.)
    case staleReply(receiverTime: DC09Timestamp, sentAtUTCSeconds: Int64)

    public enum FramingProblem: Equatable, Sendable {
        /// Shorter than LF, CRC, length and CR.
        case tooShort
        /// The first byte is not LF.
        case noLineFeed
        /// The last byte is not CR.
        case noCarriageReturn
        /// A control or non-ASCII byte (or a second LF or CR) at this offset from the LF.
        case unprintableByte(offset: Int)
    }

    public enum Field: Equatable, Sendable {
        case sequence, receiver, line, account, data
    }

    public enum DecryptProblem: Equatable, Sendable {
        /// The region after `[` is not an even count of hex digits.
        case notHex
        /// Not a whole, non-zero number of 16-byte blocks.
        case notWholeBlocks
        /// The AES implementation refused it.
        case cipherFailed
        /// Decrypted, it is not pad, `]` and a timestamp: most likely the wrong key.
        case unrecognisedPlaintext
    }
}
