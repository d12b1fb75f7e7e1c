/// The Attribute Protocol's PDUs (Bluetooth Core 5.4, Vol 3 Part F 3.4), as bytes from a peer and
/// to it. `ATTPDU.parse` takes any bytes (one L2CAP SDU on the ATT channel) and either returns a
/// PDU whose fields are all in range or throws `ATTParseError`: it never traps, and it keeps no
/// more than the input (a Find Information response holds at most as many entries as its bytes).
/// `encode()` is its inverse: `parse(encode(p)) == p` for every PDU this box builds.
///
/// All multi-byte fields are little-endian. Handles are 1...0xFFFF (0 is invalid in requests,
/// which the server answers with an Invalid Handle error, not the parser).
public enum ATTPDU: Equatable, Sendable {
    case errorResponse(request: UInt8, handle: UInt16, error: ATTErrorCode)
    case exchangeMTURequest(clientMTU: UInt16)
    case exchangeMTUResponse(serverMTU: UInt16)
    case findInformationRequest(start: UInt16, end: UInt16)
    case findInformationResponse([HandleUUID])
    case findByTypeValueRequest(start: UInt16, end: UInt16, type: UInt16, value: [UInt8])
    case findByTypeValueResponse([HandleRange])
    case readByTypeRequest(start: UInt16, end: UInt16, type: GATTUUID)
    case readByTypeResponse([HandleValue])
    case readRequest(handle: UInt16)
    case readResponse(value: [UInt8])
    case readBlobRequest(handle: UInt16, offset: UInt16)
    case readBlobResponse(value: [UInt8])
    case readMultipleRequest(handles: [UInt16])
    case readMultipleResponse(values: [UInt8])
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: GATTUUID)
    case readByGroupTypeResponse([GroupValue])
    case writeRequest(handle: UInt16, value: [UInt8])
    case writeResponse
    case writeCommand(handle: UInt16, value: [UInt8])
    case signedWriteCommand(handle: UInt16, value: [UInt8], signature: [UInt8])
    case prepareWriteRequest(handle: UInt16, offset: UInt16, value: [UInt8])
    case prepareWriteResponse(handle: UInt16, offset: UInt16, value: [UInt8])
    case executeWriteRequest(commit: Bool)
    case executeWriteResponse
    case notification(handle: UInt16, value: [UInt8])
    case indication(handle: UInt16, value: [UInt8])
    case confirmation

    public struct HandleUUID: Equatable, Sendable {
        public var handle: UInt16
        public var type: GATTUUID
        public init(handle: UInt16, type: GATTUUID) { self.handle = handle; self.type = type }
    }

    public struct HandleRange: Equatable, Sendable {
        public var start: UInt16
        public var end: UInt16
        public init(start: UInt16, end: UInt16) { self.start = start; self.end = end }
    }

    public struct HandleValue: Equatable, Sendable {
        public var handle: UInt16
        public var value: [UInt8]
        public init(handle: UInt16, value: [UInt8]) { self.handle = handle; self.value = value }
    }

    public struct GroupValue: Equatable, Sendable {
        public var start: UInt16
        public var end: UInt16
        public var value: [UInt8]
        public init(start: UInt16, end: UInt16, value: [UInt8]) { self.start = start; self.end = end; self.value = value }
    }

    /// The opcode this PDU is sent with.
    public var opcode: UInt8 {
        switch self {
        case .errorResponse: 0x01
        case .exchangeMTURequest: 0x02
        case .exchangeMTUResponse: 0x03
        case .findInformationRequest: 0x04
        case .findInformationResponse: 0x05
        case .findByTypeValueRequest: 0x06
        case .findByTypeValueResponse: 0x07
        case .readByTypeRequest: 0x08
        case .readByTypeResponse: 0x09
        case .readRequest: 0x0A
        case .readResponse: 0x0B
        case .readBlobRequest: 0x0C
        case .readBlobResponse: 0x0D
        case .readMultipleRequest: 0x0E
        case .readMultipleResponse: 0x0F
        case .readByGroupTypeRequest: 0x10
        case .readByGroupTypeResponse: 0x11
        case .writeRequest: 0x12
        case .writeResponse: 0x13
        case .writeCommand: 0x52
        case .signedWriteCommand: 0xD2
        case .prepareWriteRequest: 0x16
        case .prepareWriteResponse: 0x17
        case .executeWriteRequest: 0x18
        case .executeWriteResponse: 0x19
        case .notification: 0x1B
        case .indication: 0x1D
        case .confirmation: 0x1E
        }
    }

    /// Requests expect exactly one response (or an error response) before the next request.
    public var isRequest: Bool { Self.isRequestOpcode(opcode) }

    static func isRequestOpcode(_ opcode: UInt8) -> Bool {
        switch opcode {
        case 0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20: true
        default: false
        }
    }

    /// The response (or error response) that answers a request with `requestOpcode`.
    public var answers: UInt8? {
        switch self {
        case .errorResponse(let request, _, _): request
        case .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse, .readByTypeResponse, .readResponse,
             .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse, .writeResponse, .prepareWriteResponse,
             .executeWriteResponse:
            opcode - 1
        default: nil
        }
    }

    /// The longest ATT_MTU the box offers or accepts (an attribute value is at most 512 bytes, and
    /// a Read Blob or notification then fits one PDU with its header).
    public static let maximumMTU = 517
    /// The ATT_MTU of every LE link before an exchange.
    public static let defaultMTU = 23
    /// The longest attribute value (Vol 3 Part F 3.2.9).
    public static let maximumValueLength = 512

    // MARK: - Parsing

    public static func parse(_ bytes: [UInt8]) throws(ATTParseError) -> ATTPDU {
        var reader = ATTReader(bytes)
        let opcode = try reader.byte()
        switch opcode {
        case 0x01:
            let request = try reader.byte(), handle = try reader.u16(), code = try reader.byte()
            try reader.end()
            return .errorResponse(request: request, handle: handle, error: ATTErrorCode(rawValue: code))
        case 0x02:
            let mtu = try reader.u16(); try reader.end()
            return .exchangeMTURequest(clientMTU: mtu)
        case 0x03:
            let mtu = try reader.u16(); try reader.end()
            return .exchangeMTUResponse(serverMTU: mtu)
        case 0x04:
            let start = try reader.u16(), end = try reader.u16(); try reader.end()
            return .findInformationRequest(start: start, end: end)
        case 0x05:
            let format = try reader.byte()
            let size: Int
            switch format {
            case 1: size = 2
            case 2: size = 16
            default: throw .badField("find information format \(format)")
            }
            var entries: [HandleUUID] = []
            repeat {
                let handle = try reader.u16()
                guard let type = GATTUUID(attBytes: try reader.bytes(size)) else { throw .badField("uuid") }
                entries.append(HandleUUID(handle: handle, type: type))
            } while !reader.isAtEnd
            return .findInformationResponse(entries)
        case 0x06:
            let start = try reader.u16(), end = try reader.u16(), type = try reader.u16()
            return .findByTypeValueRequest(start: start, end: end, type: type, value: reader.rest())
        case 0x07:
            var ranges: [HandleRange] = []
            repeat {
                ranges.append(HandleRange(start: try reader.u16(), end: try reader.u16()))
            } while !reader.isAtEnd
            return .findByTypeValueResponse(ranges)
        case 0x08, 0x10:
            let start = try reader.u16(), end = try reader.u16()
            guard let type = GATTUUID(attBytes: reader.rest()) else { throw .badLength(opcode: opcode) }
            return opcode == 0x08 ? .readByTypeRequest(start: start, end: end, type: type)
                : .readByGroupTypeRequest(start: start, end: end, type: type)
        case 0x09:
            let length = Int(try reader.byte())
            guard length >= 2 else { throw .badField("read by type entry length \(length)") }
            var entries: [HandleValue] = []
            repeat {
                let handle = try reader.u16()
                entries.append(HandleValue(handle: handle, value: try reader.bytes(length - 2)))
            } while !reader.isAtEnd
            return .readByTypeResponse(entries)
        case 0x0A:
            let handle = try reader.u16(); try reader.end()
            return .readRequest(handle: handle)
        case 0x0B:
            return .readResponse(value: reader.rest())
        case 0x0C:
            let handle = try reader.u16(), offset = try reader.u16(); try reader.end()
            return .readBlobRequest(handle: handle, offset: offset)
        case 0x0D:
            return .readBlobResponse(value: reader.rest())
        case 0x0E:
            var handles: [UInt16] = []
            repeat { handles.append(try reader.u16()) } while !reader.isAtEnd
            guard handles.count >= 2 else { throw .badLength(opcode: opcode) }
            return .readMultipleRequest(handles: handles)
        case 0x0F:
            return .readMultipleResponse(values: reader.rest())
        case 0x11:
            let length = Int(try reader.byte())
            guard length >= 4 else { throw .badField("read by group type entry length \(length)") }
            var groups: [GroupValue] = []
            repeat {
                let start = try reader.u16(), end = try reader.u16()
                groups.append(GroupValue(start: start, end: end, value: try reader.bytes(length - 4)))
            } while !reader.isAtEnd
            return .readByGroupTypeResponse(groups)
        case 0x12, 0x52:
            let handle = try reader.u16()
            let value = reader.rest()
            return opcode == 0x12 ? .writeRequest(handle: handle, value: value) : .writeCommand(handle: handle, value: value)
        case 0x13:
            try reader.end()
            return .writeResponse
        case 0xD2:
            let handle = try reader.u16()
            let rest = reader.rest()
            guard rest.count >= 12 else { throw .badLength(opcode: opcode) }
            return .signedWriteCommand(handle: handle, value: Array(rest.dropLast(12)), signature: Array(rest.suffix(12)))
        case 0x16, 0x17:
            let handle = try reader.u16(), offset = try reader.u16()
            let value = reader.rest()
            return opcode == 0x16 ? .prepareWriteRequest(handle: handle, offset: offset, value: value)
                : .prepareWriteResponse(handle: handle, offset: offset, value: value)
        case 0x18:
            let flags = try reader.byte(); try reader.end()
            guard flags <= 1 else { throw .badField("execute write flags \(flags)") }
            return .executeWriteRequest(commit: flags == 1)
        case 0x19:
            try reader.end()
            return .executeWriteResponse
        case 0x1B, 0x1D:
            let handle = try reader.u16()
            let value = reader.rest()
            return opcode == 0x1B ? .notification(handle: handle, value: value) : .indication(handle: handle, value: value)
        case 0x1E:
            try reader.end()
            return .confirmation
        default:
            throw .unknownOpcode(opcode)
        }
    }

    // MARK: - Encoding

    public func encode() -> [UInt8] {
        var out: [UInt8] = [opcode]
        func u16(_ value: UInt16) { out.append(UInt8(value & 0xFF)); out.append(UInt8(value >> 8)) }
        switch self {
        case .errorResponse(let request, let handle, let error):
            out.append(request); u16(handle); out.append(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            u16(mtu)
        case .findInformationRequest(let start, let end):
            u16(start); u16(end)
        case .findInformationResponse(let entries):
            out.append(entries.first?.type.short != nil ? 1 : 2)
            for entry in entries { u16(entry.handle); out += entry.type.attBytes }
        case .findByTypeValueRequest(let start, let end, let type, let value):
            u16(start); u16(end); u16(type); out += value
        case .findByTypeValueResponse(let ranges):
            for range in ranges { u16(range.start); u16(range.end) }
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            u16(start); u16(end); out += type.attBytes
        case .readByTypeResponse(let entries):
            out.append(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
            for entry in entries { u16(entry.handle); out += entry.value }
        case .readRequest(let handle):
            u16(handle)
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value):
            out += value
        case .readBlobRequest(let handle, let offset):
            u16(handle); u16(offset)
        case .readMultipleRequest(let handles):
            for handle in handles { u16(handle) }
        case .readByGroupTypeResponse(let groups):
            out.append(UInt8(truncatingIfNeeded: 4 + (groups.first?.value.count ?? 0)))
            for group in groups { u16(group.start); u16(group.end); out += group.value }
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
             .notification(let handle, let value), .indication(let handle, let value):
            u16(handle); out += value
        case .signedWriteCommand(let handle, let value, let signature):
            u16(handle); out += value; out += signature
        case .prepareWriteRequest(let handle, let offset, let value), .prepareWriteResponse(let handle, let offset, let value):
            u16(handle); u16(offset); out += value
        case .executeWriteRequest(let commit):
            out.append(commit ? 1 : 0)
        case .writeResponse, .executeWriteResponse, .confirmation:
            break
        }
        return out
    }
}

