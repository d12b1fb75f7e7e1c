import Testing
@testable import VigilGATT

/// A client and a server joined back to back, as two boxes are over a link: what one sends the
/// other receives, until nothing is left to send.
struct Link {
    var client = GATTClient()
    var server: GATTServer
    var completed: [Int: GATTClient.Result] = [:]
    var values: [(handle: UInt16, value: [UInt8], indicated: Bool)] = []
    var written: [(characteristic: Int, value: [UInt8])] = []
    var pdus = 0

    init(database: GATTDatabase = chatDatabase(), serverMTU: Int = ATTPDU.maximumMTU) {
        server = GATTServer(database: database, offeredMTU: serverMTU)
    }

    mutating func run(_ procedure: GATTClient.Procedure) throws -> GATTClient.Result {
        let attempt = client.start(procedure)
        let started = try #require(attempt)
        deliverToServer(started.outputs)
        return try #require(completed[started.id])
    }

    mutating func deliverToServer(_ outputs: [GATTClientOutput]) {
        for output in outputs {
            switch output {
            case .send(let bytes):
                pdus += 1
                deliverToClient(server.receive(bytes))
            case .completed(let id, let result): completed[id] = result
            case .value(let handle, let value, let indicated): values.append((handle, value, indicated))
            case .mtuChanged, .violation: break
            }
        }
    }

    mutating func deliverToClient(_ outputs: [GATTServerOutput]) {
        for output in outputs {
            switch output {
            case .send(let bytes):
                pdus += 1
                deliverToServer(client.receive(bytes))
            case .written(let characteristic, let value, let completion):
                written.append((characteristic, value))
                if let completion, let response = server.completeWrite(completion) { pdus += 1; deliverToServer(client.receive(response)) }
            case .subscriptionChanged, .indicationConfirmed, .mtuChanged, .violation: break
            }
        }
    }
}

@Suite struct GATTClientTests {
    let chat = GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!
    let tx = GATTUUID("7E57C001-2C8F-4F3C-9F91-8577E1891234")!
    let rx = GATTUUID("7E57C002-2C8F-4F3C-9F91-8577E1891234")!

    @Test func discoveryFindsEveryServiceCharacteristicAndConfiguration() throws {
        var link = Link()
        guard case .services(let services) = try link.run(.discover(service: nil)) else { Issue.record("no services"); return }
        #expect(services.map(\.uuid) == [.genericAccess, .genericAttribute, chat])
        #expect(services.map { $0.characteristics.map(\.uuid) } == [[.deviceName, .appearance], [.serviceChanged], [tx, rx]])
        let txFound = services[2].characteristics[0]
        #expect(txFound.valueHandle == 12 && txFound.configurationHandle == 13 && txFound.properties == .notify)
        #expect(services[2].characteristics[1].configurationHandle == nil)
        #expect(services[1].characteristics[0].configurationHandle == 9)
    }

    @Test func discoveryOfOneServiceUsesItsUUID() throws {
        var link = Link()
        guard case .services(let services) = try link.run(.discover(service: chat)) else { Issue.record("no services"); return }
        #expect(services.map(\.uuid) == [chat])
        #expect(services[0].characteristics.map(\.uuid) == [tx, rx])
        #expect(try link.run(.discover(service: .heartRateService)) == .services([]))
    }

    @Test func theMTUIsAgreedOnBothSides() throws {
        var link = Link(serverMTU: 185)
        #expect(try link.run(.exchangeMTU(517)) == .mtu(185))
        #expect(link.client.mtu == 185 && link.server.mtu == 185)
    }

    @Test func aLongValueIsReadWithBlobsAndALongWriteIsPreparedAndExecuted() throws {
        let name = String(repeating: "Shelter at the old school gym, ", count: 6)   // 186 bytes
        let database = GATTDatabase(deviceName: name, services: [
            GATTService(uuid: chat, characteristics: [GATTCharacteristic(uuid: rx, properties: [.write], maximumWriteLength: 400)]),
        ])
        var link = Link(database: database)
        #expect(try link.run(.read(handle: 3)) == .value(Array(name.utf8)))
        // 22 bytes a response at the default MTU: a read and 8 blobs, each answered.
        #expect(link.pdus == 2 * 9)
        link.pdus = 0
        let message = Array(String(repeating: "water and blankets at the door; ", count: 10).utf8)   // 320 bytes
        let rxHandle = database.characteristics[3].valueHandle
        #expect(try link.run(.write(handle: rxHandle, value: message)) == .done)
        #expect(link.written.map(\.value) == [message])
        // At the default MTU: 18 bytes a part, 18 parts, one execute, each answered.
        #expect(link.pdus == 2 * (18 + 1))
    }

