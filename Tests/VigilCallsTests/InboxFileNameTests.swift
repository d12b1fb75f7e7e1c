import Testing
import VigilCalls

/// gammu-smsd's inbox file names, as the real daemon wrote them (CapturedInbox), and every
/// other name refused.
@Suite("Inbox file names")
struct InboxFileNameTests {
    @Test func everyCapturedNameParsesWithItsSenderAndPart() throws {
        #expect(CapturedInbox.all.count >= 40)
        for file in CapturedInbox.all {
            let name = try InboxFileName(file.name)
            #expect(name.timestamp != nil, "\(file.name)")
            #expect(file.name.contains("_\(name.sender)_"), "\(file.name)")
        }
    }

    @Test func aNumberSenderItsTimestampSerialAndPart() throws {
        let name = try InboxFileName("IN20250114_093005_01_+34600111227_00.txt")
        let t = try #require(name.timestamp)
        #expect([t.year, t.month, t.day, t.hour, t.minute, t.second] == [2025, 1, 14, 9, 30, 5])
        #expect(name.timestamp?.description == "2025-01-14 09:30:05")
        #expect(name.serial == 1)
        #expect(name.sender == "+34600111227")
        #expect(name.senderAddress == .number(try PhoneNumber("+34600111227")))
        #expect(name.part == 0)
        #expect(name.fileExtension == .txt)
    }

    @Test func twoMessagesWithOneTimeStampFromOneSenderGetSerials00And01() throws {
        let names = try CapturedInbox.files(.standard, "same-second").map { try InboxFileName($0.name) }
        #expect(names.map(\.serial) == [0, 1])
        #expect(Set(names.map(\.timestamp)).count == 1)
    }

    @Test func aLinkedMessagesPartsAreNumberedFrom00InStandardAndUnicode() throws {
        for format in [InboxFormat.standard, .unicode] {
            let names = try CapturedInbox.files(format, "long").map { try InboxFileName($0.name) }
            #expect(names.map(\.part) == [0, 1, 2])
            #expect(Set(names.map(\.serial)) == [0])
        }
        #expect(try CapturedInbox.files(.detail, "long").map { try InboxFileName($0.name).part } == [0])
    }

    @Test func anAlphanumericSenderWithUnderscoresIsReadWhole() throws {
        let name = try InboxFileName("IN20261128_024404_00_Vigil_Test_00.txt")
        #expect(name.sender == "Vigil_Test")
        #expect(name.senderAddress == .other("Vigil_Test"))
        #expect(try InboxFileName("IN20261128_024404_00__00_x_.y_00.txt").sender == "_00_x_.y")
    }

