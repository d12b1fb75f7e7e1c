import Testing
@testable import VigilAlarmCentre

@Suite struct FrameEncodingTests {
    @Test func plainFrameMatchesPythonVector() throws {
        let frame = try DC09Frame.encode(.raised(.sos(call: 5)), identity: Fixture.identity, sequence: Fixture.sequence,
                                         key: nil, utcSeconds: Fixture.utcSeconds, pad: [])
        // tools/dc09_vectors.py
        #expect(frame.bytes == Fixture.bytes("\n9751003E\"ADM-CID\"0042R12L1#1234[#1234|1120 01 005]_02:38:32,11-28-2026\r"))
    }

    @Test func encryptedFramesMatchPycryptodomeVectors() throws {
        // tools/dc09_vectors.py: AES-CBC by pycryptodome; pysiaalarm reads the AES-128 one as PA, zone 005.
        let vectors: [(DC09Key, String)] = [
            (Fixture.asciiKey128, "\n14F00079\"*ADM-CID\"0042R12L1#1234[AA9B899949511513B231B85A22D62DBB8DA7017008C633E45DF544ADA3164417B89AA5200F2D191190695B3FD7F028B0\r"),
            (Fixture.hexKey256, "\n2EFE0079\"*ADM-CID\"0042R12L1#1234[17E9344C793C2A09DD2F8B7DAADE8D95F76B8B45A4CDF81FE2813871B1B08DF66321E757CF8E94AEEE177C51B5A4A2AE\r"),
        ]
        for (key, expected) in vectors {
            let frame = try DC09Frame.encode(.raised(.sos(call: 5)), identity: Fixture.identity, sequence: Fixture.sequence,
                                             key: key, utcSeconds: Fixture.utcSeconds, pad: Fixture.countingPad)
            #expect(frame.bytes == Fixture.bytes(expected))
        }
    }

    @Test func linkTestIsTheNullMessageWithEmptyData() throws {
        let frame = try DC09Frame.encode(.linkTest, identity: DC09Identity(account: "123", receiver: nil, line: "0"),
                                         sequence: .first, key: nil, utcSeconds: 0, pad: [])
        let body = "\"NULL\"0001L0#123[]_00:00:00,01-01-1970"
        #expect(frame.bytes == Fixture.framed(body))
    }

    @Test("encrypted region is pad, bar, data, timestamp in whole blocks, for every data length", arguments: 0..<48)
    func encryptedRegionIsPaddedToWholeBlocks(extra: Int) throws {
        // Lengthen the region one byte at a time through three blocks via the account's length.
        let account = String(repeating: "A", count: 3 + extra % 14)
        let identity = try DC09Identity(account: account, receiver: nil, line: String(repeating: "1", count: 1 + extra % 6))
        let pad = (0..<16).map { UInt8(truncatingIfNeeded: $0 * 37 + extra) }
        let frame = try DC09Frame.encode(.raised(.radioLost), identity: identity, sequence: .first, key: Fixture.hexKey256,
                                         utcSeconds: Fixture.utcSeconds, pad: pad)
        let open = try #require(frame.bytes.firstIndex(of: ASCII.leftBracket))
        let ciphertext = try #require(Hex.decode(frame.bytes[(open + 1)..<(frame.bytes.count - 1)]))
        let plaintext = try #require(DC09Cipher.decrypt(ciphertext, key: Fixture.hexKey256))
        let bar = try #require(plaintext.firstIndex(of: ASCII.bar))
        let region = "#\(account)|1330 01 000]_02:38:32,11-28-2026"
        #expect(plaintext.count % 16 == 0)
        #expect((1...16).contains(bar))
        #expect(Array(plaintext[(bar + 1)...]) == Array(region.utf8))
        #expect(plaintext[..<bar].allSatisfy { DC09Frame.padAlphabet.contains($0) })
    }

    @Test func samePadBytesGiveSameFrameAndOtherPadBytesAnother() throws {
        func encode(_ pad: [UInt8]) throws -> [UInt8] {
            try DC09Frame.encode(.periodicTest, identity: Fixture.identity, sequence: .first, key: Fixture.asciiKey128,
                                 utcSeconds: Fixture.utcSeconds, pad: pad).bytes
        }
        #expect(try encode(Fixture.countingPad) == encode(Fixture.countingPad))
        #expect(try encode(Fixture.countingPad) != encode(Fixture.countingPad.reversed()))
    }

    @Test func badConfigurationIsRefusedWithTheFieldNamed() throws {
        #expect(throws: DC09EncodeError.badAccount("12")) { try DC09Identity(account: "12", receiver: nil, line: "1") }
        #expect(throws: DC09EncodeError.badAccount("12G4")) { try DC09Identity(account: "12G4", receiver: nil, line: "1") }
        #expect(throws: DC09EncodeError.badLine("1234567")) { try DC09Identity(account: "1234", receiver: nil, line: "1234567") }
        #expect(throws: DC09EncodeError.badReceiver("")) { try DC09Identity(account: "1234", receiver: "", line: "1") }
        #expect(throws: DC09EncodeError.timeOutOfRange(utcSeconds: -5)) {
            try DC09Frame.encode(.periodicTest, identity: Fixture.identity, sequence: .first, key: nil, utcSeconds: -5, pad: [])
        }
        #expect(throws: DC09EncodeError.padTooShort(needed: 9, given: 3)) {
            try DC09Frame.encode(.raised(.sos(call: 5)), identity: Fixture.identity, sequence: Fixture.sequence,
                                 key: Fixture.asciiKey128, utcSeconds: Fixture.utcSeconds, pad: [1, 2, 3])
        }
        #expect(try DC09Identity(account: "abcdef", receiver: "a1", line: "f").account == "ABCDEF")
    }

    @Test func keysAre128192Or256BitsAndNeverPrinted() throws {
        #expect(throws: DC09KeyError.wrongLength(15)) { try DC09Key(bytes: Array(repeating: 1, count: 15)) }
        #expect(throws: DC09KeyError.notHex) { try DC09Key(hex: "0G") }
        #expect(throws: DC09KeyError.notHex) { try DC09Key(hex: "000") }
        #expect(throws: DC09KeyError.wrongLength(8)) { try DC09Key(hex: "0001020304050607") }
        #expect(try DC09Key(hex: String(repeating: "ab", count: 24)).bitCount == 192)
        #expect("\(Fixture.hexKey256)" == "DC09Key(AES-256)")
    }

    @Test func encodedFramesParseBackAsTheirOwnAcknowledgementsExpectation() throws {
        let frame = try DC09Frame.encode(.raised(.sos(call: 5)), identity: Fixture.identity, sequence: Fixture.sequence,
                                         key: nil, utcSeconds: Fixture.utcSeconds, pad: [])
        #expect(try DC09Reply.parse(Fixture.bytes(Fixture.capturedAck), expecting: frame.expectation) == .acknowledged(receiverTime: nil))
    }
}
