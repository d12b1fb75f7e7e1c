/// Why advertising data could not be built.
public enum AdvertisingPayloadError: Error, Equatable, Sendable {
    /// Adding the structure would make the data `length` bytes, over `maximum`.
    case tooLong(length: Int, maximum: Int)
}

/// Legacy advertising data (at most 31 bytes) built from AD structures: `[length][type][data...]`,
/// length = 1 + data.count (Bluetooth Core Vol 3 Part C §11).
///
/// Vigil adverts are non-connectable broadcasts, so they carry no Flags AD: one 16-bit-UUID
/// Service Data structure, `[3 + frame.count][0x16][uuid lo][uuid hi][frame...]`.
public struct AdvertisingPayload: Sendable, Equatable {
    public static let legacyMaximumLength = 31
    /// AD type "Service Data - 16-bit UUID".
    public static let serviceData16Type: UInt8 = 0x16
    /// The bytes a Service Data structure adds around its data: length, type, UUID.
    public static let serviceData16Overhead = 4

    public private(set) var bytes: [UInt8] = []
    /// 31 for legacy advertising; up to 251 for an extended advertisement (signed frames).
    public let maximumLength: Int

    public init(maximumLength: Int = legacyMaximumLength) { self.maximumLength = maximumLength }

    /// Appends one AD structure; throws, leaving the payload unchanged, if it would not fit.
    public mutating func append(type: UInt8, data: some Collection<UInt8>) throws(AdvertisingPayloadError) {
        let length = bytes.count + 2 + data.count
        guard length <= maximumLength else {
            throw .tooLong(length: length, maximum: maximumLength)
        }
        bytes.append(UInt8(1 + data.count))
        bytes.append(type)
        bytes.append(contentsOf: data)
    }

    /// Appends a 16-bit-UUID Service Data structure.
    public mutating func appendServiceData(uuid: UInt16, data: some Collection<UInt8>) throws(AdvertisingPayloadError) {
        try append(type: Self.serviceData16Type,
                   data: [UInt8(truncatingIfNeeded: uuid), UInt8(truncatingIfNeeded: uuid >> 8)] + Array(data))
    }

    /// The advertising data of a Vigil advert: one Service Data structure holding `frame`.
    public static func vigil(frame: [UInt8], uuid: UInt16 = AlertFrame.defaultServiceUUID) throws(AdvertisingPayloadError) -> AdvertisingPayload {
        var payload = AdvertisingPayload()
        try payload.appendServiceData(uuid: uuid, data: frame)
        return payload
    }

    /// The advertising data of an extended Vigil advert (a signed frame, docs/signed-frames.md):
    /// one Service Data structure, up to 251 bytes in all.
    public static func signedVigil(frame: [UInt8], uuid: UInt16 = AlertFrame.defaultServiceUUID) throws(AdvertisingPayloadError) -> AdvertisingPayload {
        var payload = AdvertisingPayload(maximumLength: HCICommand.maximumExtendedAdvertisingData)
        try payload.appendServiceData(uuid: uuid, data: frame)
        return payload
    }

    /// The data of the first 16-bit-UUID Service Data structure for `uuid` in raw advertising data
    /// (advertising and scan response data, legacy or extended), without the UUID; nil if none.
    ///
    /// Never traps: the walk stops at a zero length (the rest is padding) or at a structure whose
    /// length runs past the end; a Service Data structure too short to hold a UUID is skipped.
    public static func serviceData(uuid: UInt16, in data: [UInt8]) -> [UInt8]? {
        var i = 0
        while i < data.count {
            let length = Int(data[i])
            guard length > 0, length <= data.count - i - 1 else { return nil }
            let type = data[i + 1]
            if type == serviceData16Type, length >= 3,
               UInt16(data[i + 2]) | UInt16(data[i + 3]) << 8 == uuid {
                return Array(data[(i + 4)..<(i + 1 + length)])
            }
            i += 1 + length
        }
        return nil
    }
}

/// A Vigil advert's frame: a box's rotating presence identifier, or an authenticated alert frame.
public enum VigilAdvertisement: Sendable, Equatable {
    /// The 16-byte rotating identifier (see `PresenceIdentity`). Presence frames are not tagged.
    case presence([UInt8])
    case alert(AlertFrame)

    /// byte 0 (version 1, type 0) and the identifier.
    public static let presenceFrameLength = 17
    public static let identifierLength = 16

    /// The frame bytes. Alerts are tagged with `key` (which presence frames do not need).
    public func encode(key: AlertFrameKey, uuid: UInt16 = AlertFrame.defaultServiceUUID) throws(AlertFrameError) -> [UInt8] {
        switch self {
        case .presence(let identifier): try Self.presenceFrame(identifier: identifier)
        case .alert(let frame): try frame.encode(key: key, uuid: uuid)
        }
    }

    /// `[0x10] + identifier`.
    public static func presenceFrame(identifier: [UInt8]) throws(AlertFrameError) -> [UInt8] {
        guard identifier.count == identifierLength else { throw .badIdentifierLength(identifier.count) }
        return [AlertFrame.version << 4] + identifier
    }

    /// Decodes one frame (the Service Data after the UUID); alert frames are authenticated.
    public static func decode(frame: [UInt8], key: AlertFrameKey,
                              uuid: UInt16 = AlertFrame.defaultServiceUUID) throws(AlertFrameError) -> VigilAdvertisement {
        guard let first = frame.first else { throw .truncated(length: 0, needed: 1) }
        guard first >> 4 == AlertFrame.version else { throw .unsupportedVersion(first >> 4) }
        guard first & 0x0F == 0 else { return .alert(try AlertFrame.decode(frame, key: key, uuid: uuid)) }
        guard frame.count >= presenceFrameLength else {
            throw .truncated(length: frame.count, needed: presenceFrameLength)
        }
        guard frame.count == presenceFrameLength else {
            throw .trailingBytes(length: frame.count, expected: presenceFrameLength)
        }
        return .presence(Array(frame[1...]))
    }

    /// Finds and decodes the Vigil frame in raw advertising data: nil when the advert carries no
    /// Service Data for `uuid` (someone else's advert), a typed error when it carries a bad frame.
    public static func decode(advertisingData: [UInt8], key: AlertFrameKey,
                              uuid: UInt16 = AlertFrame.defaultServiceUUID) throws(AlertFrameError) -> VigilAdvertisement? {
        guard let frame = AdvertisingPayload.serviceData(uuid: uuid, in: advertisingData) else { return nil }
        return try decode(frame: frame, key: key, uuid: uuid)
    }
}
