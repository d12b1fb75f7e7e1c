/// The GAEN advertisement (Exposure Notification Bluetooth Specification v1.2): service data
/// for the 16-bit UUID 0xFD6F carrying the RPI (16 bytes) then the AEM (4 bytes).
///
/// `advertisingData()` builds what the box advertises when the operator lets phones treat it as
/// an EN device; `init?(advertisingData:)` recognises such an advertisement in a scan report's
/// raw AD bytes. The parser never traps: malformed structures make it return nil.
public struct ExposureAdvertisement: Hashable, Sendable, CustomStringConvertible {
    /// The Exposure Notification Service UUID, registered with the Bluetooth SIG.
    public static let serviceUUID: UInt16 = 0xFD6F
    /// Bytes of service data after the UUID: RPI 16 + AEM 4.
    public static let serviceDataCount = 20

    static let flagsType: UInt8 = 0x01
    static let completeUUID16ListType: UInt8 = 0x03
    static let serviceData16Type: UInt8 = 0x16
    /// LE General Discoverable (the specification requires bit 1) plus the simultaneous
    /// LE/BR-EDR bits phones set: 0x1A, the value seen from GAEN devices.
    static let flags: UInt8 = 0x1A

    public let identifier: RollingProximityIdentifier
    public let encryptedMetadata: AssociatedEncryptedMetadata

    public init(identifier: RollingProximityIdentifier, encryptedMetadata: AssociatedEncryptedMetadata) {
        self.identifier = identifier
        self.encryptedMetadata = encryptedMetadata
    }

    /// From the 20 bytes of service data that follow the UUID; nil unless exactly 20.
    public init?(serviceData: some Collection<UInt8>) {
        guard serviceData.count == Self.serviceDataCount else { return nil }
        let bytes = Array(serviceData)
        guard let rpi = RollingProximityIdentifier(bytes[0..<16]),
              let aem = AssociatedEncryptedMetadata(bytes[16..<20]) else { return nil }
        self.init(identifier: rpi, encryptedMetadata: aem)
    }

    /// Finds the 0xFD6F service data in raw advertising data (a sequence of length-type-value
    /// structures). Nil if absent, of the wrong length, or if the structures are malformed
    /// before it. A Complete-UUID-list entry is not required: some scanners strip it.
    public init?(advertisingData data: some Collection<UInt8>) {
        let bytes = Array(data)
        var i = 0
        while i < bytes.count {
            let length = Int(bytes[i])
            // A zero length ends the significant part (the rest is padding).
            if length == 0 { return nil }
            guard i + 1 + length <= bytes.count else { return nil }
            let type = bytes[i + 1]
            let body = bytes[(i + 2)..<(i + 1 + length)]
            if type == Self.serviceData16Type, body.count >= 2,
               UInt16(body[body.startIndex]) | UInt16(body[body.startIndex + 1]) << 8 == Self.serviceUUID {
                self.init(serviceData: body.dropFirst(2))
                return
            }
            i += 1 + length
        }
        return nil
    }

    /// RPI ‖ AEM: the 20 bytes after the UUID.
    public var serviceData: [UInt8] { identifier.bytes + encryptedMetadata.bytes }

    /// The full advertising data: Flags (optional), the Complete 16-bit UUID list with 0xFD6F
    /// (which must precede the service data), then the service data — 31 bytes with flags,
    /// exactly the legacy advertising maximum.
    public func advertisingData(includeFlags: Bool = true) -> [UInt8] {
        let uuid = [UInt8(Self.serviceUUID & 0xFF), UInt8(Self.serviceUUID >> 8)]
        var out: [UInt8] = includeFlags ? [2, Self.flagsType, Self.flags] : []
        out += [3, Self.completeUUID16ListType] + uuid
        out += [UInt8(3 + Self.serviceDataCount), Self.serviceData16Type] + uuid + serviceData
        return out
    }

    public var description: String { "EN \(identifier.hex) aem \(encryptedMetadata.hex)" }
}
