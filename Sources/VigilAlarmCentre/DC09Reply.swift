/// A centre's answer to one frame, read strictly: a reply is hostile input until it has passed
/// every check. Forms read (§5.5.2; the layout pysiaalarm 3.2.2 sends is the same):
///
///     ACK   LF crc 0LLL "ACK"seq[Rrcvr]Lpref#acct[]            [_timestamp] CR
///     *ACK  LF crc 0LLL "*ACK"seq[Rrcvr]Lpref#acct[<hex>                    CR
///           <hex> = AES-CBC(pad [|] ] _timestamp), pad any bytes but | [ ]
///     NAK   LF crc 0LLL "NAK"0000[Rrcvr]Lpref A<hex>|#acct []  [_timestamp] CR
///     DUH   LF crc 0LLL "DUH"seq[Rrcvr]Lpref#acct[]            [_timestamp] CR  (or *DUH, as *ACK)
///
/// An ACK or DUH must name the sequence, receiver, line and account sent; an encrypted one must
/// carry a time within the expectation's window of the frame's own (the encrypted region binds
/// nothing else, so this is what keeps an old ACK from being replayed). A NAK names none of
/// them (sequence 0000: it answers whatever the centre could not accept, most often a timestamp
/// outside its window) and is never encrypted; its receiver and line are checked for form only,
/// in either order (pysiaalarm sends `L0R0` when it cannot parse a frame at all).
///
/// What the sender does with each: `.acknowledged` — delivered, done; `.negative` — not
/// accepted: resend (the receiver's time tells how far off the box's clock is; it is not
/// authenticated, so take it as a hint only); `.notUnderstood` — the centre does not handle
/// this message: resending the same bytes will not help, report it.
public enum DC09Reply: Sendable, Equatable {
    /// ACK: the centre took the message. `receiverTime` is the centre's clock when it said so
    /// (always present when encrypted).
    case acknowledged(receiverTime: DC09Timestamp?)
    /// NAK: the centre refused the message; `receiverTime` is its clock if it sent one.
    case negative(receiverTime: DC09Timestamp?)
    /// DUH: the centre received the message but does not understand or support it.
    case notUnderstood

    /// The longest reply read (longer ones are refused unread); a real one is under 100 bytes.
    public static let maximumLength = 1024

    /// Reads one reply frame — the bytes from LF to CR inclusive, as `DC09FrameSplitter` hands
    /// them out — as an answer to the frame `expecting` describes. Never traps, whatever the bytes.
    public static func parse(_ frame: [UInt8], expecting: DC09Expectation) throws(DC09ReplyError) -> DC09Reply {
        let body = try checkedBody(frame)
        var cursor = ByteCursor(body)
        let (kind, encrypted) = try idToken(&cursor)
        if kind == .negative {
            return try negative(&cursor)
        }
        if encrypted, expecting.key == nil { throw .encryptedReplyWithoutKey }
        if !encrypted, kind == .acknowledged, expecting.key != nil { throw .unencryptedAcknowledgement }
        try route(&cursor, expecting: expecting)
        guard cursor.take(ASCII.leftBracket) else { throw .malformed(.data) }
        let receiverTime: DC09Timestamp?
        if encrypted, let key = expecting.key {
            let time = try decryptedTime(cursor.rest, key: key)
            if let sent = expecting.sentAtUTCSeconds {
                // No overflow whatever `sent` a hand-built expectation holds.
                let (difference, overflow) = time.utcSeconds.subtractingReportingOverflow(sent)
                if overflow || difference.magnitude > UInt64(expecting.freshnessWindowSeconds) {
                    throw .staleReply(receiverTime: time, sentAtUTCSeconds: sent)
                }
            }
            receiverTime = time
        } else {
            guard cursor.take(ASCII.rightBracket) else { throw .malformed(.data) }
            receiverTime = try optionalTimestamp(cursor.rest)
        }
        return kind == .acknowledged ? .acknowledged(receiverTime: receiverTime) : .notUnderstood
    }

    private enum Kind { case acknowledged, negative, notUnderstood }

