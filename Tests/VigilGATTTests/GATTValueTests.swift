import Testing
@testable import VigilGATT

@Suite struct MessageFrameTests {
    @Test func aShortMessageTravelsWholeSoPlainAppsReadIt() {
        #expect(MessageFrames.split(Array("I'm OK".utf8), valueLength: 20) == [Array("I'm OK".utf8)])
    }

    @Test func aLongMessageIsSplitIntoMarkedPartsAndReassembled() {
        let message = Array(String(repeating: "bring the insulin from room 4 ", count: 5).utf8)   // 150 bytes
        let parts = MessageFrames.split(message, valueLength: 20)
        #expect(parts.count == 8)
        #expect(parts.allSatisfy { $0.count <= 20 })
        #expect(parts.dropLast().allSatisfy { $0.first == MessageFrames.more })
        #expect(parts.last?.first == MessageFrames.last)
        var assembler = MessageAssembler(limit: 4_096)
        let outcomes = parts.map { assembler.add($0) }
        #expect(outcomes.dropLast().allSatisfy { $0 == .partial })
        #expect(outcomes.last == .message(message))
        #expect(assembler.held == 0)
    }

    @Test func aMessageOverTheLimitIsRefusedAndItsRestIgnored() {
        var assembler = MessageAssembler(limit: 30)
        let parts = MessageFrames.split([UInt8](repeating: 0x41, count: 60), valueLength: 20)
        #expect(parts.map { assembler.add($0) } == [.partial, .tooLong, .partial, .partial])
        #expect(assembler.held == 0)
        #expect(assembler.add(Array("next".utf8)) == .message(Array("next".utf8)))
        #expect(assembler.add([]) == .empty)
        #expect(assembler.add([UInt8](repeating: 0x41, count: 31)) == .tooLong)
    }

    @Test func aWholeMessageEndsOneAbandonedInParts() {
        var assembler = MessageAssembler(limit: 100)
        #expect(assembler.add([MessageFrames.more, 1, 2]) == .partial)
        #expect(assembler.add([0x68, 0x69]) == .message([0x68, 0x69]))
        #expect(assembler.add([MessageFrames.last, 3]) == .message([3]))
    }
}

@Suite struct HeartRateMeasurementTests {
    @Test func theFlagsSayTheFormatAndWhetherTheSensorTouchesSkin() throws {
        #expect(try HeartRateMeasurement.parse([0x06, 72]) == HeartRateMeasurement(beatsPerMinute: 72, contact: .detected))
        #expect(try HeartRateMeasurement.parse([0x04, 72]) == HeartRateMeasurement(beatsPerMinute: 72, contact: .notDetected))
        #expect(try HeartRateMeasurement.parse([0x00, 72]) == HeartRateMeasurement(beatsPerMinute: 72, contact: .unsupported))
        #expect(try HeartRateMeasurement.parse([0x07, 0x2C, 0x01]).beatsPerMinute == 300)
        let full = try HeartRateMeasurement.parse([0x1E, 60, 0x10, 0x00, 0x00, 0x04, 0xF0, 0x03])
        #expect(full == HeartRateMeasurement(beatsPerMinute: 60, contact: .detected, energyExpended: 16, rrIntervals: [1024, 1008]))
        #expect(try HeartRateMeasurement.parse(full.encode()) == full)
    }

    @Test func truncatedMeasurementsAreRefused() {
        #expect(throws: HeartRateMeasurement.ParseError.truncated) { try HeartRateMeasurement.parse([]) }
        #expect(throws: HeartRateMeasurement.ParseError.truncated) { try HeartRateMeasurement.parse([0x06]) }
        #expect(throws: HeartRateMeasurement.ParseError.truncated) { try HeartRateMeasurement.parse([0x01, 72]) }
        #expect(throws: HeartRateMeasurement.ParseError.truncated) { try HeartRateMeasurement.parse([0x08, 72, 1]) }
        #expect(throws: HeartRateMeasurement.ParseError.oddRRIntervals) { try HeartRateMeasurement.parse([0x10, 72, 1]) }
    }
}

@Suite struct PhoneMessageTests {
    @Test func anEchoAlertMessageIsReadWithWhateverElseThePhoneAdds() throws {
        let json = #"{"id":"6F1C2B0A-1111-4A5B-9C3D-000000000001","category":"SOS","content":"trapped on the roof","status":"pendingSync"}"#
        let message = try PhoneMessage.parse(Array(json.utf8))
        #expect(message == PhoneMessage(id: "6F1C2B0A-1111-4A5B-9C3D-000000000001", category: "sos", content: "trapped on the roof"))
        #expect(try PhoneMessage.parse(message.encoded()) == message)
        #expect(try PhoneMessage.parse(Array(#"{"id":42,"category":"info","content":""}"#.utf8)).id == "42")
    }

    @Test func aMessageWithoutItsFieldsOrTooLongIsRefused() {
        #expect(throws: PhoneMessage.ParseError.notJSON) { try PhoneMessage.parse(Array("help".utf8)) }
        #expect(throws: PhoneMessage.ParseError.missing("id")) { try PhoneMessage.parse(Array(#"{"category":"sos","content":"x"}"#.utf8)) }
        #expect(throws: PhoneMessage.ParseError.missing("category")) { try PhoneMessage.parse(Array(#"{"id":"1","category":" ","content":"x"}"#.utf8)) }
        #expect(throws: PhoneMessage.ParseError.missing("content")) { try PhoneMessage.parse(Array(#"{"id":"1","category":"sos"}"#.utf8)) }
        let long = String(repeating: "a", count: 2_001)
        #expect(throws: PhoneMessage.ParseError.tooLong("content")) { try PhoneMessage.parse(Array(#"{"id":"1","category":"sos","content":"\#(long)"}"#.utf8)) }
    }
}
