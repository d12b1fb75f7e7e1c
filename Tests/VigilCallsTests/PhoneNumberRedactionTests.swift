import Testing
import VigilCalls

/// Numbers masked in what goes to the journal and the log's error fields (issue 28, finding 8).
@Suite struct PhoneNumberRedactionTests {
    @Test func numbersAsNotifiersWriteThemAreMaskedToTheirLastTwoDigits() {
        #expect(PhoneNumberRedaction.redact("sending to +34600111222 failed") == "sending to +…22 failed")
        #expect(PhoneNumberRedaction.redact("to +34 600-111 222: no signal") == "to +…22: no signal")
        #expect(PhoneNumberRedaction.redact("gammu: 0034600111222 unreachable") == "gammu: +…22 unreachable")
        #expect(PhoneNumberRedaction.redact("+34600111222,+34600111333") == "+…22,+…33")
        #expect(PhoneNumberRedaction.redact("600111222") == "+…22")
    }

    @Test func whatIsNotANumberIsLeftAsItIs() {
        for text in ["exit status 3", "port 8443", "2026-11-29T03:25:12Z attempt 2 of 5", "HTTP 503 after 30 s", "", "+", "+ 34",
                     "v1.2.3", "ids 123456 and 42", "a-b-c"] {
            #expect(PhoneNumberRedaction.redact(text) == text)
        }
    }

    @Test func textAroundNumbersKeepsItsCharacters() {
        #expect(PhoneNumberRedaction.redact("¿Ana? → +34600111222 ✓") == "¿Ana? → +…22 ✓")
        #expect(PhoneNumberRedaction.redact("+34600111222 ") == "+…22 ")
    }
}
