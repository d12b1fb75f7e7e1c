import Testing
@testable import VigilGATT

/// A database like the box's: GAP, GATT, then a chat service with TX (notify) and RX (write).
func chatDatabase() -> GATTDatabase {
    GATTDatabase(deviceName: "Vigil test box", services: [
        GATTService(uuid: GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!, characteristics: [
            GATTCharacteristic(uuid: GATTUUID("7E57C001-2C8F-4F3C-9F91-8577E1891234")!, properties: [.notify], maximumWriteLength: 0),
            GATTCharacteristic(uuid: GATTUUID("7E57C002-2C8F-4F3C-9F91-8577E1891234")!, properties: [.write, .writeWithoutResponse],
                               maximumWriteLength: 200),
        ]),
    ])
}

/// Whether `outputs` holds violations and nothing else (an empty list is not).
func onlyViolations(_ outputs: [GATTServerOutput]) -> Bool {
    !outputs.isEmpty && outputs.allSatisfy { if case .violation = $0 { true } else { false } }
}

extension GATTServer {
    /// The one PDU the server sends for `pdu`, parsed.
    mutating func answer(_ pdu: ATTPDU) throws -> ATTPDU {
        let outputs = receive(pdu.encode())
        let sent = outputs.compactMap { if case .send(let bytes) = $0 { bytes } else { nil } }
        try #require(sent.count == 1, "one PDU answers \(pdu), got \(outputs)")
        return try ATTPDU.parse(sent[0])
    }
}

@Suite struct GATTServerTests {
    let database = chatDatabase()
    var tx: Int { database.characteristicIndex(of: GATTUUID("7E57C001-2C8F-4F3C-9F91-8577E1891234")!, in: GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!)! }
    var rx: Int { tx + 1 }

    @Test func theTableHasGAPThenGATTThenTheServicesWithDenseHandles() {
        // GAP: 1 service, 2..3 name, 4..5 appearance; GATT: 6 service, 7..8 service changed, 9 CCCD;
        // chat: 10 service, 11..12 TX, 13 CCCD, 14..15 RX.
        #expect(database.attributes.map(\.handle) == Array(1 ... 15))
        #expect(database.characteristics[tx].valueHandle == 12)
        #expect(database.characteristics[tx].configurationHandle == 13)
        #expect(database.characteristics[rx].valueHandle == 15)
        #expect(database.characteristics[rx].configurationHandle == nil)
        #expect(database.attribute(10)?.role == .serviceDeclaration(end: 15))
        #expect(database.attribute(0) == nil && database.attribute(16) == nil)
    }

