/// A service, characteristic and descriptor as a client discovers them on a peer.
public struct DiscoveredService: Equatable, Sendable {
    public var uuid: GATTUUID
    public var start: UInt16
    public var end: UInt16
    public var characteristics: [DiscoveredCharacteristic] = []
}

public struct DiscoveredCharacteristic: Equatable, Sendable {
    public var uuid: GATTUUID
    public var properties: GATTProperties
    public var declarationHandle: UInt16
    public var valueHandle: UInt16
    /// The Client Characteristic Configuration descriptor, when the peer has one.
    public var configurationHandle: UInt16?
}

/// What the client side of one ATT bearer asks of its owner.
public enum GATTClientOutput: Equatable, Sendable {
    /// Send this PDU to the peer.
    case send([UInt8])
    /// A procedure ended (`id` is what `start` returned).
    case completed(id: Int, GATTClient.Result)
    /// The peer notified (`confirmed` false) or indicated (the confirmation is already in the
    /// same outputs) a value.
    case value(handle: UInt16, value: [UInt8], indicated: Bool)
    case mtuChanged(Int)
    /// The peer broke the protocol: a response nobody asked for, one of the wrong kind, bytes
    /// that do not parse.
    case violation(String)
}

/// The client role of one ATT bearer: GATT procedures (Vol 3 Part G 4) run one at a time, each a
/// series of requests whose responses it checks, with the paging the specification prescribes
/// (discovery continues after the last handle found; a long read continues with Read Blob while
/// a response fills the MTU; a write longer than one PDU becomes prepared writes and an execute).
/// Notifications and indications come out as `.value`, indications confirmed at once.
///
/// Pure and bounded: procedures queue (at most `queueLimit`), discovery keeps at most
/// `discoveryLimit` attributes, long reads at most 512 bytes. The owner keeps time: while
/// `waitingSince` is set, ATT's 30 s transaction timeout runs (Vol 3 Part F 3.3.3), after which
/// the bearer must be closed.
public struct GATTClient: Sendable {
    public enum Procedure: Equatable, Sendable {
        case exchangeMTU(UInt16)
        /// Primary services (all, or those with `uuid`), then every characteristic and its CCCD.
        case discover(service: GATTUUID?)
        case read(handle: UInt16)
        case write(handle: UInt16, value: [UInt8])
        /// A CCCD write: 1 notifications, 2 indications, 0 none.
        case configure(handle: UInt16, bits: UInt16)
    }

    public enum Result: Equatable, Sendable {
        case done
        case mtu(Int)
        case services([DiscoveredService])
        case value([UInt8])
        case failed(ATTErrorCode, handle: UInt16)
        /// The peer answered with something that is not an answer to the request.
        case protocolError(String)
        /// The bearer closed before the procedure ended.
        case cancelled
    }

    public private(set) var mtu = ATTPDU.defaultMTU
    public static let queueLimit = 16
    public static let discoveryLimit = 256

    private var queue: [(id: Int, procedure: Procedure)] = []
    private var nextID = 1
    private var running: Running?
    /// The request sent and not yet answered (its opcode).
    private var awaiting: UInt8?

    private enum Stage: Sendable {
        case services(after: UInt16)
        case characteristics(service: Int, after: UInt16)
        case descriptors(service: Int, characteristic: Int, after: UInt16)
    }

    private struct Running: Sendable {
        var id: Int
        var procedure: Procedure
        var services: [DiscoveredService] = []
        var stage: Stage = .services(after: 0)
        var value: [UInt8] = []
        var sent = 0
        /// A read response this long fills the PDU (ATT_MTU − 1 when the request was sent).
        var fullRead = 0
        /// Where the last prepared part began (its echo must start there and end at `sent`).
        var partStart = 0
        /// A long write that went wrong (an echo that did not match, an error): the queue was
        /// cancelled with an Execute Write, and this is the result once that is answered.
        var abandoned: Result?
    }

    public init() {}

    /// The ATT_MTU the server role of the same bearer agreed when the peer exchanged it (one
    /// exchange serves both directions): `ATTBearer` passes it on.
    public mutating func useMTU(_ agreed: Int) {
        mtu = min(max(agreed, ATTPDU.defaultMTU), ATTPDU.maximumMTU)
    }

    /// Whether a request waits for its response (the owner runs the 30 s timeout meanwhile).
    public var isWaiting: Bool { awaiting != nil }
    /// Procedures not yet ended, the running one included.
    public var pending: Int { queue.count + (running == nil ? 0 : 1) }

