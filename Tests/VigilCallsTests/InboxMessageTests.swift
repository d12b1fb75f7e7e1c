import Testing
import VigilCalls

/// Inbox file contents in each of gammu-smsd's formats, decoded from files the real daemon
/// wrote (CapturedInbox), and every content that is not a text message refused.
@Suite("Inbox file contents")
struct InboxMessageTests {
    private func decode(_ format: InboxFormat, _ scenario: String, locale: String = "C.UTF-8") throws -> [InboxMessage] {
        let files = CapturedInbox.files(format, scenario, locale: locale)
        try #require(!files.isEmpty, "no capture \(format) \(scenario) \(locale)")
        return try files.map { file in
            try InboxMessage.decode(file.bytes, format: format, fileExtension: try InboxFileName(file.name).fileExtension)
        }
    }

    private let accentsAndEmoji = "Sí, José está OK 👍"

    // MARK: Each format, as the daemon wrote it

    @Test(arguments: InboxFormat.allCases)
    func aPlainReplyReadsTheSameInEveryFormat(format: InboxFormat) throws {
        #expect(try decode(format, "take").map(\.text) == ["TAKE"])
        #expect(try decode(format, "code").map(\.text) == ["take t4821"])
        #expect(try decode(format, "same-second").map(\.text) == ["OK", "Yes"])
    }

    @Test func standardIsTheTextInUTF8InAUTF8Locale() throws {
        let message = try #require(try decode(.standard, "accents-emoji").first)
        #expect(message.text == accentsAndEmoji)
        #expect(message.sender == nil)
        #expect(message.linking == .onePartFile)
        #expect(message.kind == .message)
    }

    @Test func standardInTheCLocaleHasAQuestionMarkForEveryNonASCIICharacter() throws {
        #expect(try decode(.standard, "accents-emoji", locale: "C").map(\.text) == ["S?, Jos? est? OK ?"])
    }

    @Test func unicodeIsUTF16BigEndianAfterABOMAndStopsAtTheFirstNUL() throws {
        let file = try #require(CapturedInbox.files(.unicode, "accents-emoji").first)
        #expect(Array(file.bytes.prefix(2)) == [0xFE, 0xFF])
        // gammu 1.42 writes as many units as the UTF-8 text has bytes: NULs after the emoji.
        #expect(Array(file.bytes.suffix(10)) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(try decode(.unicode, "accents-emoji").map(\.text) == [accentsAndEmoji])
    }

    @Test func unicodeInTheCLocaleCutsAnEmojiToAReplacementCharacter() throws {
        // One unit short: the high surrogate alone.
        let file = try #require(CapturedInbox.files(.unicode, "accents-emoji", locale: "C").first)
        #expect(Array(file.bytes.suffix(2)) == [0xD8, 0x3D])
        #expect(try decode(.unicode, "accents-emoji", locale: "C").map(\.text) == ["Sí, José está OK \u{FFFD}"])
    }

    @Test func unicodeReadsALittleEndianBOMAndNoBOM() throws {
        #expect(try InboxMessage.decode([0xFF, 0xFE, 0x4F, 0x00, 0x4B, 0x00], format: .unicode).text == "OK")
        #expect(try InboxMessage.decode([0x00, 0x4F, 0x00, 0x4B], format: .unicode).text == "OK")
        #expect(try InboxMessage.decode([0xFE, 0xFF], format: .unicode).text == "")
        #expect(try InboxMessage.decode([], format: .unicode).text == "")
    }

    @Test(arguments: ["C.UTF-8", "C"])
    func detailIsExactInAnyLocale(locale: String) throws {
        let message = try #require(try decode(.detail, "accents-emoji", locale: locale).first)
        #expect(message.text == accentsAndEmoji)
        #expect(message.sender == "+34600111223")
        #expect(message.linking == .single)
        #expect(message.kind == .message)
        let sender = try #require(try decode(.detail, "accented-sender", locale: locale).first)
        #expect(sender.sender == "Jösé Ñ", "NumberUnicode, not the locale's Number")
    }

    @Test func detailTellsADeliveryReportFromAMessage() throws {
        let report = try #require(try decode(.detail, "status-report").first)
        #expect(report.kind == .deliveryReport)
        #expect(report.text == "Delivered")
        // The other formats cannot: the report is a file with the text "Delivered".
        #expect(try decode(.standard, "status-report").map(\.kind) == [.message])
    }

    // MARK: Linked messages

    private let long = String(repeating: "Ana está bien, gracias. ", count: 5) + "¿Necesitáis algo más? Llamad al 112 si hace falta."

