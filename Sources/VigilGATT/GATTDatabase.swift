/// What a characteristic lets a peer do (the properties byte of its declaration, Vol 3 Part G 3.3.1.1).
public struct GATTProperties: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let broadcast = GATTProperties(rawValue: 0x01)
    public static let read = GATTProperties(rawValue: 0x02)
    public static let writeWithoutResponse = GATTProperties(rawValue: 0x04)
    public static let write = GATTProperties(rawValue: 0x08)
    public static let notify = GATTProperties(rawValue: 0x10)
    public static let indicate = GATTProperties(rawValue: 0x20)
    public static let signedWrite = GATTProperties(rawValue: 0x40)
    public static let extended = GATTProperties(rawValue: 0x80)
}

/// A characteristic the box serves. Values the box serves are fixed (`value`, for reads);
/// what peers write goes to the application as `GATTServerOutput.written`, and what the box
/// sends goes out as notifications or indications.
public struct GATTCharacteristic: Sendable {
    public var uuid: GATTUUID
    public var properties: GATTProperties
    /// What a read returns (only with `.read`).
    public var value: [UInt8]
    /// The longest value a peer may write, at most 512 (ATT's limit).
    public var maximumWriteLength: Int

    public init(uuid: GATTUUID, properties: GATTProperties, value: [UInt8] = [], maximumWriteLength: Int = ATTPDU.maximumValueLength) {
        self.uuid = uuid
        self.properties = properties
        self.value = value
        self.maximumWriteLength = min(max(0, maximumWriteLength), ATTPDU.maximumValueLength)
    }
}

public struct GATTService: Sendable {
    public var uuid: GATTUUID
    public var characteristics: [GATTCharacteristic]
    public init(uuid: GATTUUID, characteristics: [GATTCharacteristic]) {
        self.uuid = uuid
        self.characteristics = characteristics
    }
}

/// The attribute table of a GATT server, built once from services: handles from 1, in order; a
/// service declaration, then per characteristic its declaration, its value and (for notify or
/// indicate) its Client Characteristic Configuration descriptor. GAP (device name, appearance) and
/// GATT (service changed) come first, as every GATT server has them.
///
/// Characteristics are numbered in the order given (GAP's and GATT's first), and a server's
/// outputs name them by that number (`characteristicIndex(of:in:)` finds one).
public struct GATTDatabase: Sendable {
    public enum Role: Sendable, Equatable {
        case serviceDeclaration(end: UInt16)
        case characteristicDeclaration
        case value(characteristic: Int)
        case clientConfiguration(characteristic: Int)
    }

    public struct Attribute: Sendable {
        public let handle: UInt16
        public let type: GATTUUID
        public let value: [UInt8]
        public let role: Role
    }

    public struct Entry: Sendable {
        public let uuid: GATTUUID
        public let service: GATTUUID
        public let properties: GATTProperties
        public let valueHandle: UInt16
        public let configurationHandle: UInt16?
        public let maximumWriteLength: Int
    }

    public private(set) var attributes: [Attribute] = []
    public private(set) var characteristics: [Entry] = []

    /// A database of `services` after GAP (with `deviceName`) and GATT.
    public init(deviceName: String, appearance: UInt16 = 0, services: [GATTService]) {
        let gap = GATTService(uuid: .genericAccess, characteristics: [
            GATTCharacteristic(uuid: .deviceName, properties: .read, value: Array(deviceName.utf8.prefix(248))),
            GATTCharacteristic(uuid: .appearance, properties: .read, value: [UInt8(appearance & 0xFF), UInt8(appearance >> 8)]),
        ])
        // Service Changed: the database never changes while the box runs, but clients that cache
        // (phones) expect the characteristic, and a new version of the box may serve more.
        let gatt = GATTService(uuid: .genericAttribute, characteristics: [
            GATTCharacteristic(uuid: .serviceChanged, properties: .indicate, maximumWriteLength: 0),
        ])
        var handle: UInt16 = 1
        for service in [gap, gatt] + services {
            let start = handle
            let count = service.characteristics.reduce(1) { $0 + 2 + ($1.properties.isDisjoint(with: [.notify, .indicate]) ? 0 : 1) }
            let end = start + UInt16(count - 1)
            attributes.append(Attribute(handle: start, type: .primaryService, value: service.uuid.attBytes, role: .serviceDeclaration(end: end)))
            handle += 1
            for characteristic in service.characteristics {
                let index = characteristics.count
                let valueHandle = handle + 1
                let declaration = [characteristic.properties.rawValue, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)] + characteristic.uuid.attBytes
                attributes.append(Attribute(handle: handle, type: .characteristic, value: declaration, role: .characteristicDeclaration))
                attributes.append(Attribute(handle: valueHandle, type: characteristic.uuid, value: characteristic.value, role: .value(characteristic: index)))
                handle += 2
                var configuration: UInt16?
                if !characteristic.properties.isDisjoint(with: [.notify, .indicate]) {
                    configuration = handle
                    attributes.append(Attribute(handle: handle, type: .clientConfiguration, value: [0, 0], role: .clientConfiguration(characteristic: index)))
                    handle += 1
                }
                characteristics.append(Entry(uuid: characteristic.uuid, service: service.uuid, properties: characteristic.properties,
                                             valueHandle: valueHandle, configurationHandle: configuration,
                                             maximumWriteLength: characteristic.maximumWriteLength))
            }
        }
    }

    /// The attribute with `handle`, if any (handles are dense from 1).
    public func attribute(_ handle: UInt16) -> Attribute? {
        let index = Int(handle) - 1
        return index >= 0 && index < attributes.count ? attributes[index] : nil
    }

    /// The attributes with handles in start...end (in order).
    func attributes(in start: UInt16, _ end: UInt16) -> ArraySlice<Attribute> {
        let low = max(Int(start) - 1, 0), high = min(Int(end), attributes.count)
        return low < high ? attributes[low ..< high] : []
    }

    /// The number of the characteristic `uuid` in `service`.
    public func characteristicIndex(of uuid: GATTUUID, in service: GATTUUID) -> Int? {
        characteristics.firstIndex { $0.uuid == uuid && $0.service == service }
    }
}
