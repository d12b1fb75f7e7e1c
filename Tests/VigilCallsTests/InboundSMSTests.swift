import Testing
import VigilCalls

/// A whole inbox file (name and content) read as the node reads it: who sent it, and whether
/// its text is a reply, on files the real daemon wrote.
@Suite("Inbound SMS")
struct InboundSMSTests {
    private func read(_ format: InboxFormat, _ scenario: String, locale: String = "C.UTF-8") throws -> [InboundSMS] {
        let files = CapturedInbox.files(format, scenario, locale: locale)
        try #require(!files.isEmpty)
        return try files.map { try InboundSMS.read(name: Array($0.name.utf8), contents: $0.bytes, format: format) }
    }

    @Test(arguments: InboxFormat.allCases)
    func aTakeFromANumberIsATakeFromThatNumber(format: InboxFormat) throws {
        let take = try #require(try read(format, "take").first)
        #expect(take.sender == .number(try PhoneNumber("+34 600 111 222")))
        #expect(take.answer == .reply(.take(code: nil)))
        #expect(try read(format, "code").map(\.answer) == [.reply(.take(code: "T4821"))])
        #expect(try read(format, "same-second").map(\.answer) == [.reply(.ok), .reply(.ok)])
    }

    @Test(arguments: InboxFormat.allCases)
    func anAlphanumericSenderIsNeverANumber(format: InboxFormat) throws {
        let sms = try #require(try read(format, "alphanumeric-underscore").first)
        #expect(sms.sender == .other("Vigil_Test"))
        #expect(sms.sender.phoneNumber == nil)
        #expect(sms.answer == .reply(.ok))
    }

    @Test func detailTakesTheSenderFromTheContentWhateverTheLocale() throws {
        let sms = try #require(try read(.detail, "accented-sender", locale: "C").first)
        #expect(sms.fileName.sender == "J?s? ?")
        #expect(sms.sender == .other("Jösé Ñ"))
    }

    @Test(arguments: [InboxFormat.standard, .unicode])
    func onlyTheFirstPartFileOfALinkedMessageIsReadAsAReply(format: InboxFormat) throws {
        let parts = try read(format, "long")
        #expect(parts.map(\.answer) == [
            .reply(.unrecognised("Ana está bien, gracias. Ana está bien, gracias. Ana está bien, grac")),
            .continuation(part: 2), .continuation(part: 3),
        ])
    }

    @Test func aLinkedMessageMissingPartsIsNotAReplyInDetail() throws {
        #expect(try read(.detail, "incomplete").map(\.answer) == [.incompleteMessage(received: [1], total: 2)])
        // standard and unicode cannot tell: the remnant is read like a message.
        #expect(try read(.standard, "incomplete").map(\.answer.isReply) == [true])
    }

    @Test func aDeliveryReportIsNotAReplyInDetail() throws {
        #expect(try read(.detail, "status-report").map(\.answer) == [.deliveryReport])
        #expect(try read(.standard, "status-report").map(\.answer) == [.reply(.unrecognised("Delivered"))])
    }

    @Test func aBadNameOrContentSaysWhich() {
        #expect(throws: InboundSMSError.name(.notAnInboxFile)) {
            try InboundSMS.read(name: Array("x.txt".utf8), contents: Array("TAKE".utf8), format: .standard)
        }
        #expect(throws: InboundSMSError.content(.binaryMessage)) {
            try InboundSMS.read(name: Array("IN20250114_093005_00_+34600111222_00.bin".utf8), contents: Array("TAKE".utf8), format: .standard)
        }
        #expect(InboundSMSError.content(.noMessage).description == InboxMessageError.noMessage.description)
    }
}

extension InboundSMS.Answer {
    var isReply: Bool {
        if case .reply = self { return true }
        return false
    }
}