    @Test func servicesAreDiscoveredByGroupTypeOneUUIDSizeAtATime() throws {
        var server = GATTServer(database: database)
        #expect(try server.answer(.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService))
                == .readByGroupTypeResponse([.init(start: 1, end: 5, value: [0x00, 0x18]), .init(start: 6, end: 9, value: [0x01, 0x18])]))
        let chat = try server.answer(.readByGroupTypeRequest(start: 10, end: 0xFFFF, type: .primaryService))
        #expect(chat == .readByGroupTypeResponse([.init(start: 10, end: 15, value: GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!.attBytes)]))
        #expect(try server.answer(.readByGroupTypeRequest(start: 16, end: 0xFFFF, type: .primaryService))
                == .errorResponse(request: 0x10, handle: 16, error: .attributeNotFound))
        #expect(try server.answer(.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .characteristic))
                == .errorResponse(request: 0x10, handle: 1, error: .unsupportedGroupType))
    }

    @Test func aServiceIsFoundByItsUUID() throws {
        var server = GATTServer(database: database)
        #expect(try server.answer(.findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800,
                                                          value: GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!.attBytes))
                == .findByTypeValueResponse([.init(start: 10, end: 15)]))
        #expect(try server.answer(.findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: [0x0D, 0x18]))
                == .errorResponse(request: 0x06, handle: 1, error: .attributeNotFound))
    }

    @Test func characteristicsAndDescriptorsAreDiscovered() throws {
        var server = GATTServer(database: database)
        guard case .readByTypeResponse(let declarations) = try server.answer(.readByTypeRequest(start: 10, end: 15, type: .characteristic)) else {
            Issue.record("no declarations"); return
        }
        // 128-bit declarations are 19 bytes: two fit the default MTU of 23 only one at a time.
        #expect(declarations.map(\.handle) == [11])
        #expect(declarations[0].value == [0x10, 12, 0] + GATTUUID("7E57C001-2C8F-4F3C-9F91-8577E1891234")!.attBytes)
        #expect(try server.answer(.findInformationRequest(start: 13, end: 13)) == .findInformationResponse([.init(handle: 13, type: .clientConfiguration)]))
        // After a larger MTU, both declarations come in one response.
        _ = server.receive(ATTPDU.exchangeMTURequest(clientMTU: 247).encode())
        guard case .readByTypeResponse(let both) = try server.answer(.readByTypeRequest(start: 10, end: 15, type: .characteristic)) else {
            Issue.record("no declarations"); return
        }
        #expect(both.map(\.handle) == [11, 14])
    }

    @Test func theMTUIsTheSmallerOfBothOffersAndIsExchangedOnce() {
        var server = GATTServer(database: database, offeredMTU: 185)
        #expect(server.receive(ATTPDU.exchangeMTURequest(clientMTU: 517).encode())
                == [.send(ATTPDU.exchangeMTUResponse(serverMTU: 185).encode()), .mtuChanged(185)])
        #expect(server.mtu == 185)
        #expect(server.receive(ATTPDU.exchangeMTURequest(clientMTU: 30).encode()) == [.send(ATTPDU.exchangeMTUResponse(serverMTU: 185).encode())])
        #expect(server.mtu == 185)
        var small = GATTServer(database: database)
        _ = small.receive(ATTPDU.exchangeMTURequest(clientMTU: 5).encode())
        #expect(small.mtu == 23)
    }

    @Test func readsFollowPermissionsAndOffsets() throws {
        var server = GATTServer(database: database)
        #expect(try server.answer(.readRequest(handle: 3)) == .readResponse(value: Array("Vigil test box".utf8)))
        #expect(try server.answer(.readBlobRequest(handle: 3, offset: 6)) == .readBlobResponse(value: Array("test box".utf8)))
        #expect(try server.answer(.readBlobRequest(handle: 3, offset: 14)) == .readBlobResponse(value: []))
        #expect(try server.answer(.readBlobRequest(handle: 3, offset: 15)) == .errorResponse(request: 0x0C, handle: 3, error: .invalidOffset))
        #expect(try server.answer(.readRequest(handle: 15)) == .errorResponse(request: 0x0A, handle: 15, error: .readNotPermitted))
        #expect(try server.answer(.readRequest(handle: 0)) == .errorResponse(request: 0x0A, handle: 0, error: .invalidHandle))
        #expect(try server.answer(.readRequest(handle: 99)) == .errorResponse(request: 0x0A, handle: 99, error: .invalidHandle))
        #expect(try server.answer(.readMultipleRequest(handles: [3, 5])) == .readMultipleResponse(values: Array("Vigil test box".utf8) + [0, 0]))
        #expect(try server.answer(.readMultipleRequest(handles: [3, 15])) == .errorResponse(request: 0x0E, handle: 15, error: .readNotPermitted))
        #expect(try server.answer(.findInformationRequest(start: 0, end: 4)) == .errorResponse(request: 0x04, handle: 0, error: .invalidHandle))
        #expect(try server.answer(.readByTypeRequest(start: 9, end: 3, type: .characteristic)) == .errorResponse(request: 0x08, handle: 9, error: .invalidHandle))
    }

    @Test func aWriteRequestIsAnsweredOnlyWhenTheApplicationTookIt() throws {
        var server = GATTServer(database: database)
        let outputs = server.receive(ATTPDU.writeRequest(handle: 15, value: Array("hi".utf8)).encode())
        guard case .written(rx, Array("hi".utf8), let completion?)? = outputs.first, outputs.count == 1 else {
            Issue.record("\(outputs)"); return
        }
        // The client must wait: a second request is a violation and is not answered.
        #expect(onlyViolations(server.receive(ATTPDU.readRequest(handle: 3).encode())))
        #expect(onlyViolations(server.receive([0x20, 0x03, 0x00, 0x05, 0x00])))
        #expect(server.completeWrite(completion) == ATTPDU.writeResponse.encode())
        #expect(server.completeWrite(completion) == nil)
        guard case .written(_, _, let next?)? = server.receive(ATTPDU.writeRequest(handle: 15, value: [1]).encode()).first else {
            Issue.record("no write"); return
        }
        // The first write's completion, late, does not answer the second.
        #expect(server.completeWrite(completion) == nil)
        #expect(server.completeWrite(next, error: .rateExceeded) == ATTPDU.errorResponse(request: 0x12, handle: 15, error: .rateExceeded).encode())
    }

    @Test func writesBreakingTheRulesAreRefused() throws {
        var server = GATTServer(database: database)
        #expect(try server.answer(.writeRequest(handle: 12, value: [1])) == .errorResponse(request: 0x12, handle: 12, error: .writeNotPermitted))
        #expect(try server.answer(.writeRequest(handle: 11, value: [1])) == .errorResponse(request: 0x12, handle: 11, error: .writeNotPermitted))
        _ = server.receive(ATTPDU.exchangeMTURequest(clientMTU: 247).encode())
        #expect(try server.answer(.writeRequest(handle: 15, value: [UInt8](repeating: 1, count: 201)))
                == .errorResponse(request: 0x12, handle: 15, error: .invalidAttributeValueLength))
        #expect(try server.answer(.writeRequest(handle: 0x40, value: [1])) == .errorResponse(request: 0x12, handle: 0x40, error: .invalidHandle))
        // Commands are never answered, whatever is wrong with them.
        #expect(onlyViolations(server.receive(ATTPDU.writeCommand(handle: 12, value: [1]).encode())))
        #expect(server.receive(ATTPDU.writeCommand(handle: 15, value: [7]).encode()) == [.written(characteristic: rx, value: [7], completion: nil)])
        #expect(!server.awaitsCompletion)
    }

    @Test func notificationsGoOnlyToASubscribedPeerAndFitTheMTU() throws {
        var server = GATTServer(database: database)
        #expect(throws: GATTServer.SendRefusal.notSubscribed) { try server.notification(tx, [1]) }
        #expect(server.receive(ATTPDU.writeRequest(handle: 13, value: [1, 0]).encode())
                == [.send(ATTPDU.writeResponse.encode()), .subscriptionChanged(characteristic: tx, notify: true, indicate: false)])
        #expect(try server.answer(.readRequest(handle: 13)) == .readResponse(value: [1, 0]))
        #expect(try server.notification(tx, Array("ok".utf8)) == ATTPDU.notification(handle: 12, value: Array("ok".utf8)).encode())
        #expect(throws: GATTServer.SendRefusal.tooLong(maximum: 20)) { try server.notification(tx, [UInt8](repeating: 0, count: 21)) }
        // TX cannot indicate: a CCCD asking for it is refused (common profile error 0xFD).
        #expect(try server.answer(.writeRequest(handle: 13, value: [2, 0])) == .errorResponse(request: 0x12, handle: 13, error: .cccdImproperlyConfigured))
        #expect(server.receive(ATTPDU.writeRequest(handle: 13, value: [0, 0]).encode())
                == [.send(ATTPDU.writeResponse.encode()), .subscriptionChanged(characteristic: tx, notify: false, indicate: false)])
        #expect(throws: GATTServer.SendRefusal.notSubscribed) { try server.notification(tx, [1]) }
    }

    @Test func oneIndicationIsInFlightUntilConfirmed() throws {
        var server = GATTServer(database: database)
        let serviceChanged = try #require(database.characteristicIndex(of: .serviceChanged, in: .genericAttribute))
        _ = server.receive(ATTPDU.writeRequest(handle: 9, value: [2, 0]).encode())
        let first = try server.indication(serviceChanged, [1, 0, 0xFF, 0xFF])
        #expect(try ATTPDU.parse(first) == .indication(handle: 8, value: [1, 0, 0xFF, 0xFF]))
        #expect(throws: GATTServer.SendRefusal.indicationInFlight) { try server.indication(serviceChanged, [1, 0, 0xFF, 0xFF]) }
        #expect(server.receive(ATTPDU.confirmation.encode()) == [.indicationConfirmed(characteristic: serviceChanged)])
        #expect(onlyViolations(server.receive(ATTPDU.confirmation.encode())))
        _ = try server.indication(serviceChanged, [1, 0, 0xFF, 0xFF])
    }

    @Test func aLongWriteIsReassembledAndAnsweredOnExecution() throws {
        var server = GATTServer(database: database)
        let text = Array(String(repeating: "help is coming ", count: 8).utf8)   // 120 bytes
        var offset = 0
        while offset < text.count {
            let part = Array(text[offset ..< min(offset + 18, text.count)])
            #expect(try server.answer(.prepareWriteRequest(handle: 15, offset: UInt16(offset), value: part))
                    == .prepareWriteResponse(handle: 15, offset: UInt16(offset), value: part))
            offset += part.count
        }
        let executed = server.receive(ATTPDU.executeWriteRequest(commit: true).encode())
        guard case .written(rx, text, let completion?)? = executed.first, executed.count == 1 else { Issue.record("\(executed)"); return }
        #expect(server.completeWrite(completion) == ATTPDU.executeWriteResponse.encode())
        // Cancelled: nothing written.
        _ = server.receive(ATTPDU.prepareWriteRequest(handle: 15, offset: 0, value: [1]).encode())
        #expect(try server.answer(.executeWriteRequest(commit: false)) == .executeWriteResponse)
        #expect(try server.answer(.executeWriteRequest(commit: true)) == .executeWriteResponse)
    }

    @Test func aLongWriteWithAGapOrTooLongOrTooManyPartsIsRefused() throws {
        var server = GATTServer(database: database)
        _ = server.receive(ATTPDU.prepareWriteRequest(handle: 15, offset: 0, value: [1, 2]).encode())
        _ = server.receive(ATTPDU.prepareWriteRequest(handle: 15, offset: 5, value: [3]).encode())
        #expect(try server.answer(.executeWriteRequest(commit: true)) == .errorResponse(request: 0x18, handle: 15, error: .invalidOffset))
        for offset in stride(from: 0, to: 220, by: 18) {
            _ = server.receive(ATTPDU.prepareWriteRequest(handle: 15, offset: UInt16(offset), value: [UInt8](repeating: 1, count: 18)).encode())
        }
        #expect(try server.answer(.executeWriteRequest(commit: true)) == .errorResponse(request: 0x18, handle: 15, error: .invalidAttributeValueLength))
        for _ in 0 ..< GATTServer.preparedWriteLimit {
            _ = server.receive(ATTPDU.prepareWriteRequest(handle: 15, offset: 0, value: [1]).encode())
        }
        #expect(try server.answer(.prepareWriteRequest(handle: 15, offset: 0, value: [1])) == .errorResponse(request: 0x16, handle: 15, error: .prepareQueueFull))
        #expect(try server.answer(.prepareWriteRequest(handle: 12, offset: 0, value: [1])) == .errorResponse(request: 0x16, handle: 12, error: .writeNotPermitted))
    }

    @Test func unknownAndMalformedRequestsGetErrorsAndCommandsNothing() throws {
        var server = GATTServer(database: database)
        #expect(try server.answer(.readRequest(handle: 3)) == .readResponse(value: Array("Vigil test box".utf8)))
        let unknown = server.receive([0x20, 0x03, 0x00, 0x05, 0x00])
        #expect(unknown == [.send(ATTPDU.errorResponse(request: 0x20, handle: 0, error: .requestNotSupported).encode())])
        let malformed = server.receive([0x0A, 0x03])
        #expect(malformed.first == .send(ATTPDU.errorResponse(request: 0x0A, handle: 0, error: .invalidPDU).encode()))
        #expect(onlyViolations(server.receive([0x7F, 1, 2])))
        #expect(onlyViolations(server.receive(ATTPDU.signedWriteCommand(handle: 15, value: [1], signature: [UInt8](repeating: 0, count: 12)).encode())))
        #expect(onlyViolations(server.receive([])))
    }
}

