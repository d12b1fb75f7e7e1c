/// One HCI command as the host sends it (Bluetooth Core Vol 4 Part E §5.4.1, §7): an opcode
/// (OGF << 10 | OCF) and its parameters, little-endian throughout.
public struct HCICommand: Sendable, Equatable, CustomStringConvertible {
    public let opcode: UInt16
    public let parameters: [UInt8]
    /// What the command is for, for logs and errors ("LE Set Scan Enable").
    public let name: String

    public init(opcode: UInt16, name: String, parameters: [UInt8] = []) {
        self.opcode = opcode
        self.name = name
        self.parameters = parameters
    }

    /// The packet written to the socket: type 0x01 (command), opcode, length, parameters.
    public var packet: [UInt8] {
        [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(truncatingIfNeeded: parameters.count)] + parameters
    }

    public var description: String { "\(name) (0x\(String(opcode, radix: 16, uppercase: false)))" }

    // MARK: Opcodes Vigil uses

    public enum Opcode {
        public static let setEventMask: UInt16 = 0x0C01
        public static let reset: UInt16 = 0x0C03
        public static let readLocalVersion: UInt16 = 0x1001
        public static let readBDAddress: UInt16 = 0x1009
        public static let leSetEventMask: UInt16 = 0x2001
        public static let leReadLocalFeatures: UInt16 = 0x2003
        public static let leSetRandomAddress: UInt16 = 0x2005
        public static let leSetAdvertisingParameters: UInt16 = 0x2006
        public static let leSetAdvertisingData: UInt16 = 0x2008
        public static let leSetScanResponseData: UInt16 = 0x2009
        public static let leSetAdvertiseEnable: UInt16 = 0x200A
        public static let leSetScanParameters: UInt16 = 0x200B
        public static let leSetScanEnable: UInt16 = 0x200C
        public static let leSetAdvertisingSetRandomAddress: UInt16 = 0x2035
        public static let leSetExtendedAdvertisingParameters: UInt16 = 0x2036
        public static let leSetExtendedAdvertisingData: UInt16 = 0x2037
        public static let leSetExtendedScanResponseData: UInt16 = 0x2038
        public static let leSetExtendedAdvertisingEnable: UInt16 = 0x2039
        public static let leReadMaximumAdvertisingDataLength: UInt16 = 0x203A
        public static let leSetExtendedScanParameters: UInt16 = 0x2041
        public static let leSetExtendedScanEnable: UInt16 = 0x2042
    }

    // MARK: Controller setup

    public static let reset = HCICommand(opcode: Opcode.reset, name: "Reset")
    public static let readBDAddress = HCICommand(opcode: Opcode.readBDAddress, name: "Read BD_ADDR")
    public static let leReadLocalFeatures = HCICommand(opcode: Opcode.leReadLocalFeatures, name: "LE Read Local Supported Features")
    /// How many bytes of advertising data the controller's extended advertising carries (31 to 1650).
    public static let leReadMaximumAdvertisingDataLength = HCICommand(opcode: Opcode.leReadMaximumAdvertisingDataLength,
                                                                      name: "LE Read Maximum Advertising Data Length")

    /// The controller's default events plus LE Meta (bit 61), which carries advertising reports
    /// and is off after a reset.
    public static let eventMask: UInt64 = 0x0000_1FFF_FFFF_FFFF | 1 << 61
    public static func setEventMask(_ mask: UInt64 = eventMask) -> HCICommand {
        HCICommand(opcode: Opcode.setEventMask, name: "Set Event Mask", parameters: le(mask, bytes: 8))
    }

    /// After someone else reset a controller Vigil shares with the kernel: every event the
    /// kernel and bluetoothd use (BlueZ's own mask, which includes LE Meta).
    public static let fullEventMask: UInt64 = 0x3DBF_F807_FFFB_FFFF
    /// ... and every LE event defined up to Bluetooth 5.2 (bits 0–19).
    public static let fullLEEventMask: UInt64 = 0x000F_FFFF