    /// Queues `procedure`; returns its id and whatever must be sent now, or nil when the queue is
    /// full or a write's value is longer than an attribute can be (512 bytes).
    public mutating func start(_ procedure: Procedure) -> (id: Int, outputs: [GATTClientOutput])? {
        guard pending < Self.queueLimit + 1 else { return nil }
        // No attribute value is longer (and a longer one would overflow a prepared write's offset).
        if case .write(_, let value) = procedure, value.count > ATTPDU.maximumValueLength { return nil }
        let id = nextID
        nextID += 1
        queue.append((id, procedure))
        return (id, running == nil ? next() : [])
    }

    /// A Write Command: sent at once, never answered (values up to ATT_MTU − 3).
    public func writeCommand(handle: UInt16, value: [UInt8]) -> [UInt8]? {
        value.count <= mtu - 3 ? ATTPDU.writeCommand(handle: handle, value: value).encode() : nil
    }

    /// Ends every procedure (the bearer closed).
    public mutating func cancelAll() -> [GATTClientOutput] {
        var outputs: [GATTClientOutput] = []
        if let running { outputs.append(.completed(id: running.id, .cancelled)) }
        outputs += queue.map { .completed(id: $0.id, .cancelled) }
        running = nil
        queue = []
        awaiting = nil
        return outputs
    }

    /// Handles one PDU for the client role: a response, an error response, a notification or an
    /// indication.
    public mutating func receive(_ bytes: [UInt8]) -> [GATTClientOutput] {
        let pdu: ATTPDU
        do { pdu = try ATTPDU.parse(bytes) } catch { return [.violation("an unparsable PDU for the client: \(error)")] }
        switch pdu {
        case .notification(let handle, let value):
            return [.value(handle: handle, value: value, indicated: false)]
        case .indication(let handle, let value):
            return [.send(ATTPDU.confirmation.encode()), .value(handle: handle, value: value, indicated: true)]
        default:
            break
        }
        guard let request = pdu.answers else { return [.violation("a server-role PDU (opcode 0x\(hex(pdu.opcode))) given to the client")] }
        guard let awaited = awaiting, awaited == request, var run = running else {
            return [.violation("a response (opcode 0x\(hex(pdu.opcode))) to no request sent")]
        }
        awaiting = nil
        let step = advance(&run, pdu)
        switch step {
        case .send(let request):
            running = run
            awaiting = request.first
            return [.send(request)]
        case .finish(let result, let extra):
            running = nil
            return extra + [.completed(id: run.id, result)] + next()
        }
    }

    // MARK: - Procedures

    private enum Step {
        case send([UInt8])
        case finish(Result, extra: [GATTClientOutput] = [])
    }

    private mutating func next() -> [GATTClientOutput] {
        guard running == nil, !queue.isEmpty else { return [] }
        let (id, procedure) = queue.removeFirst()
        var run = Running(id: id, procedure: procedure)
        let first: [UInt8]
        switch procedure {
        case .exchangeMTU(let offer):
            first = ATTPDU.exchangeMTURequest(clientMTU: offer).encode()
        case .discover(let uuid):
            first = serviceRequest(uuid, after: 0)
        case .read(let handle):
            run.fullRead = mtu - 1
            first = ATTPDU.readRequest(handle: handle).encode()
        case .write(let handle, let value):
            if value.count <= mtu - 3 {
                first = ATTPDU.writeRequest(handle: handle, value: value).encode()
            } else {
                let part = Array(value.prefix(mtu - 5))
                run.sent = part.count
                first = ATTPDU.prepareWriteRequest(handle: handle, offset: 0, value: part).encode()
            }
        case .configure(let handle, let bits):
            first = ATTPDU.writeRequest(handle: handle, value: [UInt8(bits & 0xFF), UInt8(bits >> 8)]).encode()
        }
        running = run
        awaiting = first.first
        return [.send(first)]
    }

    private func serviceRequest(_ uuid: GATTUUID?, after: UInt16) -> [UInt8] {
        if let uuid { return ATTPDU.findByTypeValueRequest(start: after + 1, end: 0xFFFF, type: 0x2800, value: uuid.attBytes).encode() }
        return ATTPDU.readByGroupTypeRequest(start: after + 1, end: 0xFFFF, type: .primaryService).encode()
    }

