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
        // National forms, as a notifier that skips a recipient prints it.
        #expect(PhoneNumberRedaction.redact("skipping \"600 111 222\"") == "skipping \"+…22\"")
        #expect(PhoneNumberRedaction.redact("06 12 34 56 78") == "+…78")
        #expect(PhoneNumberRedaction.redact("(555) 123-4567 busy") == "+…67 busy")
        #expect(PhoneNumberRedaction.redact("+1 (555) 123-4567") == "+…67")
        #expect(PhoneNumberRedaction.redact("600.111.222") == "+…22")
        // An outbox entry's id names its recipient.
        #expect(PhoneNumberRedaction.redact("call/b3b325f3:1/1.0/+34600111222") == "call/b3b325f3:1/1.0/+…22")
    }

    @Test func whatIsNotANumberIsLeftAsItIs() {
        for text in ["exit status 3", "port 8443", "2026-11-29T03:25:12Z attempt 2 of 5", "HTTP 503 after 30 s", "", "+", "+ 34",
                     "v1.2.3", "ids 123456 and 42", "a-b-c", "node deadbeef12345678", "2026-11-29", "x1234567", "1234567th",
                     "(5) 1", "()"] {
            #expect(PhoneNumberRedaction.redact(text) == text)
        }
    }

    @Test func textAroundNumbersKeepsItsCharacters() {
        #expect(PhoneNumberRedaction.redact("¿Ana? → +34600111222 ✓") == "¿Ana? → +…22 ✓")
        #expect(PhoneNumberRedaction.redact("+34600111222 ") == "+…22 ")
    }
}