    /// LE events: the defaults (bits 0–4, with Advertising Report = bit 1) and Extended
    /// Advertising Report (bit 12).
    public static let leEventMask: UInt64 = 0x1F | 1 << 12
    public static func leSetEventMask(_ mask: UInt64 = leEventMask) -> HCICommand {
        HCICommand(opcode: Opcode.leSetEventMask, name: "LE Set Event Mask", parameters: le(mask, bytes: 8))
    }

    // MARK: Scanning

    /// Legacy scanning. Intervals in units of 0.625 ms (4...16384); window ≤ interval.
    /// `randomAddress`: an active scan's SCAN_REQ carries the rotating random address rather
    /// than the controller's fixed one (a passive scan transmits nothing).
    public static func leSetScanParameters(active: Bool, intervalUnits: UInt16, windowUnits: UInt16,
                                           randomAddress: Bool = false) -> HCICommand {
        HCICommand(opcode: Opcode.leSetScanParameters, name: "LE Set Scan Parameters",
                   parameters: [active ? 1 : 0] + le(intervalUnits) + le(windowUnits) + [randomAddress ? 1 : 0, 0x00])
    }

    /// Duplicate filtering stays off: every report counts (RSSI over time is the point).
    public static func leSetScanEnable(_ enable: Bool) -> HCICommand {
        HCICommand(opcode: Opcode.leSetScanEnable, name: "LE Set Scan Enable", parameters: [enable ? 1 : 0, 0x00])
    }

    /// Extended scanning on the LE 1M PHY (which legacy advertisers use).
    public static func leSetExtendedScanParameters(active: Bool, intervalUnits: UInt16, windowUnits: UInt16,
                                                   randomAddress: Bool = false) -> HCICommand {
        HCICommand(opcode: Opcode.leSetExtendedScanParameters, name: "LE Set Extended Scan Parameters",
                   parameters: [randomAddress ? 1 : 0, 0x00, 0x01, active ? 1 : 0] + le(intervalUnits) + le(windowUnits))
    }

