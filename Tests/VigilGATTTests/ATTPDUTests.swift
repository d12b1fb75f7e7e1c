import Testing
@testable import VigilGATT

@Suite struct GATTUUIDTests {
    @Test func aFullUUIDPrintsAsWrittenAndTravelsLittleEndian() throws {
        let chat = try #require(GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234"))
        #expect(chat.description == "7E57C000-2C8F-4F3C-9F91-8577E1891234")
        #expect(chat.short == nil)
        #expect(chat.attBytes.first == 0x34 && chat.attBytes.last == 0x7E)
        #expect(GATTUUID(attBytes: chat.attBytes) == chat)
        #expect(GATTUUID("7e57c000-2c8f-4f3c-9f91-8577e1891234") == chat)
    }

    @Test func aUUIDInTheBaseRangeIsItsSixteenBitAlias() throws {
        let long = try #require(GATTUUID("00002902-0000-1000-8000-00805F9B34FB"))
        #expect(long == .clientConfiguration)
        #expect(long.attBytes == [0x02, 0x29])
        #expect(GATTUUID("0x180D") == .heartRateService)
        #expect(GATTUUID("180d")?.description == "180D")
    }

    @Test func textThatIsNotAUUIDIsRefused() {
        for text in ["", "18", "180D0", "7E57C000-2C8F-4F3C-9F91-8577E189123", "7E57C000-2C8F-4F3C-9F91-8577E18912ZZ", "7E57C0002C8F4F3C9F918577E1891234"] {
            #expect(GATTUUID(text) == nil, "\(text)")
        }
        #expect(GATTUUID(attBytes: [1, 2, 3]) == nil)
    }
}

@Suite struct ATTPDUTests {
    static let samples: [ATTPDU] = [
        .errorResponse(request: 0x0A, handle: 0x0001, error: .attributeNotFound),
        .exchangeMTURequest(clientMTU: 517),
        .exchangeMTUResponse(serverMTU: 185),
        .findInformationRequest(start: 1, end: 0xFFFF),
        .findInformationResponse([.init(handle: 1, type: .primaryService), .init(handle: 2, type: .characteristic)]),
        .findInformationResponse([.init(handle: 9, type: GATTUUID("7E57C001-2C8F-4F3C-9F91-8577E1891234")!)]),
        .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: [0x0D, 0x18]),
        .findByTypeValueResponse([.init(start: 10, end: 15)]),
        .readByTypeRequest(start: 1, end: 0xFFFF, type: .characteristic),
        .readByTypeResponse([.init(handle: 2, value: [0x02, 0x03, 0x00, 0x00, 0x2A]), .init(handle: 4, value: [0x02, 0x05, 0x00, 0x01, 0x2A])]),
        .readRequest(handle: 3),
        .readResponse(value: Array("Vigil".utf8)),
        .readBlobRequest(handle: 3, offset: 22),
        .readBlobResponse(value: []),
        .readMultipleRequest(handles: [3, 5]),
        .readMultipleResponse(values: [1, 2, 3]),
        .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService),
        .readByGroupTypeResponse([.init(start: 1, end: 5, value: [0x00, 0x18]), .init(start: 6, end: 9, value: [0x01, 0x18])]),
        .writeRequest(handle: 12, value: Array("hello".utf8)),
        .writeResponse,
        .writeCommand(handle: 12, value: []),
        .signedWriteCommand(handle: 12, value: [1], signature: [UInt8](repeating: 7, count: 12)),
        .prepareWriteRequest(handle: 12, offset: 18, value: [1, 2]),
        .prepareWriteResponse(handle: 12, offset: 18, value: [1, 2]),
        .executeWriteRequest(commit: true),
        .executeWriteRequest(commit: false),
        .executeWriteResponse,
        .notification(handle: 10, value: [0x16, 72]),
        .indication(handle: 7, value: [1, 0, 0xFF, 0xFF]),
        .confirmation,
    ]

    @Test(arguments: samples)
    func everyPDUParsesBackToItself(pdu: ATTPDU) throws {
        #expect(try ATTPDU.parse(pdu.encode()) == pdu)
    }

    @Test func theBytesAreTheSpecificationsLayout() {
        #expect(ATTPDU.exchangeMTURequest(clientMTU: 23).encode() == [0x02, 0x17, 0x00])
        #expect(ATTPDU.errorResponse(request: 0x10, handle: 0x0006, error: .attributeNotFound).encode() == [0x01, 0x10, 0x06, 0x00, 0x0A])
        #expect(ATTPDU.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService).encode() == [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28])
        #expect(ATTPDU.notification(handle: 0x0010, value: [0x00, 0x48]).encode() == [0x1B, 0x10, 0x00, 0x00, 0x48])
        #expect(ATTPDU.writeCommand(handle: 1, value: []).opcode == 0x52)
    }

    @Test func truncatedOrOverlongPDUsAreRefusedWithTheirOpcode() {
        #expect(throws: ATTParseError.empty) { try ATTPDU.parse([]) }
        #expect(throws: ATTParseError.badLength(opcode: 0x02)) { try ATTPDU.parse([0x02, 0x17]) }
        #expect(throws: ATTParseError.badLength(opcode: 0x02)) { try ATTPDU.parse([0x02, 0x17, 0x00, 0x00]) }
        #expect(throws: ATTParseError.badLength(opcode: 0x0A)) { try ATTPDU.parse([0x0A, 0x01]) }
        #expect(throws: ATTParseError.badLength(opcode: 0x08)) { try ATTPDU.parse([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03]) }
        #expect(throws: ATTParseError.badLength(opcode: 0x0E)) { try ATTPDU.parse([0x0E, 0x01, 0x00]) }
        #expect(throws: ATTParseError.badLength(opcode: 0xD2)) { try ATTPDU.parse([0xD2, 0x01, 0x00, 1, 2, 3]) }
        #expect(throws: ATTParseError.badLength(opcode: 0x09)) { try ATTPDU.parse([0x09, 0x04, 0x01, 0x00, 0x01]) }
        #expect(throws: ATTParseError.badField("find information format 3")) { try ATTPDU.parse([0x05, 0x03, 0x01, 0x00, 0x00, 0x28]) }
        #expect(throws: ATTParseError.badField("execute write flags 2")) { try ATTPDU.parse([0x18, 0x02]) }
        #expect(throws: ATTParseError.unknownOpcode(0x20)) { try ATTPDU.parse([0x20, 0x01, 0x00, 0x02, 0x00]) }
    }

    @Test func aResponseNamesTheRequestItAnswers() {
        #expect(ATTPDU.readResponse(value: []).answers == 0x0A)
        #expect(ATTPDU.errorResponse(request: 0x12, handle: 1, error: .writeNotPermitted).answers == 0x12)
        #expect(ATTPDU.notification(handle: 1, value: []).answers == nil)
        #expect(ATTPDU.readRequest(handle: 1).isRequest)
        #expect(!ATTPDU.writeCommand(handle: 1, value: []).isRequest)
    }
}