    @Test func detailJoinsALinkedMessagesPartsInOneFile() throws {
        let message = try #require(try decode(.detail, "long").first)
        #expect(message.text == long)
        #expect(message.linking == .complete(parts: 3))
    }

    @Test(arguments: [InboxFormat.standard, .unicode])
    func standardAndUnicodeWriteAFilePerPart(format: InboxFormat) throws {
        let parts = try decode(format, "long")
        #expect(parts.count == 3)
        #expect(parts.map(\.text).joined() == long)
        #expect(parts.allSatisfy { $0.linking == .onePartFile })
    }

    @Test func detailSaysALinkedMessageIsIncompleteAfterTheTimeout() throws {
        let message = try #require(try decode(.detail, "incomplete").first)
        #expect(message.linking == .incomplete(received: [1], total: 2))
        #expect(message.text.hasPrefix("Parte uno."))
    }

    @Test func detailOrdersPartsByTheirNumberAndKeepsASurrogatePairSplitBetweenThem() throws {
        let file = Self.detail(sections: [
            Self.section(number: "+34600111222", textHex: "DC4D", udh: "050003070202"),
            Self.section(number: "+34600111222", textHex: "004F004B0020D83D", udh: "050003070201"),
        ])
        let message = try InboxMessage.decode(file, format: .detail)
        #expect(message.text == "OK 👍")
        #expect(message.linking == .complete(parts: 2))
        let sixteenBit = Self.detail(sections: [Self.section(number: "+34600111222", textHex: "004F", udh: "06080401020200")])
        #expect(try InboxMessage.decode(sixteenBit, format: .detail).linking == .single, "sequence 0 is no part")
        let ok16 = Self.detail(sections: [Self.section(number: "+34600111222", textHex: "004F", udh: "06080401020201")])
        #expect(try InboxMessage.decode(ok16, format: .detail).linking == .incomplete(received: [1], total: 2))
    }

    // MARK: Cleaning

    @Test(arguments: InboxFormat.allCases)
    func controlCharactersAndBidiOverridesAreDroppedAndLineBreaksKept(format: InboxFormat) throws {
        #expect(try decode(format, "controls").map(\.text) == ["I'm OK\nthanks!"])
    }