    public static func leSetExtendedScanEnable(_ enable: Bool) -> HCICommand {
        HCICommand(opcode: Opcode.leSetExtendedScanEnable, name: "LE Set Extended Scan Enable",
                   parameters: [enable ? 1 : 0, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    // MARK: Advertising (legacy)

    /// `address` as printed (most significant byte first); sent least significant first.
    public static func leSetRandomAddress(_ address: UInt64) -> HCICommand {
        HCICommand(opcode: Opcode.leSetRandomAddress, name: "LE Set Random Address", parameters: le(address, bytes: 6))
    }

    /// Undirected advertising on all three channels: non-connectable (ADV_NONCONN_IND) from the
    /// random address, or connectable and scannable (ADV_IND) from the controller's public address,
    /// the box's stable identity that phones keep a chat with and the kernel's ATT listener is
    /// bound to. Interval in units of 0.625 ms (≥ 160 = 100 ms for non-connectable).
    public static func leSetAdvertisingParameters(intervalUnits: UInt16, connectable: Bool = false) -> HCICommand {
        HCICommand(opcode: Opcode.leSetAdvertisingParameters, name: "LE Set Advertising Parameters",
                   parameters: le(intervalUnits) + le(intervalUnits) + (connectable ? [0x00, 0x00] : [0x03, 0x01]) + [0x00]
                       + [UInt8](repeating: 0, count: 6) + [0x07, 0x00])
    }

    /// Up to 31 bytes of AD structures, zero-padded to the field's 31 bytes.
    public static func leSetAdvertisingData(_ data: [UInt8]) -> HCICommand {
        let used = Array(data.prefix(31))
        return HCICommand(opcode: Opcode.leSetAdvertisingData, name: "LE Set Advertising Data",
                          parameters: [UInt8(used.count)] + used + [UInt8](repeating: 0, count: 31 - used.count))
    }

    /// What the box answers a scan request with (ADV_IND is scannable): up to 31 bytes, padded.
    public static func leSetScanResponseData(_ data: [UInt8]) -> HCICommand {
        let used = Array(data.prefix(31))
        return HCICommand(opcode: Opcode.leSetScanResponseData, name: "LE Set Scan Response Data",
                          parameters: [UInt8(used.count)] + used + [UInt8](repeating: 0, count: 31 - used.count))
    }

    public static func leSetAdvertiseEnable(_ enable: Bool) -> HCICommand {
        HCICommand(opcode: Opcode.leSetAdvertiseEnable, name: "LE Set Advertise Enable", parameters: [enable ? 1 : 0])
    }

    // MARK: Advertising (extended commands, legacy PDUs)

    /// Advertising set 0 with legacy PDUs, so phones that only understand legacy advertising
    /// still hear it: non-connectable (properties bit 4 only) from the set's random address, or
    /// ADV_IND (bits 0, 1 and 4: connectable, scannable, legacy) from the public address. With
    /// `extendedPDU`, a non-connectable, non-scannable extended advertisement (properties 0):
    /// ADV_EXT_IND on the primary channels pointing to AUX_ADV_IND, which carries up to 251 bytes
    /// (signed frames, docs/signed-frames.md).
    public static func leSetExtendedAdvertisingParameters(intervalUnits: UInt32, connectable: Bool = false,
                                                          extendedPDU: Bool = false) -> HCICommand {
        let interval = le(UInt64(intervalUnits), bytes: 3)
        let properties: UInt16 = extendedPDU ? 0x0000 : connectable ? 0x0013 : 0x0010
        return HCICommand(opcode: Opcode.leSetExtendedAdvertisingParameters, name: "LE Set Extended Advertising Parameters",
                          parameters: [0x00] + le(properties) + interval + interval
                              + [0x07, connectable ? 0x00 : 0x01, 0x00]
                              + [UInt8](repeating: 0, count: 6) + [0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00])
    }

    public static func leSetAdvertisingSetRandomAddress(_ address: UInt64) -> HCICommand {
        HCICommand(opcode: Opcode.leSetAdvertisingSetRandomAddress, name: "LE Set Advertising Set Random Address",
                   parameters: [0x00] + le(address, bytes: 6))
    }

    /// The whole data in one operation (0x03 = complete), no fragmentation (0x01): at most 251
    /// bytes (31 with legacy PDUs, which the caller keeps to).
    public static func leSetExtendedAdvertisingData(_ data: [UInt8]) -> HCICommand {
        let used = Array(data.prefix(maximumExtendedAdvertisingData))
        return HCICommand(opcode: Opcode.leSetExtendedAdvertisingData, name: "LE Set Extended Advertising Data",
                          parameters: [0x00, 0x03, 0x01, UInt8(used.count)] + used)
    }

    /// Set 0's scan response in one operation (as its advertising data).
    public static func leSetExtendedScanResponseData(_ data: [UInt8]) -> HCICommand {
        let used = Array(data.prefix(31))
        return HCICommand(opcode: Opcode.leSetExtendedScanResponseData, name: "LE Set Extended Scan Response Data",
                          parameters: [0x00, 0x03, 0x01, UInt8(used.count)] + used)
    }

    public static func leSetExtendedAdvertisingEnable(_ enable: Bool) -> HCICommand {
        HCICommand(opcode: Opcode.leSetExtendedAdvertisingEnable, name: "LE Set Extended Advertising Enable",
                   parameters: enable ? [0x01, 0x01, 0x00, 0x00, 0x00, 0x00] : [0x00, 0x00])
    }

    /// What one LE Set Extended Advertising Data command carries.
    public static let maximumExtendedAdvertisingData = 251

    static func le(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le(_ value: UInt64, bytes: Int) -> [UInt8] {
        (0..<bytes).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * $0)) }
    }
}