    /// Checks the frame's bytes, length and CRC; returns the body (from the ID token's `"` to the
    /// byte before CR).
    private static func checkedBody(_ frame: [UInt8]) throws(DC09ReplyError) -> ArraySlice<UInt8> {
        guard frame.count <= maximumLength else { throw .tooLong(count: frame.count) }
        guard frame.count >= 10 else { throw .badFraming(.tooShort) }
        guard frame[0] == ASCII.lineFeed else { throw .badFraming(.noLineFeed) }
        guard frame[frame.count - 1] == ASCII.carriageReturn else { throw .badFraming(.noCarriageReturn) }
        let inner = frame[1..<(frame.count - 1)]
        if let bad = inner.firstIndex(where: { !ASCII.isPrintable($0) }) { throw .badFraming(.unprintableByte(offset: bad)) }
        var crc: UInt16 = 0
        for byte in inner.prefix(4) {
            guard let digit = ASCII.hexValue(byte) else { throw .badCRCField }
            crc = crc << 4 | UInt16(digit)
        }
        let lengthField = inner.dropFirst(4).prefix(4)
        guard lengthField.first == ASCII.zero else { throw .badLengthField }
        var declared = 0
        for byte in lengthField.dropFirst() {
            guard let digit = ASCII.hexValue(byte) else { throw .badLengthField }
            declared = declared << 4 | Int(digit)
        }
        let body = inner.dropFirst(8)
        guard declared == body.count else { throw .lengthMismatch(declared: declared, actual: body.count) }
        let computed = DC09CRC.checksum(body)
        guard computed == crc else { throw .crcMismatch(declared: crc, computed: computed) }
        return body
    }

    /// `"ACK"`, `"*ACK"`, `"NAK"`, `"DUH"` or `"*DUH"`.
    private static func idToken(_ cursor: inout ByteCursor) throws(DC09ReplyError) -> (Kind, encrypted: Bool) {
        let start = cursor.rest
        guard cursor.take(ASCII.quote) else { throw .unexpectedToken(ASCII.excerpt(start)) }
        let encrypted = cursor.take(ASCII.star)
        let name = cursor.takeWhile(maximum: 3) { $0 != ASCII.quote }
        guard cursor.take(ASCII.quote) else { throw .unexpectedToken(ASCII.excerpt(start)) }
        switch (Array(name), encrypted) {
        case (Array("ACK".utf8), _): return (.acknowledged, encrypted)
        case (Array("DUH".utf8), _): return (.notUnderstood, encrypted)
        case (Array("NAK".utf8), false): return (.negative, false)
        default: throw .unexpectedToken(ASCII.excerpt(start))
        }
    }

    /// seq [Rrcvr] Lpref #acct, each compared with what was sent.
    private static func route(_ cursor: inout ByteCursor, expecting: DC09Expectation) throws(DC09ReplyError) {
        let digits = cursor.take(count: 4)
        guard digits.count == 4, let sequence = ASCII.decimalValue(digits) else { throw .malformed(.sequence) }
        guard sequence == expecting.sequence.value else { throw .wrongSequence(expected: expecting.sequence.value, received: sequence) }
        let identity = expecting.identity
        var receiver: String?
        if cursor.take(ASCII.capitalR) {
            receiver = try hexToken(&cursor, lengths: 1...6, field: .receiver)
        } else if cursor.peek != ASCII.capitalL {
            throw .malformed(.receiver)
        }
        guard receiver == identity.receiver else { throw .wrongReceiver(expected: identity.receiver, received: receiver) }
        guard cursor.take(ASCII.capitalL) else { throw .malformed(.line) }
        let line = try hexToken(&cursor, lengths: 1...6, field: .line)
        guard line == identity.line else { throw .wrongLine(expected: identity.line, received: line) }
        guard cursor.take(ASCII.hash) else { throw .malformed(.account) }
        let account = try hexToken(&cursor, lengths: 3...16, field: .account)
        guard account == identity.account else { throw .wrongAccount(expected: identity.account, received: account) }
    }