@Suite struct GATTServerLimitTests {
    /// Found by the att-pdu fuzz target: a Prepare Write longer than the MTU was echoed, and the
    /// echo broke the MTU.
    @Test func aRequestLongerThanTheMTUIsRefusedAndNeverEchoed() throws {
        var server = GATTServer(database: chatDatabase())
        let long = ATTPDU.prepareWriteRequest(handle: 15, offset: 0, value: [UInt8](repeating: 0x61, count: 30)).encode()
        let outputs = server.receive(long)
        #expect(outputs.first == .send(ATTPDU.errorResponse(request: 0x16, handle: 0, error: .invalidPDU).encode()))
        #expect(onlyViolations(server.receive(ATTPDU.writeCommand(handle: 15, value: [UInt8](repeating: 1, count: 21)).encode())))
    }

    /// An executed long write of two values refused on the first: the second value's late
    /// completion must not answer the next write before its event is durable.
    @Test func aRefusedLongWritesOtherValuesNeverAnswerTheNextWrite() throws {
        let chat = GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!
        let database = GATTDatabase(deviceName: "box", services: [GATTService(uuid: chat, characteristics: [
            GATTCharacteristic(uuid: GATTUUID(0xAAA1), properties: [.write]),
            GATTCharacteristic(uuid: GATTUUID(0xAAA2), properties: [.write]),
        ])])
        var server = GATTServer(database: database)
        let (first, second) = (database.characteristics[3].valueHandle, database.characteristics[4].valueHandle)
        _ = server.receive(ATTPDU.prepareWriteRequest(handle: first, offset: 0, value: [1]).encode())
        _ = server.receive(ATTPDU.prepareWriteRequest(handle: second, offset: 0, value: [2]).encode())
        let executed = server.receive(ATTPDU.executeWriteRequest(commit: true).encode())
        let completions = executed.compactMap { if case .written(_, _, let c?) = $0 { c } else { nil } }
        try #require(completions.count == 2)
        #expect(server.completeWrite(completions[1], error: .valueNotAllowed)
                == ATTPDU.errorResponse(request: 0x18, handle: second, error: .valueNotAllowed).encode())
        guard case .written(_, _, let next?)? = server.receive(ATTPDU.writeRequest(handle: first, value: [3]).encode()).first else {
            Issue.record("no write"); return
        }
        #expect(server.completeWrite(completions[0]) == nil)
        #expect(server.awaitsCompletion)
        #expect(server.completeWrite(next) == ATTPDU.writeResponse.encode())
    }

    /// The peer turned indications off after one was sent: it still confirms that one.
    @Test func anIndicationStaysInFlightThroughAnUnsubscribe() throws {
        let database = chatDatabase()
        var server = GATTServer(database: database)
        let serviceChanged = try #require(database.characteristicIndex(of: .serviceChanged, in: .genericAttribute))
        _ = server.receive(ATTPDU.writeRequest(handle: 9, value: [2, 0]).encode())
        _ = try server.indication(serviceChanged, [1, 0, 0xFF, 0xFF])
        _ = server.receive(ATTPDU.writeRequest(handle: 9, value: [0, 0]).encode())
        #expect(server.indicationInFlight == serviceChanged)
        #expect(server.receive(ATTPDU.confirmation.encode()) == [.indicationConfirmed(characteristic: serviceChanged)])
    }
}

