/// What the server side of one ATT bearer asks of its owner after a PDU from the peer.
public enum GATTServerOutput: Equatable, Sendable {
    /// Send this PDU to the peer.
    case send([UInt8])
    /// The peer wrote `value` to characteristic number `characteristic` (a Write Request, an
    /// executed long write, or a Write Command). With a `completion`, the peer waits for a
    /// response: call `completeWrite(completion)` once the application has taken the value (or
    /// refused it). Commands have none.
    case written(characteristic: Int, value: [UInt8], completion: WriteCompletion?)
    /// The peer changed its Client Characteristic Configuration for a characteristic.
    case subscriptionChanged(characteristic: Int, notify: Bool, indicate: Bool)
    /// The peer confirmed the indication sent last.
    case indicationConfirmed(characteristic: Int)
    /// The link's ATT_MTU changed (after an exchange).
    case mtuChanged(Int)
    /// The peer broke the protocol (a request before the last was answered, a confirmation
    /// nobody asked for, an unparsable command...). The owner counts these and disconnects a peer
    /// that keeps doing it.
    case violation(String)
}

/// Names one value of one write the peer waits on, on one link (write ids count from 1 in every
/// server: an owner with several links keeps each completion with its link, as `GATTLinks`
/// does). `completeWrite` answers the write it names and
/// ignores a completion of a write already answered (an executed long write refused on its first
/// value, whose other values complete later), so a late completion never answers a newer write.
public struct WriteCompletion: Hashable, Sendable {
    public let write: UInt32
    /// The value's handle, named in an error response.
    public let handle: UInt16
}

/// The server role of one ATT bearer (one LE connection's fixed channel, CID 4): answers the
/// peer's requests from a `GATTDatabase`, keeps the peer's subscriptions, its prepared writes
/// and the one indication in flight. Pure and bounded: no clock, no I/O; every PDU in gives a
/// finite list of outputs, and what the peer can make it keep is capped (`preparedWriteLimit`).
///
/// The ATT rules it keeps (Vol 3 Part F): one request at a time (a request while a write awaits
/// completion is a violation and is dropped), every request answered by its response or an
/// error response naming the request and handle, commands never answered, values truncated to
/// the ATT_MTU where the specification says so.
public struct GATTServer: Sendable {
    public let database: GATTDatabase
    /// The ATT_MTU in use (23 until the client exchanges one).
    public private(set) var mtu = ATTPDU.defaultMTU
    /// The ATT_MTU this side offers.
    public let offeredMTU: Int
    /// Per characteristic: (notify, indicate) as the peer configured them.
    public private(set) var subscriptions: [Int: (notify: Bool, indicate: Bool)] = [:]
    /// The characteristic of the indication awaiting confirmation.
    public private(set) var indicationInFlight: Int?

    /// Prepared writes the peer may queue (entries), and their bytes in all.
    public static let preparedWriteLimit = 64
    public static let preparedBytesLimit = 4 * ATTPDU.maximumValueLength

    private var prepared: [(handle: UInt16, offset: Int, value: [UInt8])] = []
    private var preparedBytes = 0
    private var mtuExchanged = false
    /// A write the application has not completed: the request's opcode and handle, and how many
    /// `.written` outputs it is waiting on (an executed long write can carry several).
    private var pendingWrite: (id: UInt32, opcode: UInt8, remaining: Set<UInt16>)?
    private var lastWriteID: UInt32 = 0

    public init(database: GATTDatabase, offeredMTU: Int = ATTPDU.maximumMTU) {
        self.database = database
        self.offeredMTU = min(max(offeredMTU, ATTPDU.defaultMTU), ATTPDU.maximumMTU)
    }

    /// The ATT_MTU the client role of the same bearer agreed (one exchange serves both
    /// directions, Vol 3 Part F 3.4.2): `ATTBearer` passes it on.
    public mutating func useMTU(_ agreed: Int) {
        mtu = min(max(agreed, ATTPDU.defaultMTU), ATTPDU.maximumMTU)
    }

    /// Whether a request is waiting for `completeWrite`.
    public var awaitsCompletion: Bool { pendingWrite != nil }

    // MARK: - From the peer