    /// The rest of a NAK: 0000, receiver and line in either order, `A<hex>` or `#acct`, `[]`, an
    /// optional timestamp.
    private static func negative(_ cursor: inout ByteCursor) throws(DC09ReplyError) -> DC09Reply {
        guard Array(cursor.take(count: 4)) == Array("0000".utf8) else { throw .malformed(.sequence) }
        // Up to "[": the route and the account. The account is the last "#…" or else the last
        // "A…" (A is a hex digit, so it cannot end a greedy line token by itself).
        let segment = cursor.takeWhile(maximum: 40) { $0 != ASCII.leftBracket }
        guard let accountStart = segment.lastIndex(of: ASCII.hash) ?? segment.lastIndex(of: ASCII.capitalA) else {
            throw .malformed(.account)
        }
        var account = ByteCursor(segment[(accountStart + 1)...])
        let accountLengths = segment[accountStart] == ASCII.hash ? 3...16 : 1...16
        _ = try hexToken(&account, lengths: accountLengths, field: .account)
        guard account.isAtEnd else { throw .malformed(.account) }
        var routing = ByteCursor(segment[..<accountStart])
        var sawReceiver = false, sawLine = false
        while let next = routing.peek {
            if next == ASCII.capitalR, !sawReceiver {
                _ = routing.take(next)
                _ = try hexToken(&routing, lengths: 1...6, field: .receiver)
                sawReceiver = true
            } else if next == ASCII.capitalL, !sawLine {
                _ = routing.take(next)
                _ = try hexToken(&routing, lengths: 1...6, field: .line)
                sawLine = true
            } else {
                throw .malformed(sawLine ? .receiver : .line)
            }
        }
        guard sawLine else { throw .malformed(.line) }
        guard cursor.take(ASCII.leftBracket), cursor.take(ASCII.rightBracket) else { throw .malformed(.data) }
        return .negative(receiverTime: try optionalTimestamp(cursor.rest))
    }

    /// 1 to `lengths.upperBound` hex digits, greedy, upper-cased; throws `.malformed(field)` for
    /// fewer than `lengths.lowerBound` or more than the upper bound.
    private static func hexToken(_ cursor: inout ByteCursor, lengths: ClosedRange<Int>, field: DC09ReplyError.Field)
        throws(DC09ReplyError) -> String {
        let digits = cursor.takeWhile(maximum: lengths.upperBound + 1) { ASCII.hexValue($0) != nil }
        guard lengths.contains(digits.count) else { throw .malformed(field) }
        return String(decoding: digits.map(ASCII.upper), as: UTF8.self)
    }

    /// Nothing, or exactly one timestamp.
    private static func optionalTimestamp(_ rest: ArraySlice<UInt8>) throws(DC09ReplyError) -> DC09Timestamp? {
        if rest.isEmpty { return nil }
        guard let time = DC09Timestamp.parse(rest) else {
            throw rest.first == ASCII.underscore ? .badTimestamp : .malformed(.data)
        }
        return time
    }

    /// The encrypted region of a `*ACK` or `*DUH`: hex of pad, optional `|`, `]`, timestamp.
    private static func decryptedTime(_ hex: ArraySlice<UInt8>, key: DC09Key) throws(DC09ReplyError) -> DC09Timestamp {
        guard let ciphertext = Hex.decode(hex) else { throw .cannotDecrypt(.notHex) }
        guard !ciphertext.isEmpty, ciphertext.count % DC09Cipher.blockSize == 0 else { throw .cannotDecrypt(.notWholeBlocks) }
        guard let plaintext = DC09Cipher.decrypt(ciphertext, key: key) else { throw .cannotDecrypt(.cipherFailed) }
        // The pad: anything but "[" and "]", with "|" allowed only as its last byte (DC-09 ends
        // the pad with "|"; pysiaalarm pads with "0"s and no "|").
        guard let close = plaintext.firstIndex(of: ASCII.rightBracket) else { throw .cannotDecrypt(.unrecognisedPlaintext) }
        let pad = plaintext[..<close]
        guard !pad.contains(ASCII.leftBracket), !pad.dropLast().contains(ASCII.bar) else {
            throw .cannotDecrypt(.unrecognisedPlaintext)
        }
        let rest = plaintext[(close + 1)...]
        if rest.isEmpty { throw .missingTimestamp }
        guard let time = DC09Timestamp.parse(rest) else { throw .cannotDecrypt(.unrecognisedPlaintext) }
        return time
    }
}

/// A read position in a slice: every read is bounds-checked and returns what is there.
struct ByteCursor {
    private(set) var rest: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

    var isAtEnd: Bool { rest.isEmpty }
    var peek: UInt8? { rest.first }

    /// Consumes `byte` if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        guard rest.first == byte else { return false }
        rest = rest.dropFirst()
        return true
    }

    /// Up to `count` bytes (fewer at the end).
    mutating func take(count: Int) -> ArraySlice<UInt8> {
        let taken = rest.prefix(count)
        rest = rest.dropFirst(taken.count)
        return taken
    }

    /// The bytes while `predicate` holds, at most `maximum`.
    mutating func takeWhile(maximum: Int, _ predicate: (UInt8) -> Bool) -> ArraySlice<UInt8> {
        var count = 0
        for byte in rest {
            guard count < maximum, predicate(byte) else { break }
            count += 1
        }
        return take(count: count)
    }
}
