import Testing
import VigilSystem
import VigilCalls

/// The replies staff and residents send, read strictly: the documented keywords in any case
/// with punctuation around them, a short code, and nothing else.
@Suite("SMS replies")
struct SMSReplyTests {
    @Test(arguments: [
        "TAKE", "take", "Take.", " TAKE ", "TAKE!", "\"Take\"", "take\n", "TAKEN", "taken.", "On my way",
        "ON MY WAY!", "on  my\nway...", "¡Take!", "…take…",
    ])
    func aTakeKeywordTakesTheCallItWasSent(text: String) {
        #expect(SMSReply.parse(text) == .take(code: nil))
    }

    @Test(arguments: [
        ("T4821", "T4821"), ("t4821", "T4821"), (" T4821. ", "T4821"), ("TAKE T4821", "T4821"),
        ("take t4821", "T4821"), ("Take: T4821", "T4821"), ("TAKE - T4821!", "T4821"), ("taken T4821", "T4821"),
        ("On my way T4821", "T4821"), ("A0000", "A0000"), ("(K9999)", "K9999"),
    ])
    func aShortCodeTakesThatCall(text: String, code: String) {
        #expect(SMSReply.parse(text) == .take(code: code))
    }

    @Test(arguments: [
        "OK", "ok", "Ok.", "OK!", " ok ", "OKAY", "okay!", "YES", "yes.", "I'm OK", "I’m ok!", "i‘m ok", "Iʼm OK",
        "IM OK", "im ok", "I am OK", "I AM OK.", "¡OK!", "OK .", "'OK'",
    ])
    func anOKKeywordAnswersAreYouOK(text: String) {
        #expect(SMSReply.parse(text) == .ok)
    }

    @Test(arguments: [
        "", " ", "...", "OK thanks", "OK 👍", "👍", "not OK", "NO", "TAKE?!? maybe", "T4821 TAKE", "TAKE T48210",
        "TAKE T482", "T-4821", "4821", "TT4821", "OK T4821", "TAKE TAKE", "I'M NOT OK", "I'M", "K", "Y", "TAKEN?no",
        "T4821 T4822", "ＯＫ", "OK\u{200B}", "TA KE", "TAKE\u{202E}", "Sí", "I am fine",
        String(repeating: "OK ", count: 100),
    ])
    func anythingElseIsUnrecognisedAndKeepsItsText(text: String) {
        #expect(SMSReply.parse(text) == .unrecognised(text))
    }

    @Test func theKeywordListsAreSmallAndExplicit() {
        #expect(SMSReply.takeReplies.map { $0.joined(separator: " ") } == ["TAKE", "TAKEN", "ON MY WAY"])
        #expect(SMSReply.okReplies.map { $0.joined(separator: " ") } == ["OK", "OKAY", "YES", "I'M OK", "IM OK", "I AM OK"])
    }

    @Test func aDecodedMessageIsReadOnlyAfterCleaning() throws {
        // The inbox decoder drops a bidi override and a zero-width space: what is left is read.
        let message = try InboxMessage.decode(Array("TA\u{200B}KE\u{202E}\r\n".utf8), format: .standard)
        #expect(SMSReply.parse(message.text) == .take(code: nil))
    }
}

/// Short codes for calls for help: generated from the caller's random bytes, unambiguous,
/// uniform, and matched in any case.
@Suite("Short codes")
struct ShortCodeTests {
    @Test func aCodeIsALetterAndFourDigitsInAnyCase() {
        #expect(ShortCode("T4821")?.text == "T4821")
        #expect(ShortCode("t4821") == ShortCode("T4821"))
        for bad in ["", "T482", "T48210", "44821", "TT821", "É4821", "T48２1", " T4821", "Ｔ4821"] {
            #expect(ShortCode(bad) == nil, "\(bad)")
        }
    }

    @Test func generatedCodesUseOnlyUnambiguousLettersAndAllOfThem() throws {
        #expect(ShortCode.letters.count == 17)
        for ambiguous in ["B", "D", "G", "I", "L", "O", "Q", "S", "Z"] as [Unicode.Scalar] {
            #expect(!ShortCode.letters.contains(ambiguous))
        }
        var random = SplitMix64(seed: 7)
        var letters: [Unicode.Scalar: Int] = [:]
        var digits: [Character: Int] = [:]
        for _ in 0..<17_000 {
            let code = try ShortCode.generate(randomBytes: random.bytes(ShortCode.recommendedRandomByteCount))
            let scalars = Array(code.text.unicodeScalars)
            letters[scalars[0], default: 0] += 1
            for d in code.text.dropFirst() { digits[d, default: 0] += 1 }
        }
        #expect(Set(letters.keys) == Set(ShortCode.letters))
        #expect(letters.values.allSatisfy { (800...1_200).contains($0) }, "about 1,000 each: \(letters)")
        #expect(digits.count == 10 && digits.values.allSatisfy { (6_200...7_400).contains($0) }, "about 6,800 each: \(digits)")
    }

    @Test func theSameBytesGiveTheSameCodeAndBiasedBytesAreSkipped() throws {
        #expect(try ShortCode.generate(randomBytes: [0, 0, 0, 0, 0]).text == "A0000")
        #expect(try ShortCode.generate(randomBytes: [16, 1, 2, 3, 4]).text == "Y1234")
        // 255 is never a letter (15 × 17 = 255), 250...255 never a digit.
        #expect(try ShortCode.generate(randomBytes: [255, 1, 250, 2, 3, 4, 5]).text == "C2345")
    }

    @Test func codesInUseAreAvoided() throws {
        let taken: Set<ShortCode> = [try #require(ShortCode("A0000"))]
        #expect(try ShortCode.generate(randomBytes: [0, 0, 0, 0, 0, 1, 1, 1, 1, 1], avoiding: taken).text == "C1111")
    }

    @Test func tooFewBytesIsATypedError() {
        #expect(throws: ShortCodeError.notEnoughRandomBytes(given: 4)) { try ShortCode.generate(randomBytes: [1, 2, 3, 4]) }
        #expect(throws: ShortCodeError.notEnoughRandomBytes(given: 5)) {
            try ShortCode.generate(randomBytes: [0, 0, 0, 0, 0], avoiding: [try #require(ShortCode("A0000"))])
        }
        #expect(throws: ShortCodeError.notEnoughRandomBytes(given: 0)) { try ShortCode.generate(randomBytes: []) }
        #expect(ShortCodeError.notEnoughRandomBytes(given: 4).description.contains("32"))
    }
}
