import Testing
@testable import VigilAlarmCentre

@Suite struct ReplyParsingTests {
    static let receiverTime = DC09Timestamp(utcSeconds: Fixture.utcSeconds)!

    /// An encrypted ACK laid out as pysiaalarm 3.2.2 builds it: "0"s as pad, no "|".
    static func encryptedAck(_ plaintext: String = "00000000000]_02:38:32,11-28-2026", key: DC09Key = Fixture.asciiKey128,
                             header: String = "\"*ACK\"0042R12L1#1234[") -> [UInt8] {
        Fixture.framed(header + Fixture.encryptedHex(plaintext, key: key))
    }

    // MARK: accepted

    @Test func capturedPlainAckIsAnAcknowledgement() throws {
        #expect(try DC09Reply.parse(Fixture.bytes(Fixture.capturedAck), expecting: Fixture.plain) == .acknowledged(receiverTime: nil))
    }

    @Test func capturedNakIsNegativeWithReceiverTime() throws {
        let reply = try DC09Reply.parse(Fixture.bytes(Fixture.capturedNak), expecting: Fixture.plain)
        #expect(reply == .negative(receiverTime: Self.receiverTime))
        // A NAK answers whatever the centre refused: also read when the frame was encrypted.
        #expect(try DC09Reply.parse(Fixture.bytes(Fixture.capturedNak), expecting: Fixture.keyed()) == reply)
    }

    @Test func capturedDuhIsNotUnderstoodEvenForEncryptedFrame() throws {
        #expect(try DC09Reply.parse(Fixture.bytes(Fixture.capturedDuh), expecting: Fixture.plain) == .notUnderstood)
        #expect(try DC09Reply.parse(Fixture.bytes(Fixture.capturedDuh), expecting: Fixture.keyed()) == .notUnderstood)
    }

    @Test func encryptedAckIsAcknowledgementWithReceiverTime() throws {
        #expect(try DC09Reply.parse(Self.encryptedAck(), expecting: Fixture.keyed()) == .acknowledged(receiverTime: Self.receiverTime))
        // DC-09's own layout: random pad ended by "|".
        let standard = Self.encryptedAck("Zq9+/aB3kL|]_02:38:32,11-28-2026")
        #expect(try DC09Reply.parse(standard, expecting: Fixture.keyed()) == .acknowledged(receiverTime: Self.receiverTime))
        let aes256 = Self.encryptedAck(key: Fixture.hexKey256)
        #expect(try DC09Reply.parse(aes256, expecting: Fixture.keyed(Fixture.hexKey256)) == .acknowledged(receiverTime: Self.receiverTime))
    }

    @Test("NAK forms pysiaalarm and the standard send are read", arguments: [
        "\"NAK\"0000R0L0A0[]_02:38:32,11-28-2026",   // DC-09's example
        "\"NAK\"0000L0R0A0[]_02:38:32,11-28-2026",   // pysiaalarm when it cannot parse the frame
        "\"NAK\"0000L1#1234[]_02:38:32,11-28-2026",
        "\"NAK\"0000L0A0[]",
    ])
    func nakFormsAreRead(body: String) throws {
        let reply = try DC09Reply.parse(Fixture.framed(body), expecting: Fixture.plain)
        #expect(reply == .negative(receiverTime: body.hasSuffix("]") ? nil : Self.receiverTime))
    }

    @Test func plainAckMayCarryTimestampAndLowerCaseHex() throws {
        let body = "\"ACK\"0042R12L1#1234[]_02:38:32,11-28-2026"
        #expect(try DC09Reply.parse(Fixture.framed(body), expecting: Fixture.plain) == .acknowledged(receiverTime: Self.receiverTime))
        var lower = Fixture.framed("\"ACK\"0042R12L1#1234[]")
        lower.replaceSubrange(1..<5, with: Array(String(decoding: lower[1..<5], as: UTF8.self).lowercased().utf8))
        #expect(try DC09Reply.parse(lower, expecting: Fixture.plain) == .acknowledged(receiverTime: nil))
    }

    // MARK: refused, one test per error

    @Test func overlongReplyIsRefusedUnread() {
        let long = [UInt8](repeating: 0x41, count: 1025)
        #expect(throws: DC09ReplyError.tooLong(count: 1025)) { try DC09Reply.parse(long, expecting: Fixture.plain) }
    }

