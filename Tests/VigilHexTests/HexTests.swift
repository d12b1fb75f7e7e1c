import Testing
import VigilHex

/// The one hex codec: keys and identifiers are stored and typed in hex, so whatever a person or
/// a file hands it either decodes exactly or is refused.
@Suite struct HexTests {
    @Test func bytesBecomeLowerCaseDigitsTwoPerByte() {
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.encode([0x00, 0x0F, 0xF0, 0xFF]) == "000ff0ff")
        let bytes: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF]
        #expect(Hex.encode(bytes[1...]) == "adbeef", "any sequence of bytes")
    }

    @Test func everyByteSurvivesTheRoundTrip() {
        let all = (0...255).map { UInt8($0) }
        let text = Hex.encode(all)
        #expect(text.count == 512)
        #expect(text.hasPrefix("000102") && text.hasSuffix("fdfeff"))
        #expect(Hex.decode(text) == all)
    }

    @Test func eitherCaseDecodesToTheSameBytes() {
        #expect(Hex.decode("DEADbeef") == [0xDE, 0xAD, 0xBE, 0xEF])
        #expect(Hex.decode("deadbeef") == Hex.decode("DEADBEEF"))
        #expect(Hex.decode("") == [])
        let line = "key=0a0b"
        #expect(Hex.decode(line.dropFirst(4)) == [0x0A, 0x0B], "a substring decodes like a string")
    }

    @Test func anOddLengthOrAStrayCharacterIsRefusedNotGuessed() {
        for text in ["0", "abc", "0g", "g0", "zz", " 00", "00 ", "0x00", "+1", "-1", "12\n", "éé", "٠١"] {
            #expect(Hex.decode(text) == nil, "\(text.debugDescription)")
        }
    }
}