    @Test func subscribingBringsNotificationsAndIndicationsAreConfirmed() throws {
        var link = Link()
        #expect(try link.run(.configure(handle: 13, bits: 1)) == .done)
        let notification = try link.server.notification(3, Array("hello from A".utf8))
        link.deliverToServer(link.client.receive(notification))
        #expect(link.values.map(\.value) == [Array("hello from A".utf8)])
        #expect(try link.run(.configure(handle: 9, bits: 2)) == .done)
        let indication = try link.server.indication(2, [1, 0, 0xFF, 0xFF])
        let outputs = link.client.receive(indication)
        #expect(outputs.first == .send(ATTPDU.confirmation.encode()))
        link.deliverToServer(outputs)
        #expect(link.server.indicationInFlight == nil)
    }

    @Test func anErrorEndsTheProcedureAndTheNextOneRuns() throws {
        var client = GATTClient()
        let firstStarted = client.start(.read(handle: 40))
        let first = try #require(firstStarted)
        let secondStarted = client.start(.read(handle: 3))
        let second = try #require(secondStarted)
        #expect(second.outputs.isEmpty)
        let outputs = client.receive(ATTPDU.errorResponse(request: 0x0A, handle: 40, error: .invalidHandle).encode())
        #expect(outputs == [.completed(id: first.id, .failed(.invalidHandle, handle: 40)), .send(ATTPDU.readRequest(handle: 3).encode())])
        #expect(client.isWaiting)
        #expect(client.cancelAll() == [.completed(id: second.id, .cancelled)])
        #expect(!client.isWaiting && client.pending == 0)
    }

    @Test func responsesNobodyAskedForAreViolations() throws {
        var client = GATTClient()
        #expect(client.receive(ATTPDU.readResponse(value: [1]).encode()) == [.violation("a response (opcode 0x0b) to no request sent")])
        _ = client.start(.read(handle: 3))
        #expect(client.receive(ATTPDU.writeResponse.encode()) == [.violation("a response (opcode 0x13) to no request sent")])
        #expect(client.receive([0x0B]) == [.completed(id: 1, .value([]))])
        #expect(client.receive(ATTPDU.readRequest(handle: 1).encode()) == [.violation("a server-role PDU (opcode 0x0a) given to the client")])
    }

    /// A peer answering every page with the same handles must not keep discovery going for ever.
    @Test func discoveryEndsWhenThePeerRepeatsItsPage() throws {
        var client = GATTClient()
        let attempt = client.start(.discover(service: nil))
        _ = try #require(attempt)
        var outputs = client.receive(ATTPDU.readByGroupTypeResponse([.init(start: 1, end: 10, value: [0x0D, 0x18])]).encode())
        // The next page starts after 10; the peer answers with the same service again.
        outputs = client.receive(ATTPDU.readByGroupTypeResponse([.init(start: 1, end: 10, value: [0x0D, 0x18])]).encode())
        // Characteristics of 1...10: a declaration at 2 (value 3, notify), then the same page again.
        let declaration = ATTPDU.readByTypeResponse([.init(handle: 2, value: [0x10, 3, 0, 0x37, 0x2A])]).encode()
        outputs = client.receive(declaration)
        #expect(outputs == [.send(ATTPDU.readByTypeRequest(start: 3, end: 10, type: .characteristic).encode())])
        outputs = client.receive(declaration)
        // Descriptors after the value: the peer answers with a handle before the range, twice.
        #expect(outputs == [.send(ATTPDU.findInformationRequest(start: 4, end: 10).encode())])
        let stale = ATTPDU.findInformationResponse([.init(handle: 3, type: .clientConfiguration)]).encode()
        outputs = client.receive(stale)
        guard case .completed(_, .services(let services))? = outputs.last else { Issue.record("\(outputs)"); return }
        #expect(services.count == 1 && services[0].characteristics.count == 1)
        #expect(services[0].characteristics[0].configurationHandle == nil)
    }