    @Test("broken framing is refused", arguments: [
        ("\n\r", DC09ReplyError.FramingProblem.tooShort),    // pysiaalarm's answer to a bad CRC
        ("BAB00015\"ACK\"0042R12L1#1234[]\r", .noLineFeed),
        ("\nBAB00015\"ACK\"0042R12L1#1234[]", .noCarriageReturn),
        ("\nBAB00015\"ACK\"0042R12L1#1234[]\n\r", .unprintableByte(offset: 30)),
        ("\nBAB00015\"ACK\"\t042R12L1#1234[]\r", .unprintableByte(offset: 14)),
    ])
    func brokenFramingIsRefused(text: String, problem: DC09ReplyError.FramingProblem) {
        #expect(throws: DC09ReplyError.badFraming(problem)) { try DC09Reply.parse(Fixture.bytes(text), expecting: Fixture.plain) }
    }

    @Test func nonASCIIByteIsRefused() {
        var frame = Fixture.bytes(Fixture.capturedAck)
        frame[20] = 0xC3
        #expect(throws: DC09ReplyError.badFraming(.unprintableByte(offset: 20))) { try DC09Reply.parse(frame, expecting: Fixture.plain) }
    }

    @Test func badCRCAndLengthFieldsAreRefused() {
        #expect(throws: DC09ReplyError.badCRCField) { try DC09Reply.parse(Fixture.bytes("\nBAG00015\"ACK\"0042R12L1#1234[]\r"), expecting: Fixture.plain) }
        #expect(throws: DC09ReplyError.badLengthField) { try DC09Reply.parse(Fixture.bytes("\nBAB01015\"ACK\"0042R12L1#1234[]\r"), expecting: Fixture.plain) }
        #expect(throws: DC09ReplyError.badLengthField) { try DC09Reply.parse(Fixture.bytes("\nBAB0001X\"ACK\"0042R12L1#1234[]\r"), expecting: Fixture.plain) }
        #expect(throws: DC09ReplyError.lengthMismatch(declared: 0x16, actual: 0x15)) {
            try DC09Reply.parse(Fixture.bytes("\nBAB00016\"ACK\"0042R12L1#1234[]\r"), expecting: Fixture.plain)
        }
    }

    @Test func crcMismatchIsRefused() {
        // What the harness's garbage mode sends after its junk: pysiaalarm's ACK, one CRC digit changed.
        #expect(throws: DC09ReplyError.crcMismatch(declared: 0x0AB0, computed: 0xBAB0)) {
            try DC09Reply.parse(Fixture.bytes("\n0AB00015\"ACK\"0042R12L1#1234[]\r"), expecting: Fixture.plain)
        }
    }

    @Test("tokens a reply cannot have are refused", arguments: [
        ("\"OK\"0042R12L1#1234[]", "\"OK\"0042R12L1#12"),
        ("\"*NAK\"0000R0L0A0[]", "\"*NAK\"0000R0L0A0"),
        ("\"RSP\"0042R12L1#1234[]", "\"RSP\"0042R12L1#1"),
        ("\"ADM-CID\"0042R12L1#1234[]", "\"ADM-CID\"0042R12"),
        ("\"ACKS\"0042R12L1#1234[]", "\"ACKS\"0042R12L1#"),
        ("ACK0042R12L1#1234[]", "ACK0042R12L1#123"),
        ("", ""),
    ])
    func unexpectedTokenIsRefused(body: String, shown: String) {
        #expect(throws: DC09ReplyError.unexpectedToken(shown)) { try DC09Reply.parse(Fixture.framed(body), expecting: Fixture.plain) }
    }

    @Test("replies to another message or another box are refused", arguments: [
        ("\"ACK\"0041R12L1#1234[]", DC09ReplyError.wrongSequence(expected: 42, received: 41)),
        ("\"DUH\"0043R12L1#1234[]", .wrongSequence(expected: 42, received: 43)),
        ("\"ACK\"0042R13L1#1234[]", .wrongReceiver(expected: "12", received: "13")),
        ("\"ACK\"0042L1#1234[]", .wrongReceiver(expected: "12", received: nil)),
        ("\"ACK\"0042R12L2#1234[]", .wrongLine(expected: "1", received: "2")),
        ("\"ACK\"0042R12L1#1235[]", .wrongAccount(expected: "1234", received: "1235")),
        ("\"ACK\"0042R12L1#12345[]", .wrongAccount(expected: "1234", received: "12345")),
    ])
    func replyToAnotherMessageIsRefused(body: String, error: DC09ReplyError) {
        #expect(throws: error) { try DC09Reply.parse(Fixture.framed(body), expecting: Fixture.plain) }
    }

    @Test("malformed fields are refused", arguments: [
        ("\"ACK\"00X2R12L1#1234[]", DC09ReplyError.malformed(.sequence)),
        ("\"ACK\"004", .malformed(.sequence)),
        ("\"ACK\"0042NoneL1#1234[]", .malformed(.receiver)),      // pysiaalarm, when no receiver was sent
        ("\"ACK\"0042R1234567L1#1234[]", .malformed(.receiver)),
        ("\"ACK\"0042R12#1234[]", .malformed(.line)),
        ("\"ACK\"0042R12L#1234[]", .malformed(.line)),
        ("\"ACK\"0042R12L1 1234[]", .malformed(.account)),
        ("\"ACK\"0042R12L1234[]", .wrongLine(expected: "1", received: "1234")),
        ("\"ACK\"0042R12L1#12[]", .malformed(.account)),
        ("\"ACK\"0042R12L1#1234", .malformed(.data)),
        ("\"ACK\"0042R12L1#1234[x]", .malformed(.data)),
        ("\"ACK\"0042R12L1#1234[#1234|1120 01 005]", .malformed(.data)),
        ("\"ACK\"0042R12L1#1234[]junk", .malformed(.data)),
        ("\"ACK\"0042R12L1#1234[]_02:38:32,11-28-2026junk", .badTimestamp),
        ("\"ACK\"0042R12L1#1234[]_25:38:32,11-28-2026", .badTimestamp),
        ("\"NAK\"0042R0L0A0[]", .malformed(.sequence)),
        ("\"NAK\"0000R0A0[]", .malformed(.line)),
        ("\"NAK\"0000R0L0R1A0[]", .malformed(.receiver)),
        ("\"NAK\"0000R0L0[]", .malformed(.account)),
        ("\"NAK\"0000R0L0A0[x]", .malformed(.data)),
        ("\"NAK\"0000R0L0A0[]_99:99:99,99-99-9999", .badTimestamp),
    ])
    func malformedFieldIsRefused(body: String, error: DC09ReplyError) {
        #expect(throws: error) { try DC09Reply.parse(Fixture.framed(body), expecting: Fixture.plain) }
    }

    @Test func encryptedReplyToPlainFrameIsRefused() {
        #expect(throws: DC09ReplyError.encryptedReplyWithoutKey) { try DC09Reply.parse(Self.encryptedAck(), expecting: Fixture.plain) }
    }

    @Test func plainAckToEncryptedFrameIsRefusedAsForgeable() {
        #expect(throws: DC09ReplyError.unencryptedAcknowledgement) {
            try DC09Reply.parse(Fixture.bytes(Fixture.capturedAck), expecting: Fixture.keyed())
        }
    }

    @Test func wrongKeyIsRefusedAsUnrecognisedPlaintext() {
        #expect(throws: DC09ReplyError.cannotDecrypt(.unrecognisedPlaintext)) {
            try DC09Reply.parse(Self.encryptedAck(), expecting: Fixture.keyed(Fixture.hexKey256))
        }
    }

    @Test func encryptedRegionThatIsNotHexOrWholeBlocksIsRefused() {
        #expect(throws: DC09ReplyError.cannotDecrypt(.notHex)) { try DC09Reply.parse(Fixture.framed("\"*ACK\"0042R12L1#1234[ABC"), expecting: Fixture.keyed()) }
        #expect(throws: DC09ReplyError.cannotDecrypt(.notHex)) { try DC09Reply.parse(Fixture.framed("\"*ACK\"0042R12L1#1234[ZZ"), expecting: Fixture.keyed()) }
        #expect(throws: DC09ReplyError.cannotDecrypt(.notWholeBlocks)) { try DC09Reply.parse(Fixture.framed("\"*ACK\"0042R12L1#1234[ABCD"), expecting: Fixture.keyed()) }
        #expect(throws: DC09ReplyError.cannotDecrypt(.notWholeBlocks)) { try DC09Reply.parse(Fixture.framed("\"*ACK\"0042R12L1#1234["), expecting: Fixture.keyed()) }
    }

    @Test("decrypted regions that are not pad, ] and a timestamp are refused", arguments: [
        ("000000000000000]", DC09ReplyError.missingTimestamp),
        ("0000000000[]_02:38:32,11-28-2026", .cannotDecrypt(.unrecognisedPlaintext)),
        ("000|00000000]_02:38:32,11-28-2026", .cannotDecrypt(.unrecognisedPlaintext)),
        ("0000000000000000", .cannotDecrypt(.unrecognisedPlaintext)),
        ("00000000000]_02:38:32,11-28-20266", .cannotDecrypt(.unrecognisedPlaintext)),
        ("000000000]_02:38:32,11-28-2026[K1]", .cannotDecrypt(.unrecognisedPlaintext)),
    ])
    func unrecognisedDecryptedRegionIsRefused(plaintext: String, error: DC09ReplyError) {
        var padded = plaintext
        while padded.utf8.count % 16 != 0 { padded = "0" + padded }
        #expect(throws: error) { try DC09Reply.parse(Self.encryptedAck(padded), expecting: Fixture.keyed()) }
    }

    @Test func encryptedReplyOutsideTheFreshnessWindowIsRefusedAsReplay() throws {
        let sentAt = Fixture.utcSeconds
        func expecting(_ sent: Int64) -> DC09Expectation {
            DC09Expectation(identity: Fixture.identity, sequence: Fixture.sequence, key: Fixture.asciiKey128, sentAtUTCSeconds: sent)
        }
        // The reply's time is 02:38:32 = sentAt: fresh, and still fresh 120 s either way.
        #expect(try DC09Reply.parse(Self.encryptedAck(), expecting: expecting(sentAt + 120)) == .acknowledged(receiverTime: Self.receiverTime))
        #expect(try DC09Reply.parse(Self.encryptedAck(), expecting: expecting(sentAt - 120)) == .acknowledged(receiverTime: Self.receiverTime))
        #expect(throws: DC09ReplyError.staleReply(receiverTime: Self.receiverTime, sentAtUTCSeconds: sentAt + 121)) {
            try DC09Reply.parse(Self.encryptedAck(), expecting: expecting(sentAt + 121))
        }
        #expect(throws: DC09ReplyError.staleReply(receiverTime: Self.receiverTime, sentAtUTCSeconds: .min)) {
            try DC09Reply.parse(Self.encryptedAck(), expecting: expecting(.min))
        }
    }

    @Test func capturedPysiaalarmEncryptedAckReheadedForAnotherSequenceIsCaughtOnlyByItsTime() throws {
        // pysiaalarm's *ACK to sequence 9995 and to 0009 in the same second were the same ciphertext
        // (pad "0"s, zero IV, no sequence inside): re-headed, it decrypts fine for any sequence.
        let key = try DC09Key(bytes: Array("0123456789ABCDEF".utf8))
        let captured = "F24ACB2B0C7CA6B63DC9C4CD9328202FC637C93C91362619D248545F903719E8"  // 03:01:14,11-28-2026
        let reheaded = Fixture.framed("\"*ACK\"0042R12L1#1234[" + captured)
        let capturedAt = DC09Timestamp(year: 2026, month: 11, day: 28, hour: 3, minute: 1, second: 14)!
        let fresh = DC09Expectation(identity: Fixture.identity, sequence: Fixture.sequence, key: key,
                                    sentAtUTCSeconds: capturedAt.utcSeconds + 5)
        #expect(try DC09Reply.parse(reheaded, expecting: fresh) == .acknowledged(receiverTime: capturedAt))
        let later = DC09Expectation(identity: Fixture.identity, sequence: Fixture.sequence, key: key,
                                    sentAtUTCSeconds: capturedAt.utcSeconds + 3600)
        #expect(throws: DC09ReplyError.staleReply(receiverTime: capturedAt, sentAtUTCSeconds: capturedAt.utcSeconds + 3600)) {
            try DC09Reply.parse(reheaded, expecting: later)
        }
    }

    @Test func encryptedDuhIsNotUnderstood() throws {
        let duh = Self.encryptedAck(header: "\"*DUH\"0042R12L1#1234[")
        #expect(try DC09Reply.parse(duh, expecting: Fixture.keyed()) == .notUnderstood)
    }
}
