import Testing
import VigilCalls

/// Phone numbers in E.164: what people type into the call tree, and what gammu gives as a
/// sender, normalised the same way so that they match.
@Suite("Phone numbers")
struct PhoneNumberTests {
    @Test(arguments: [
        ("+34 600-111 222", "+34600111222"),
        ("+34600111222", "+34600111222"),
        ("0034 600 111 222", "+34600111222"),
        ("  +34 600 111 222  ", "+34600111222"),
        ("+1-202-555-0143", "+12025550143"),
        ("+44 20 7946 0958", "+442079460958"),
        ("+ 34 600 111 222", "+34600111222"),
        ("+34--600  111--222", "+34600111222"),
        ("+12345678", "+12345678"),
        ("+123456789012345", "+123456789012345"),
        ("00491701234567", "+491701234567"),
    ])
    func anInternationalNumberWithSpacesAndDashesNormalises(text: String, e164: String) throws {
        #expect(try PhoneNumber(text).e164 == e164)
        #expect(try PhoneNumber(text) == PhoneNumber(e164))
    }

    @Test(arguments: [
        ("", PhoneNumberError.empty),
        ("   ", .empty),
        ("600111222", .missingInternationalPrefix),
        ("0600111222", .missingInternationalPrefix),
        ("34600111222", .missingInternationalPrefix),
        ("0 034 600111222", .missingInternationalPrefix),
        ("-+34600111222", .missingInternationalPrefix),
        ("Vodafone", .missingInternationalPrefix),
        ("+34 (600) 111 222", .invalidCharacter("(", position: 5)),
        ("+34.600.111.222", .invalidCharacter(".", position: 4)),
        ("+34 600 111 22x", .invalidCharacter("x", position: 15)),
        ("+34/600111222", .invalidCharacter("/", position: 4)),
        ("+34\u{A0}600111222", .invalidCharacter("\u{A0}", position: 4)),
        ("+34\t600111222", .invalidCharacter("\t", position: 4)),
        ("+३४६००१११२२२", .invalidCharacter("३", position: 2)),
        ("+34600111222 ext 5", .invalidCharacter("e", position: 14)),
        ("++34600111222", .invalidCharacter("+", position: 2)),
        ("00+34600111222", .invalidCharacter("+", position: 3)),
        ("+0034600111222", .countryCodeStartsWithZero),
        ("000034600111222", .countryCodeStartsWithZero),
        ("+34 600", .tooFewDigits(5)),
        ("+1234567", .tooFewDigits(7)),
        ("+", .tooFewDigits(0)),
        ("00", .tooFewDigits(0)),
        ("+1234567890123456", .tooManyDigits(16)),
        ("+34 600 111 222 333 444", .tooManyDigits(17)),
    ])
    func anythingElseIsRefusedWithTheReason(text: String, error: PhoneNumberError) {
        #expect(throws: error) { try PhoneNumber(text) }
    }

    @Test func errorMessagesSayWhatToType() {
        #expect(PhoneNumberError.missingInternationalPrefix.description.contains("start it with + or 00"))
        #expect(PhoneNumberError.invalidCharacter("(", position: 5).description.contains("\"(\" at character 5"))
        #expect(PhoneNumberError.invalidCharacter("\u{A0}", position: 4).description.contains("U+00A0"))
        #expect(PhoneNumberError.tooFewDigits(5).description.contains("8 to 15 digits"))
        #expect(PhoneNumberError.countryCodeStartsWithZero.description.contains("drop the national 0"))
    }

    @Test func gammuSendersNormaliseLikeTheCallTree() throws {
        let entered = try PhoneNumber("+34 600-111 222")
        #expect(InboxSender("+34600111222") == .number(entered))
        #expect(InboxSender("0034600111222") == .number(entered))
        #expect(InboxSender("600111222") == .other("600111222"), "a national-form sender matches nobody")
        #expect(InboxSender("Vodafone") == .other("Vodafone"))
        #expect(InboxSender("X111#") == .other("X111#"))
        #expect(InboxSender("+34600111222").description == "+34600111222")
    }
}