    @Test func aLoneCarriageReturnIsALineBreak() throws {
        #expect(try InboxMessage.decode(Array("OK\rthanks\r\n\u{2028}x".utf8), format: .standard).text == "OK\nthanks\n\nx")
        #expect(try InboxMessage.decode(Array("👨\u{200D}👩\u{200B}".utf8), format: .standard).text == "👨\u{200D}👩",
                "the zero-width joiner of an emoji sequence stays, a zero-width space goes")
    }

    // MARK: Refused

    @Test(arguments: InboxFormat.allCases)
    func aFileOverTheLimitIsRefused(format: InboxFormat) {
        let big = [UInt8](repeating: 0x41, count: InboxMessage.maximumFileSize + 1)
        #expect(throws: InboxMessageError.tooLarge(byteCount: 8193, limit: 8192)) { try InboxMessage.decode(big, format: format) }
        #expect(throws: InboxMessageError.tooLarge(byteCount: 11, limit: 10)) {
            try InboxMessage.decode(Array("TAKE TAKE!".utf8) + [0x41], format: format, limit: 10)
        }
    }

    @Test(arguments: InboxFormat.allCases)
    func anEightBitMessageIsRefusedAsNotText(format: InboxFormat) throws {
        let file = try #require(CapturedInbox.files(format, "data").first)
        #expect(throws: InboxMessageError.binaryMessage) {
            try InboxMessage.decode(file.bytes, format: format, fileExtension: try InboxFileName(file.name).fileExtension)
        }
    }

    @Test func standardRefusesBytesThatAreNotUTF8() {
        #expect(throws: InboxMessageError.invalidUTF8(offset: 3)) { try InboxMessage.decode([0x4A, 0x6F, 0x73, 0xE9], format: .standard) }
        #expect(throws: InboxMessageError.invalidUTF8(offset: 0)) { try InboxMessage.decode([0xC0, 0xAF], format: .standard) }
        #expect(throws: InboxMessageError.invalidUTF8(offset: 0)) { try InboxMessage.decode([0xED, 0xA0, 0x80], format: .standard) }
    }

    @Test func unicodeRefusesAnOddLength() {
        #expect(throws: InboxMessageError.oddUTF16Length(byteCount: 5)) { try InboxMessage.decode([0xFE, 0xFF, 0, 0x4F, 0], format: .unicode) }
    }

    @Test func detailRefusesWhatGammuNeverWrites() {
        let ok = Self.section(number: "+34600111222", textHex: "004F004B")
        func refused(_ text: String, _ error: InboxMessageError) {
            #expect(throws: error, "\(text)") { try InboxMessage.decode(Array(text.utf8), format: .detail) }
        }
        refused("", .noMessage)
        refused("; only a comment\n\n", .noMessage)
        refused("[Other]\nNumber = \"x\"\n", .noMessage)
        refused("TAKE", .malformedLine(line: 1))
        refused("[SMSBackup000]\nTAKE\n", .malformedLine(line: 2))
        refused("[SMSBackup000\nNumber = \"x\"\n", .malformedLine(line: 1))
        refused("[SMSBackup000]\n = 1\n", .malformedLine(line: 2))
        refused(ok.replacingOccurrences("PDU = Deliver", "PDU = Submit"), .notReceived(pdu: "Submit", part: 0))
        refused(ok.replacingOccurrences("PDU = Deliver\n", ""), .notReceived(pdu: nil, part: 0))
        refused(ok + "PDU = Deliver\n", .duplicateKey("pdu", part: 0))
        refused(ok.replacingOccurrences("Number = \"+34600111222\"\r\nNumberUnicode = 002B00330034003600300030003100310031003200320032\r\n", ""),
                .missingSender(part: 0))
        refused(ok.replacingOccurrences("002B00330034003600300030003100310031003200320032", ""), .missingSender(part: 0))
        refused(ok.replacingOccurrences("002B0033", "002G0033"), .badHex(key: "NumberUnicode", part: 0))
        refused(ok.replacingOccurrences("Text00 = 004F004B", "Text00 = 004F004"), .badHex(key: "Text", part: 0))
        refused(ok.replacingOccurrences("Text00 = 004F004B", "Text00 = 004F00"), .badHex(key: "Text", part: 0))
        refused(ok.replacingOccurrences("Text00", "Text01"), .textGap(part: 0))
        refused(ok.replacingOccurrences("Default_No_Compression", "Unicode_Compression"), .unsupportedCoding("unicode_compression", part: 0))
        refused(ok.replacingOccurrences("Coding = Default_No_Compression\n", ""), .binaryMessage)
        refused(ok + Self.section(number: "+34600111333", textHex: "004F"), .partsFromDifferentSenders)
        refused(ok + ok, .unlinkedParts(2))
        refused(ok + ok.replacingOccurrences("PDU = Deliver", "PDU = Status_Report"), .mixedKinds)
        let part = Self.section(number: "+34600111222", textHex: "004F", udh: "050003070201")
        refused(part + part, .repeatedPart(1))
        refused(part + Self.section(number: "+34600111222", textHex: "004F", udh: "050003080202"), .unlinkedParts(2))
        refused(part.replacingOccurrences("UDH = 050003070201", "UDH = 05000307020"), .badHex(key: "UDH", part: 0))
    }

    @Test func detailSkipsCommentsAndUnknownKeysWithoutDecodingThem() throws {
        let bytes = Array("; \u{FF}\u{FE} not UTF-8 below\n".utf8) + [0x3B, 0xE9, 0x0A]
            + Array(Self.section(number: "+34600111222", textHex: "004F004B").replacingOccurrences("Coding", "Unknown = \u{7}\nCoding").utf8)
        #expect(try InboxMessage.decode(bytes, format: .detail).text == "OK")
    }

    @Test func errorsSayWhatToConfigure() {
        #expect(InboxMessageError.invalidUTF8(offset: 3).description.contains("LANG=C.UTF-8"))
        #expect(InboxMessageError.noMessage.description.contains("detail"))
    }

    // MARK: Hand-made detail files (the same layout as the captured ones)

    static func section(number: String, textHex: String, udh: String? = nil) -> String {
        let numberHex = number.unicodeScalars.map { scalar -> String in
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return String(repeating: "0", count: 4 - hex.count) + hex
        }.joined()
        return "[SMSBackup000]\nSMSC = \"\"\r\nPDU = Deliver\nDateTime = 20250114T093005Z\r\nState = UnRead\n"
            + "Number = \"\(number)\"\r\nNumberUnicode = \(numberHex)\r\n" + (udh.map { "UDH = \($0)\n" } ?? "")
            + "Text00 = \(textHex)\r\nCoding = Default_No_Compression\nFolder = 1\nLength = 2\n\n"
    }

    static func detail(sections: [String]) -> [UInt8] {
        Array(("; This file format was designed for Gammu and is compatible with Gammu+\n\n" + sections.joined()).utf8)
    }
}

extension String {
    /// Foundation-free replacement of every occurrence (test helper).
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            out += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}