/// An ATT error code (Vol 3 Part F 3.4.1.1). Application (0x80–0x9F) and common-profile
/// (0xE0–0xFF) codes are kept as their number.
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    public static let prepareQueueFull = ATTErrorCode(rawValue: 0x09)
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)
    public static let valueNotAllowed = ATTErrorCode(rawValue: 0x13)
    /// Vigil's own application error: the peer sends faster than its rate allows.
    public static let rateExceeded = ATTErrorCode(rawValue: 0x80)
    /// Vigil's own application error: the message is larger than the box accepts.
    public static let messageTooLong = ATTErrorCode(rawValue: 0x81)
    /// Common profile error (Core Specification Supplement 1.2): a CCCD written with bits the
    /// characteristic does not support.
    public static let cccdImproperlyConfigured = ATTErrorCode(rawValue: 0xFD)

    public var description: String {
        switch rawValue {
        case 0x01: "invalid handle"
        case 0x02: "read not permitted"
        case 0x03: "write not permitted"
        case 0x04: "invalid PDU"
        case 0x05: "insufficient authentication"
        case 0x06: "request not supported"
        case 0x07: "invalid offset"
        case 0x08: "insufficient authorization"
        case 0x09: "prepare queue full"
        case 0x0A: "attribute not found"
        case 0x0B: "attribute not long"
        case 0x0C: "insufficient encryption key size"
        case 0x0D: "invalid attribute value length"
        case 0x0E: "unlikely error"
        case 0x0F: "insufficient encryption"
        case 0x10: "unsupported group type"
        case 0x11: "insufficient resources"
        case 0x12: "database out of sync"
        case 0x13: "value not allowed"
        case 0x80: "rate exceeded"
        case 0x81: "message too long"
        case 0xFD: "CCCD improperly configured"
        case 0xFE: "procedure already in progress"
        case 0xFF: "out of range"
        default: "error 0x" + String(rawValue, radix: 16).leftPadded(to: 2)
        }
    }
}