    private mutating func advance(_ run: inout Running, _ pdu: ATTPDU) -> Step {
        switch (run.procedure, pdu) {
        case (.exchangeMTU(let offer), .exchangeMTUResponse(let serverMTU)):
            let agreed = min(max(Int(min(offer, serverMTU)), ATTPDU.defaultMTU), ATTPDU.maximumMTU)
            let changed = agreed != mtu
            mtu = agreed
            return .finish(.mtu(agreed), extra: changed ? [.mtuChanged(agreed)] : [])
        case (.exchangeMTU, .errorResponse(_, _, .requestNotSupported)):
            return .finish(.mtu(mtu))
        case (.discover, _):
            return discoverStep(&run, pdu)
        case (.read(let handle), .readResponse(let value)), (.read(let handle), .readBlobResponse(let value)):
            run.value += value
            // A response that fills the MTU may have more behind it (Vol 3 Part G 4.8.3).
            // Full as the MTU was when the request went out: an exchange by the peer meanwhile
            // (it changes the link's MTU) must not end a long read early.
            if value.count == run.fullRead, run.value.count < ATTPDU.maximumValueLength {
                run.fullRead = mtu - 1
                return .send(ATTPDU.readBlobRequest(handle: handle, offset: UInt16(run.value.count)).encode())
            }
            return .finish(.value(Array(run.value.prefix(ATTPDU.maximumValueLength))))
        case (.read, .errorResponse(0x0C, _, .attributeNotLong)), (.read, .errorResponse(0x0C, _, .invalidOffset)):
            return .finish(.value(run.value))
        case (.write, .writeResponse), (.configure, .writeResponse):
            return .finish(.done)
        case (.write(let handle, let value), .prepareWriteResponse(let echoedHandle, let offset, let echoed)):
            // The echo must be what was sent (Vol 3 Part G 4.9.4): else cancel the queue.
            // Checked in order: the slice is taken only once its bounds are known to lie within.
            guard echoedHandle == handle, Int(offset) == run.partStart, run.partStart + echoed.count == run.sent, run.sent <= value.count,
                  Array(value[run.partStart ..< run.sent]) == echoed else {
                run.abandoned = .protocolError("the peer changed a prepared write; the write was cancelled")
                return .send(ATTPDU.executeWriteRequest(commit: false).encode())
            }
            if run.sent < value.count {
                let part = Array(value[run.sent ..< min(run.sent + mtu - 5, value.count)])
                let offset = run.sent
                run.partStart = offset
                run.sent += part.count
                return .send(ATTPDU.prepareWriteRequest(handle: handle, offset: UInt16(offset), value: part).encode())
            }
            return .send(ATTPDU.executeWriteRequest(commit: true).encode())
        case (.write, .executeWriteResponse):
            return .finish(run.abandoned ?? .done)
        case (.write, .errorResponse(let request, let handle, let code)) where request == 0x16 && run.abandoned == nil:
            // Parts already queued at the peer would go out with its next long write: cancel them.
            run.abandoned = .failed(code, handle: handle)
            return .send(ATTPDU.executeWriteRequest(commit: false).encode())
        case (.write, .errorResponse(0x18, _, _)) where run.abandoned != nil:
            return .finish(run.abandoned ?? .done)
        case (_, .errorResponse(_, let handle, let code)):
            return .finish(.failed(code, handle: handle))
        default:
            return .finish(.protocolError("opcode 0x\(hex(pdu.opcode)) does not answer \(run.procedure)"))
        }
    }

    private func count(_ services: [DiscoveredService]) -> Int {
        services.reduce(services.count) { $0 + $1.characteristics.count }
    }