@Suite struct ATTBearerTests {
    /// One exchange serves both roles: after the phone exchanged 247 with the box's server, the
    /// box's client reads long values in 246-byte pieces too, and the server takes requests that
    /// size.
    @Test func oneMTUServesBothRolesOfTheLink() throws {
        var bearer = ATTBearer(server: GATTServer(database: chatDatabase()))
        let outputs = bearer.receive(ATTPDU.exchangeMTURequest(clientMTU: 247).encode())
        #expect(outputs.contains(.server(.mtuChanged(247))))
        #expect(bearer.mtu == 247 && bearer.server?.mtu == 247)
        // A write of 200 bytes fits the MTU now (RX takes up to 200).
        let write = bearer.receive(ATTPDU.writeRequest(handle: 15, value: [UInt8](repeating: 1, count: 200)).encode())
        guard case .server(.written)? = write.first else { Issue.record("\(write)"); return }
        // The client's exchange updates the server in turn.
        var other = ATTBearer(server: GATTServer(database: chatDatabase()))
        let started = other.start(.exchangeMTU(100))
        #expect(started != nil)
        _ = other.receive(ATTPDU.exchangeMTUResponse(serverMTU: 80).encode())
        #expect(other.mtu == 80 && other.server?.mtu == 80)
    }

    /// The peer exchanged a larger MTU while the box's long read was under way: a response full
    /// at the old MTU still means "more".
    @Test func anMTUChangeDuringALongReadDoesNotEndItEarly() throws {
        var bearer = ATTBearer(server: GATTServer(database: chatDatabase()))
        let started = bearer.start(.read(handle: 3))
        #expect(started?.outputs == [.send(ATTPDU.readRequest(handle: 3).encode())])
        _ = bearer.receive(ATTPDU.exchangeMTURequest(clientMTU: 247).encode())
        let more = bearer.receive(ATTPDU.readResponse(value: [UInt8](repeating: 0x41, count: 22)).encode())
        #expect(more == [.client(.send(ATTPDU.readBlobRequest(handle: 3, offset: 22).encode()))])
        let done = bearer.receive(ATTPDU.readBlobResponse(value: [0x42]).encode())
        #expect(done == [.client(.completed(id: 1, .value([UInt8](repeating: 0x41, count: 22) + [0x42])))])
    }

    @Test func aLinkWithoutAServerAnswersRequestsWithNotSupported() {
        var bearer = ATTBearer(server: nil)
        #expect(bearer.receive(ATTPDU.readRequest(handle: 1).encode())
                == [.server(.send(ATTPDU.errorResponse(request: 0x0A, handle: 0, error: .requestNotSupported).encode()))])
        guard case .server(.violation)? = bearer.receive(ATTPDU.writeCommand(handle: 1, value: []).encode()).first else {
            Issue.record("a command got an answer"); return
        }
        guard case .server(.violation)? = bearer.receive([]).first else { Issue.record("an empty PDU got an answer"); return }
    }
}