    /// Handles one PDU the peer sent that is for the server role: a request, a command or a
    /// confirmation (`ATTBearer` routes responses, notifications and indications to the client).
    public mutating func receive(_ bytes: [UInt8]) -> [GATTServerOutput] {
        guard let opcode = bytes.first else { return [.violation("an empty ATT PDU")] }
        let isCommand = opcode & 0x40 != 0
        // A request is anything for the server that is neither a command nor a confirmation
        // (unknown opcodes included, as they are answered).
        let isRequest = !isCommand && opcode != 0x1E && ATTRole.of(opcode: opcode) == .server
        if pendingWrite != nil, isRequest {
            return [.violation("a request (opcode 0x\(hex(opcode))) before the last was answered")]
        }
        // No PDU may exceed the ATT_MTU (Vol 3 Part F 3.2.8); answering one could (a Prepare Write
        // Response echoes the value).
        guard bytes.count <= mtu else {
            if !isRequest { return [.violation("a PDU of \(bytes.count) bytes over the MTU of \(mtu)")] }
            return [.send(errorPDU(opcode, 0, .invalidPDU)), .violation("a request of \(bytes.count) bytes over the MTU of \(mtu)")]
        }
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU.parse(bytes)
        } catch {
            if isCommand { return [.violation("an unparsable command (opcode 0x\(hex(opcode)))")] }
            switch error {
            case .unknownOpcode:
                // Requests this server does not know (Read Multiple Variable, newer ones) are
                // answered, as BlueZ does: every unknown opcode without the command flag is taken
                // for a request.
                return [.send(errorPDU(opcode, 0, .requestNotSupported))]
            default:
                return [.send(errorPDU(opcode, 0, .invalidPDU)), .violation("a malformed request (opcode 0x\(hex(opcode)))")]
            }
        }
        switch pdu {
        case .exchangeMTURequest(let clientMTU):
            var outputs: [GATTServerOutput] = [.send(ATTPDU.exchangeMTUResponse(serverMTU: UInt16(offeredMTU)).encode())]
            // Only the first exchange counts (Vol 3 Part F 3.4.2.1: once per connection).
            if !mtuExchanged {
                mtuExchanged = true
                let agreed = min(max(Int(clientMTU), ATTPDU.defaultMTU), offeredMTU)
                if agreed != mtu {
                    mtu = agreed
                    outputs.append(.mtuChanged(agreed))
                }
            }
            return outputs
        case .findInformationRequest(let start, let end):
            return [.send(findInformation(start, end))]
        case .findByTypeValueRequest(let start, let end, let type, let value):
            return [.send(findByTypeValue(start, end, GATTUUID(type), value))]
        case .readByTypeRequest(let start, let end, let type):
            return [.send(readByType(start, end, type))]
        case .readByGroupTypeRequest(let start, let end, let type):
            return [.send(readByGroupType(start, end, type))]
        case .readRequest(let handle):
            return [.send(read(opcode, handle, offset: 0))]
        case .readBlobRequest(let handle, let offset):
            return [.send(read(opcode, handle, offset: Int(offset)))]
        case .readMultipleRequest(let handles):
            var values: [UInt8] = []
            for handle in handles {
                switch readable(handle) {
                case .success(let value): values += value
                case .failure(let code): return [.send(errorPDU(opcode, handle, code))]
                }
            }
            return [.send(ATTPDU.readMultipleResponse(values: Array(values.prefix(mtu - 1))).encode())]
        case .writeRequest(let handle, let value):
            return write(handle, value, request: opcode)
        case .writeCommand(let handle, let value):
            return write(handle, value, request: nil)
        case .signedWriteCommand:
            // No characteristic here allows signed writes (they need a bonded CSRK).
            return [.violation("a signed write (not supported)")]
        case .prepareWriteRequest(let handle, let offset, let value):
            return prepareWrite(handle, Int(offset), value)
        case .executeWriteRequest(let commit):
            return executeWrite(commit)
        case .confirmation:
            guard let characteristic = indicationInFlight else { return [.violation("a confirmation with no indication sent")] }
            indicationInFlight = nil
            return [.indicationConfirmed(characteristic: characteristic)]
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse, .readByTypeResponse,
             .readResponse, .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse, .writeResponse,
             .prepareWriteResponse, .executeWriteResponse, .notification, .indication:
            return [.violation("a client-role PDU (opcode 0x\(hex(opcode))) given to the server")]
        }
    }

    /// Answers the value `completion` names: nil accepts it, an error code refuses the write (the
    /// peer gets that error, naming the value's handle). Returns the PDU to send once every value
    /// of the write is answered; nil before, and for a write already answered.
    public mutating func completeWrite(_ completion: WriteCompletion, error code: ATTErrorCode? = nil) -> [UInt8]? {
        guard var pending = pendingWrite, pending.id == completion.write, pending.remaining.contains(completion.handle) else { return nil }
        if let code {
            pendingWrite = nil
            return errorPDU(pending.opcode, completion.handle, code)
        }
        pending.remaining.remove(completion.handle)
        guard pending.remaining.isEmpty else {
            pendingWrite = pending
            return nil
        }
        pendingWrite = nil
        return pending.opcode == 0x18 ? ATTPDU.executeWriteResponse.encode() : ATTPDU.writeResponse.encode()
    }

    // MARK: - To the peer

    public enum SendRefusal: Error, Equatable, Sendable {
        case notSubscribed
        case tooLong(maximum: Int)
        case indicationInFlight
        case noSuchCharacteristic
    }

    /// The notification of `value` for characteristic number `characteristic`, if the peer
    /// subscribed; values longer than ATT_MTU − 3 are refused (the caller frames them).
    public func notification(_ characteristic: Int, _ value: [UInt8]) throws(SendRefusal) -> [UInt8] {
        guard characteristic >= 0, characteristic < database.characteristics.count else { throw .noSuchCharacteristic }
        guard subscriptions[characteristic]?.notify == true else { throw .notSubscribed }
        guard value.count <= mtu - 3 else { throw .tooLong(maximum: mtu - 3) }
        return ATTPDU.notification(handle: database.characteristics[characteristic].valueHandle, value: value).encode()
    }

    /// The indication of `value`, if the peer subscribed to indications and none is in flight.
    public mutating func indication(_ characteristic: Int, _ value: [UInt8]) throws(SendRefusal) -> [UInt8] {
        guard characteristic >= 0, characteristic < database.characteristics.count else { throw .noSuchCharacteristic }
        guard subscriptions[characteristic]?.indicate == true else { throw .notSubscribed }
        guard indicationInFlight == nil else { throw .indicationInFlight }
        guard value.count <= mtu - 3 else { throw .tooLong(maximum: mtu - 3) }
        indicationInFlight = characteristic
        return ATTPDU.indication(handle: database.characteristics[characteristic].valueHandle, value: value).encode()
    }

    // MARK: - Requests

    private func errorPDU(_ request: UInt8, _ handle: UInt16, _ code: ATTErrorCode) -> [UInt8] {
        ATTPDU.errorResponse(request: request, handle: handle, error: code).encode()
    }

    private func validRange(_ start: UInt16, _ end: UInt16) -> Bool { start != 0 && start <= end }

    private func findInformation(_ start: UInt16, _ end: UInt16) -> [UInt8] {
        guard validRange(start, end) else { return errorPDU(0x04, start, .invalidHandle) }
        var entries: [ATTPDU.HandleUUID] = []
        var size = 2
        for attribute in database.attributes(in: start, end) {
            let short = attribute.type.short != nil
            if let first = entries.first, (first.type.short != nil) != short { break }
            let entrySize = 2 + (short ? 2 : 16)
            guard size + entrySize <= mtu else { break }
            entries.append(ATTPDU.HandleUUID(handle: attribute.handle, type: attribute.type))
            size += entrySize
        }
        return entries.isEmpty ? errorPDU(0x04, start, .attributeNotFound) : ATTPDU.findInformationResponse(entries).encode()
    }

    private func findByTypeValue(_ start: UInt16, _ end: UInt16, _ type: GATTUUID, _ value: [UInt8]) -> [UInt8] {
        guard validRange(start, end) else { return errorPDU(0x06, start, .invalidHandle) }
        var ranges: [ATTPDU.HandleRange] = []
        for attribute in database.attributes(in: start, end) where attribute.type == type && attribute.value == value {
            guard 1 + 4 * (ranges.count + 1) <= mtu else { break }
            if case .serviceDeclaration(let groupEnd) = attribute.role {
                ranges.append(ATTPDU.HandleRange(start: attribute.handle, end: groupEnd))
            } else {
                ranges.append(ATTPDU.HandleRange(start: attribute.handle, end: attribute.handle))
            }
        }
        return ranges.isEmpty ? errorPDU(0x06, start, .attributeNotFound) : ATTPDU.findByTypeValueResponse(ranges).encode()
    }

    private func readByType(_ start: UInt16, _ end: UInt16, _ type: GATTUUID) -> [UInt8] {
        guard validRange(start, end) else { return errorPDU(0x08, start, .invalidHandle) }
        let longest = min(mtu - 4, 253)
        var entries: [ATTPDU.HandleValue] = []
        var size = 2
        for attribute in database.attributes(in: start, end) where attribute.type == type {
            let value: [UInt8]
            switch readable(attribute.handle) {
            case .success(let v): value = Array(v.prefix(longest))
            case .failure(let code):
                // The first match decides the error; a later one ends the list.
                if entries.isEmpty { return errorPDU(0x08, attribute.handle, code) }
                return ATTPDU.readByTypeResponse(entries).encode()
            }
            if let first = entries.first, first.value.count != value.count { break }
            guard size + 2 + value.count <= mtu else { break }
            entries.append(ATTPDU.HandleValue(handle: attribute.handle, value: value))
            size += 2 + value.count
        }
        return entries.isEmpty ? errorPDU(0x08, start, .attributeNotFound) : ATTPDU.readByTypeResponse(entries).encode()
    }

    private func readByGroupType(_ start: UInt16, _ end: UInt16, _ type: GATTUUID) -> [UInt8] {
        guard validRange(start, end) else { return errorPDU(0x10, start, .invalidHandle) }
        guard type == .primaryService || type == .secondaryService else { return errorPDU(0x10, start, .unsupportedGroupType) }
        let longest = min(mtu - 6, 251)
        var groups: [ATTPDU.GroupValue] = []
        var size = 2
        for attribute in database.attributes(in: start, end) where attribute.type == type {
            guard case .serviceDeclaration(let groupEnd) = attribute.role else { continue }
            let value = Array(attribute.value.prefix(longest))
            if let first = groups.first, first.value.count != value.count { break }
            guard size + 4 + value.count <= mtu else { break }
            groups.append(ATTPDU.GroupValue(start: attribute.handle, end: groupEnd, value: value))
            size += 4 + value.count
        }
        return groups.isEmpty ? errorPDU(0x10, start, .attributeNotFound) : ATTPDU.readByGroupTypeResponse(groups).encode()
    }

    /// The value a read of `handle` returns, or why not.
    private func readable(_ handle: UInt16) -> Result<[UInt8], ATTErrorCode> {
        guard let attribute = database.attribute(handle) else { return .failure(.invalidHandle) }
        switch attribute.role {
        case .serviceDeclaration, .characteristicDeclaration:
            return .success(attribute.value)
        case .value(let index):
            guard database.characteristics[index].properties.contains(.read) else { return .failure(.readNotPermitted) }
            return .success(attribute.value)
        case .clientConfiguration(let index):
            let subscription = subscriptions[index]
            return .success([(subscription?.notify == true ? 1 : 0) | (subscription?.indicate == true ? 2 : 0), 0])
        }
    }

    private func read(_ opcode: UInt8, _ handle: UInt16, offset: Int) -> [UInt8] {
        switch readable(handle) {
        case .failure(let code):
            return errorPDU(opcode, handle, code)
        case .success(let value):
            if opcode == 0x0A { return ATTPDU.readResponse(value: Array(value.prefix(mtu - 1))).encode() }
            guard offset <= value.count else { return errorPDU(opcode, handle, .invalidOffset) }
            return ATTPDU.readBlobResponse(value: Array(value[offset...].prefix(mtu - 1))).encode()
        }
    }

    /// A Write Request (`request` is its opcode) or a Write Command (`request` nil).
    private mutating func write(_ handle: UInt16, _ value: [UInt8], request: UInt8?) -> [GATTServerOutput] {
        func refuse(_ code: ATTErrorCode) -> [GATTServerOutput] {
            if let request { return [.send(errorPDU(request, handle, code))] }
            return [.violation("a write command refused: \(code)")]
        }
        guard let attribute = database.attribute(handle) else { return refuse(.invalidHandle) }
        switch attribute.role {
        case .clientConfiguration(let index):
            guard value.count == 2 else { return refuse(.invalidAttributeValueLength) }
            let notify = value[0] & 1 != 0, indicate = value[0] & 2 != 0
            let properties = database.characteristics[index].properties
            guard value[0] & ~3 == 0, value[1] == 0, !notify || properties.contains(.notify), !indicate || properties.contains(.indicate) else {
                return refuse(.cccdImproperlyConfigured)
            }
            let before = subscriptions[index] ?? (false, false)
            subscriptions[index] = notify || indicate ? (notify, indicate) : nil
            // An indication already sent stays in flight: the peer still confirms it.
            var outputs: [GATTServerOutput] = []
            if request != nil { outputs.append(.send(ATTPDU.writeResponse.encode())) }
            if before.notify != notify || before.indicate != indicate {
                outputs.append(.subscriptionChanged(characteristic: index, notify: notify, indicate: indicate))
            }
            return outputs
        case .value(let index):
            let entry = database.characteristics[index]
            guard entry.properties.contains(request == nil ? .writeWithoutResponse : .write) else { return refuse(.writeNotPermitted) }
            guard value.count <= entry.maximumWriteLength else { return refuse(.invalidAttributeValueLength) }
            if let request {
                let id = nextWriteID()
                pendingWrite = (id, request, [handle])
                return [.written(characteristic: index, value: value, completion: WriteCompletion(write: id, handle: handle))]
            }
            return [.written(characteristic: index, value: value, completion: nil)]
        case .serviceDeclaration, .characteristicDeclaration:
            return refuse(.writeNotPermitted)
        }
    }

    private mutating func prepareWrite(_ handle: UInt16, _ offset: Int, _ value: [UInt8]) -> [GATTServerOutput] {
        guard let attribute = database.attribute(handle) else { return [.send(errorPDU(0x16, handle, .invalidHandle))] }
        guard case .value(let index) = attribute.role, database.characteristics[index].properties.contains(.write) else {
            return [.send(errorPDU(0x16, handle, .writeNotPermitted))]
        }
        guard prepared.count < Self.preparedWriteLimit, preparedBytes + value.count <= Self.preparedBytesLimit else {
            return [.send(errorPDU(0x16, handle, .prepareQueueFull))]
        }
        prepared.append((handle, offset, value))
        preparedBytes += value.count
        return [.send(ATTPDU.prepareWriteResponse(handle: handle, offset: UInt16(offset), value: value).encode())]
    }

    private mutating func executeWrite(_ commit: Bool) -> [GATTServerOutput] {
        let queue = prepared
        prepared = []
        preparedBytes = 0
        guard commit, !queue.isEmpty else { return [.send(ATTPDU.executeWriteResponse.encode())] }
        // Each handle's parts in the order they came: an offset may overwrite what came before
        // but never leave a gap (Invalid Offset), and the value keeps to the characteristic's limit.
        var order: [UInt16] = []
        var values: [UInt16: [UInt8]] = [:]
        for part in queue {
            var value = values[part.handle] ?? []
            if values[part.handle] == nil { order.append(part.handle) }
            guard part.offset <= value.count else { return [.send(errorPDU(0x18, part.handle, .invalidOffset))] }
            let end = part.offset + part.value.count
            if end > value.count { value += [UInt8](repeating: 0, count: end - value.count) }
            value.replaceSubrange(part.offset ..< end, with: part.value)
            values[part.handle] = value
        }
        var outputs: [GATTServerOutput] = []
        let id = nextWriteID()
        for handle in order {
            guard let value = values[handle], case .value(let index)? = database.attribute(handle)?.role else { continue }
            guard value.count <= database.characteristics[index].maximumWriteLength else {
                return [.send(errorPDU(0x18, handle, .invalidAttributeValueLength))]
            }
            outputs.append(.written(characteristic: index, value: value, completion: WriteCompletion(write: id, handle: handle)))
        }
        pendingWrite = (id, 0x18, Set(outputs.compactMap { if case .written(_, _, let completion?) = $0 { completion.handle } else { nil } }))
        return outputs
    }

    private mutating func nextWriteID() -> UInt32 {
        lastWriteID &+= 1
        return lastWriteID
    }
}

func hex(_ byte: UInt8) -> String { String(byte, radix: 16).leftPadded(to: 2) }
