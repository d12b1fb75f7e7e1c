/// Builds DC-09 frames (§5.5.1):
///
///     LF crc 0LLL "ID" seq [Rrcvr] Lpref #acct [data]_HH:MM:SS,MM-DD-YYYY CR
///
/// - crc: four upper-case hex digits, `DC09CRC` of everything from the ID token's `"` to the
///   byte before CR;
/// - 0LLL: "0" and three upper-case hex digits, the count of the same bytes;
/// - ID: `"ADM-CID"` or `"NULL"`, `"*ADM-CID"` / `"*NULL"` when encrypted.
///
/// Encrypted (§5.4): the region after `[` — data, `]` and timestamp — gets a pad of 1 to 16
/// characters and a `|` in front so its length is a multiple of 16 (16 pad characters when it
/// already is), is encrypted with AES-CBC and a zero IV, and is sent as upper-case hex after the
/// clear `[`. The pad characters come from the caller's random bytes (the low six bits of each
/// pick one of 64 letters, digits, `+` and `/`: never `|`, `[`, `]` nor a control byte, which
/// some receivers choke on), so the same event never encrypts the same twice.
///
/// Pure: the time and the random bytes are the caller's. A retry after no reply is encoded anew —
/// the same sequence number, the current time, fresh pad bytes — since receivers refuse a
/// timestamp outside their window and `DC09Reply` checks an encrypted reply's time against the
/// frame's.
public enum DC09Frame {
    /// The most pad bytes an encrypted frame takes (the caller passes at least this many).
    public static let maximumPadCount = 16

    /// The frame for `message` from `identity`, numbered `sequence`, stamped with `utcSeconds`
    /// (seconds since 1970 UTC, from the caller's wall clock), encrypted if `key` is given with the
    /// first pad bytes of `pad` (at least `maximumPadCount` random bytes; ignored without a key).
    public static func encode(
        _ message: DC09Message, identity: DC09Identity, sequence: DC09Sequence, key: DC09Key?,
        utcSeconds: Int64, pad: [UInt8]
    ) throws(DC09EncodeError) -> DC09OutgoingFrame {
        guard let timestamp = DC09Timestamp(utcSeconds: utcSeconds) else { throw .timeOutOfRange(utcSeconds: utcSeconds) }
        // The region after "[": data, "]", timestamp.
        let region = message.data(account: identity.account) + [ASCII.rightBracket] + timestamp.ascii
        var body = [ASCII.quote] + (key == nil ? [] : [ASCII.star]) + message.token + [ASCII.quote]
            + sequence.ascii + identity.headerTail + [ASCII.leftBracket]
        if let key {
            body += Hex.encode(try encrypt(region, key: key, pad: pad))
        } else {
            body += region
        }
        // Our bodies are at most a few hundred bytes; the 0LLL field holds up to 0xFFF.
        let frame = [ASCII.lineFeed] + ASCII.hex(DC09CRC.checksum(body), width: 4) + [ASCII.zero]
            + ASCII.hex(UInt16(truncatingIfNeeded: body.count), width: 3) + body + [ASCII.carriageReturn]
        return DC09OutgoingFrame(bytes: frame, expectation: DC09Expectation(identity: identity, sequence: sequence, key: key,
                                                                            sentAtUTCSeconds: utcSeconds))
    }

    /// `report` (Vigil's code table, `AlarmReport`) as an `ADM-CID` frame in `partition`.
    public static func encode(
        _ report: AlarmReport, partition: Int = 1, identity: DC09Identity, sequence: DC09Sequence, key: DC09Key?,
        utcSeconds: Int64, pad: [UInt8]
    ) throws(DC09EncodeError) -> DC09OutgoingFrame {
        try encode(.contactID(report.contactID(partition: partition)), identity: identity, sequence: sequence, key: key,
                   utcSeconds: utcSeconds, pad: pad)
    }

    /// pad + "|" + region, a whole number of blocks, encrypted.
    static func encrypt(_ region: [UInt8], key: DC09Key, pad: [UInt8]) throws(DC09EncodeError) -> [UInt8] {
        let padCount = padCount(forRegionOf: region.count)
        guard pad.count >= padCount else { throw .padTooShort(needed: padCount, given: pad.count) }
        let plaintext = pad.prefix(padCount).map { padAlphabet[Int($0 & 0x3F)] } + [ASCII.bar] + region
        guard let ciphertext = DC09Cipher.encrypt(plaintext, key: key) else { throw .encryptionFailed }
        return ciphertext
    }

    /// 1...16: what makes pad + "|" + region a multiple of 16 (§5.4.4.3: a full 16 when it
    /// already is one).
    static func padCount(forRegionOf count: Int) -> Int { 16 - (count + 1) % 16 }

    /// 64 characters, so one random byte's low six bits pick one without bias.
    static let padAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
}