/// Why bytes are not an ATT PDU. The opcode is kept where known, so a server can name the
/// request it refuses in its error response.
public enum ATTParseError: Error, Equatable, Sendable {
    case empty
    case unknownOpcode(UInt8)
    case badLength(opcode: UInt8)
    case badField(String)
}

/// Reads little-endian fields from one PDU, throwing instead of reading past the end.
struct ATTReader {
    let bytes: [UInt8]
    var index = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }
    var opcode: UInt8 { bytes.first ?? 0 }

    mutating func byte() throws(ATTParseError) -> UInt8 {
        guard index < bytes.count else { throw bytes.isEmpty ? .empty : .badLength(opcode: opcode) }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func u16() throws(ATTParseError) -> UInt16 {
        let low = try byte(), high = try byte()
        return UInt16(low) | UInt16(high) << 8
    }

    mutating func bytes(_ count: Int) throws(ATTParseError) -> [UInt8] {
        guard count >= 0, bytes.count - index >= count else { throw .badLength(opcode: opcode) }
        defer { index += count }
        return Array(bytes[index ..< index + count])
    }

    mutating func rest() -> [UInt8] {
        defer { index = bytes.count }
        return index < bytes.count ? Array(bytes[index...]) : []
    }

    func end() throws(ATTParseError) {
        guard isAtEnd else { throw .badLength(opcode: opcode) }
    }
}