    private mutating func discoverStep(_ run: inout Running, _ pdu: ATTPDU) -> Step {
        guard case .discover(let uuid) = run.procedure else { return .finish(.protocolError("not discovering")) }
        switch (run.stage, pdu) {
        case (.services, .readByGroupTypeResponse(let groups)):
            guard case .services(let after) = run.stage else { return .finish(.protocolError("not discovering services")) }
            var accepted: UInt16?
            for group in groups where group.start > max(after, accepted ?? 0) && run.services.count < Self.discoveryLimit {
                guard let type = GATTUUID(attBytes: group.value), group.end >= group.start else {
                    return .finish(.protocolError("a service declaration that is not a UUID"))
                }
                run.services.append(DiscoveredService(uuid: type, start: group.start, end: group.end))
                accepted = group.end
            }
            // The next page starts after what was taken: a page of nothing new ends the discovery.
            return nextServices(&run, uuid, last: accepted)
        case (.services, .findByTypeValueResponse(let ranges)):
            guard case .services(let after) = run.stage else { return .finish(.protocolError("not discovering services")) }
            var accepted: UInt16?
            for range in ranges where range.end >= range.start && range.start > max(after, accepted ?? 0) && run.services.count < Self.discoveryLimit {
                if let uuid { run.services.append(DiscoveredService(uuid: uuid, start: range.start, end: range.end)) }
                accepted = range.end
            }
            return nextServices(&run, uuid, last: accepted)
        case (.services, .errorResponse(_, _, .attributeNotFound)):
            return startCharacteristics(&run, service: 0)
        case (.characteristics(let index, let after), .readByTypeResponse(let entries)):
            // Only declarations past the last one and within the service count: a peer answering
            // the same page again ends the discovery instead of repeating it.
            var last: UInt16 = 0
            for entry in entries where entry.handle > after && entry.handle <= run.services[index].end {
                guard entry.value.count == 5 || entry.value.count == 19, let type = GATTUUID(attBytes: entry.value[3...]) else {
                    return .finish(.protocolError("a characteristic declaration of \(entry.value.count) bytes"))
                }
                let valueHandle = UInt16(entry.value[1]) | UInt16(entry.value[2]) << 8
                guard entry.handle > max(last, after), count(run.services) < Self.discoveryLimit else { break }
                last = entry.handle
                run.services[index].characteristics.append(DiscoveredCharacteristic(
                    uuid: type, properties: GATTProperties(rawValue: entry.value[0]), declarationHandle: entry.handle, valueHandle: valueHandle))
            }
            let end = run.services[index].end
            if last == 0 || last >= end || count(run.services) >= Self.discoveryLimit { return startDescriptors(&run, service: index, characteristic: 0) }
            run.stage = .characteristics(service: index, after: last)
            return .send(ATTPDU.readByTypeRequest(start: last + 1, end: end, type: .characteristic).encode())
        case (.characteristics(let index, _), .errorResponse(_, _, .attributeNotFound)):
            return startDescriptors(&run, service: index, characteristic: 0)
        case (.descriptors(let service, let characteristic, let after), .findInformationResponse(let entries)):
            // As for characteristics: only handles past the last page and within the range.
            let end = descriptorEnd(run, service, characteristic)
            var last: UInt16 = 0
            for entry in entries where entry.handle > max(last, after) && entry.handle <= end {
                last = entry.handle
                if entry.type == .clientConfiguration, run.services[service].characteristics[characteristic].configurationHandle == nil {
                    run.services[service].characteristics[characteristic].configurationHandle = entry.handle
                }
            }
            if last == 0 || last >= end { return startDescriptors(&run, service: service, characteristic: characteristic + 1) }
            run.stage = .descriptors(service: service, characteristic: characteristic, after: last)
            return .send(ATTPDU.findInformationRequest(start: last + 1, end: end).encode())
        case (.descriptors(let service, let characteristic, _), .errorResponse(_, _, .attributeNotFound)):
            return startDescriptors(&run, service: service, characteristic: characteristic + 1)
        case (_, .errorResponse(_, let handle, let code)):
            return .finish(.failed(code, handle: handle))
        default:
            return .finish(.protocolError("opcode 0x\(hex(pdu.opcode)) does not answer a discovery"))
        }
    }

    private mutating func nextServices(_ run: inout Running, _ uuid: GATTUUID?, last: UInt16?) -> Step {
        // Paging goes forward only: a peer answering the same range again ends the discovery.
        guard case .services(let after) = run.stage, let last, last > after, last < 0xFFFF,
              run.services.count < Self.discoveryLimit else {
            return startCharacteristics(&run, service: 0)
        }
        run.stage = .services(after: last)
        return .send(serviceRequest(uuid, after: last))
    }

    private mutating func startCharacteristics(_ run: inout Running, service: Int) -> Step {
        guard service < run.services.count else { return .finish(.services(run.services)) }
        let range = run.services[service]
        guard range.start < range.end else { return startCharacteristics(&run, service: service + 1) }
        run.stage = .characteristics(service: service, after: range.start)
        return .send(ATTPDU.readByTypeRequest(start: range.start + 1, end: range.end, type: .characteristic).encode())
    }

    /// The last handle a characteristic's descriptors can have: before the next declaration, or
    /// the service's end.
    private func descriptorEnd(_ run: Running, _ service: Int, _ characteristic: Int) -> UInt16 {
        let list = run.services[service].characteristics
        return characteristic + 1 < list.count ? list[characteristic + 1].declarationHandle - 1 : run.services[service].end
    }

    private mutating func startDescriptors(_ run: inout Running, service: Int, characteristic: Int) -> Step {
        guard service < run.services.count else { return .finish(.services(run.services)) }
        let list = run.services[service].characteristics
        guard characteristic < list.count else { return startCharacteristics(&run, service: service + 1) }
        let entry = list[characteristic]
        let end = descriptorEnd(run, service, characteristic)
        // Only characteristics that notify or indicate have a CCCD worth finding.
        guard !entry.properties.isDisjoint(with: [.notify, .indicate]), entry.valueHandle < end else {
            return startDescriptors(&run, service: service, characteristic: characteristic + 1)
        }
        run.stage = .descriptors(service: service, characteristic: characteristic, after: entry.valueHandle)
        return .send(ATTPDU.findInformationRequest(start: entry.valueHandle + 1, end: end).encode())
    }
}