    /// A page of services all before the last one taken moves nothing forward: discovery goes on
    /// to characteristics instead of asking again.
    @Test func aServicePageOfNothingNewEndsServiceDiscovery() throws {
        var client = GATTClient()
        _ = client.start(.discover(service: nil))
        _ = client.receive(ATTPDU.readByGroupTypeResponse([.init(start: 1, end: 5, value: [0x00, 0x18])]).encode())
        // Asked from 6, the peer answers a group starting at 3 (ending later): ignored.
        let outputs = client.receive(ATTPDU.readByGroupTypeResponse([.init(start: 3, end: 7, value: [0x0D, 0x18])]).encode())
        #expect(outputs == [.send(ATTPDU.readByTypeRequest(start: 2, end: 5, type: .characteristic).encode())])
    }

    @Test func anEchoOfTheRightEndButTheWrongStartCancelsTheWrite() throws {
        var client = GATTClient()
        let value = [UInt8](0 ..< 40)
        _ = client.start(.write(handle: 15, value: value))
        // The first part was 0..<18; an echo of its last 10 bytes at offset 8 ends where it should.
        let cancel = client.receive(ATTPDU.prepareWriteResponse(handle: 15, offset: 8, value: Array(value[8 ..< 18])).encode())
        #expect(cancel == [.send(ATTPDU.executeWriteRequest(commit: false).encode())])
    }

    @Test func anErrorInALongWriteCancelsWhatThePeerQueued() throws {
        var client = GATTClient()
        _ = client.start(.write(handle: 15, value: [UInt8](repeating: 1, count: 40)))
        _ = client.receive(ATTPDU.prepareWriteResponse(handle: 15, offset: 0, value: [UInt8](repeating: 1, count: 18)).encode())
        let cancel = client.receive(ATTPDU.errorResponse(request: 0x16, handle: 15, error: .prepareQueueFull).encode())
        #expect(cancel == [.send(ATTPDU.executeWriteRequest(commit: false).encode())])
        #expect(client.receive(ATTPDU.executeWriteResponse.encode()) == [.completed(id: 1, .failed(.prepareQueueFull, handle: 15))])
        let tooLong = client.start(.write(handle: 15, value: [UInt8](repeating: 1, count: 513)))
        #expect(tooLong == nil)
    }

    @Test func aPeerEchoingAPreparedWriteWronglyGetsTheQueueCancelled() throws {
        var client = GATTClient()
        let attempt = client.start(.write(handle: 15, value: [UInt8](repeating: 7, count: 40)))
        let started = try #require(attempt)
        #expect(try ATTPDU.parse(started.outputs.compactMap { if case .send(let b) = $0 { b } else { nil } }[0])
                == .prepareWriteRequest(handle: 15, offset: 0, value: [UInt8](repeating: 7, count: 18)))
        let cancel = client.receive(ATTPDU.prepareWriteResponse(handle: 15, offset: 0, value: [UInt8](repeating: 8, count: 18)).encode())
        #expect(cancel == [.send(ATTPDU.executeWriteRequest(commit: false).encode())])
        let ended = client.receive(ATTPDU.executeWriteResponse.encode())
        guard case .completed(_, .protocolError)? = ended.first else { Issue.record("\(ended)"); return }
        // An echo with an offset past the value is refused the same way, never read out of range.
        _ = client.start(.write(handle: 15, value: [UInt8](repeating: 7, count: 40)))
        #expect(client.receive(ATTPDU.prepareWriteResponse(handle: 15, offset: 0xFFF0, value: [1]).encode())
                == [.send(ATTPDU.executeWriteRequest(commit: false).encode())])
    }

    @Test func theQueueIsBounded() {
        var client = GATTClient()
        for _ in 0 ... GATTClient.queueLimit { #expect(client.start(.read(handle: 1)) != nil) }
        #expect(client.start(.read(handle: 1)) == nil)
    }

    @Test func rolesFollowTheOpcode() {
        #expect(ATTRole.of(opcode: 0x0A) == .server)
        #expect(ATTRole.of(opcode: 0x52) == .server)
        #expect(ATTRole.of(opcode: 0x1E) == .server)
        #expect(ATTRole.of(opcode: 0x0B) == .client)
        #expect(ATTRole.of(opcode: 0x1B) == .client)
        #expect(ATTRole.of(opcode: 0x01) == .client)
    }
}