    @Test func aStarInTheSenderArrivesAsX() throws {
        let name = try InboxFileName(try #require(CapturedInbox.files(.standard, "star-sender").first).name)
        #expect(name.sender == "X111#")
        #expect(name.senderAddress == .other("X111#"))
    }

    @Test func anAccentedSenderIsUTF8InAUTF8LocaleAndQuestionMarksInC() throws {
        let utf8 = try InboxFileName(try #require(CapturedInbox.files(.unicode, "accented-sender").first).name)
        #expect(utf8.sender == "Jösé Ñ")
        let c = try InboxFileName(try #require(CapturedInbox.files(.unicode, "accented-sender", locale: "C").first).name)
        #expect(c.sender == "J?s? ?")
    }

    @Test func senderBytesThatAreNotUTF8BecomeReplacementCharacters() throws {
        let bytes = Array("IN20250114_093005_00_Jos".utf8) + [0xE9] + Array("_00.txt".utf8)
        #expect(try InboxFileName(bytes).sender == "Jos\u{FFFD}")
    }

    @Test func controlCharactersInTheSenderAreDropped() throws {
        #expect(try InboxFileName("IN20250114_093005_00_A\u{1B}[2JB\u{202E}_00.txt").sender == "A[2JB")
    }

    @Test func anEightBitMessageIsBin() throws {
        let file = try #require(CapturedInbox.files(.standard, "data").first)
        #expect(try InboxFileName(file.name).fileExtension == .bin)
        let detail = try #require(CapturedInbox.files(.detail, "data").first)
        #expect(try InboxFileName(detail.name).fileExtension == .bin, "detail keeps the .bin extension")
    }

    @Test func anInvalidNetworkTimeStampStillNamesAMessage() throws {
        // gammu zeroes the year of an invalid SMSC time stamp and prints the rest unchecked.
        let zeroed = try InboxFileName("IN001399_162530_00_+34600111222_00.txt")
        #expect(zeroed.timestamp == nil)
        #expect(zeroed.sender == "+34600111222")
        #expect(try InboxFileName("IN000000_000000_00_+34600111222_00.txt").timestamp == nil)
        #expect(try InboxFileName("IN0013165_1651650_00_x_00.txt").timestamp == nil)
        #expect(try InboxFileName("IN2025011_093005_00_x_00.txt").timestamp == nil, "7 digits: a zeroed year")
        #expect(try InboxFileName("IN20250230_120000_00_x_00.txt").timestamp == nil, "30 February")
        #expect(try InboxFileName("IN20240229_235959_00_x_00.txt").timestamp?.day == 29, "a leap day")
        #expect(try InboxFileName("IN20250114_240000_00_x_00.txt").timestamp == nil)
    }

    @Test(arguments: [
        ("", InboxFileNameError.notAnInboxFile),
        ("I", .notAnInboxFile),
        (".IN20250114_093005_00_+34600111222_00.txt", .notAnInboxFile),
        ("OUT+34600111222.txt", .notAnInboxFile),
        ("in20250114_093005_00_+34600111222_00.txt", .notAnInboxFile),
        ("IN20250114_093005_00_+34600111222_00", .unknownExtension("")),
        ("IN20250114_093005_00_+34600111222_00.smsbackup", .unknownExtension("smsbackup")),
        ("IN20250114_093005_00_+34600111222_00.TXT", .unknownExtension("TXT")),
        ("IN20250114_093005_00_+34600111222_00.txt~", .unknownExtension("txt~")),
        ("IN20250114_093005_00_+34600111222_00.txt.swp", .unknownExtension("swp")),
        ("IN20250_093005_00_+34600111222_00.txt", .malformedTimestamp),
        ("IN20250114-093005_00_+34600111222_00.txt", .malformedTimestamp),
        ("IN20250114_09300_00_+34600111222_00.txt", .malformedTimestamp),
        ("IN202501140_093005_00_+34600111222_00.txt", .malformedTimestamp),
        ("IN20250114_0930051234_00_+34600111222_00.txt", .malformedTimestamp),
        ("INabcdefgh_093005_00_+34600111222_00.txt", .malformedTimestamp),
        ("IN20250114_093005_0_+34600111222_00.txt", .malformedSerial),
        ("IN20250114_093005_000_+34600111222_00.txt", .malformedSerial),
        ("IN20250114_093005_0a_+34600111222_00.txt", .malformedSerial),
        ("IN20250114_093005_00_+34600111222_0.txt", .malformedPart),
        ("IN20250114_093005_00_+34600111222-00.txt", .malformedPart),
        ("IN20250114_093005_00_+34600111222_0x.txt", .malformedPart),
        ("IN20250114_093005_00_00.txt", .malformedPart),
        ("IN20250114_093005_00.txt", .malformedSerial),
        ("IN20250114_093005_00__00.txt", .emptySender),
        ("IN20250114_093005_00_\u{7}\u{202E}_00.txt", .emptySender),
    ])
    func aNameThatIsNotGammusIsRefused(name: String, error: InboxFileNameError) {
        #expect(throws: error) { try InboxFileName(name) }
    }

    @Test func aNameOver255BytesIsRefusedUnread() {
        let long = "IN20250114_093005_00_" + String(repeating: "A", count: 230) + "_00.txt"
        #expect(throws: InboxFileNameError.tooLong(byteCount: 258)) { try InboxFileName(long) }
        let fits = "IN20250114_093005_00_" + String(repeating: "A", count: 227) + "_00.txt"
        #expect(throws: Never.self) { try InboxFileName(fits) }
    }

    @Test func errorsSayWhatIsWrong() {
        #expect(InboxFileNameError.malformedPart.description.contains("_00.txt"))
        #expect(InboxFileNameError.unknownExtension("swp").description.contains(".swp"))
    }
}
