/// The services a Vigil box offers over GATT (docs/connections.md "Connections"), and their UUIDs.
public enum BoxServices {
    /// BTFinder's chat: TX notifies (box → phone), RX is written (phone → box).
    public static let chat = GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!
    public static let chatTX = GATTUUID("7E57C001-2C8F-4F3C-9F91-8577E1891234")!
    public static let chatRX = GATTUUID("7E57C002-2C8F-4F3C-9F91-8577E1891234")!
    /// Nordic UART Service, which generic phone apps speak: RX written, TX notified.
    public static let uart = GATTUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    public static let uartRX = GATTUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
    public static let uartTX = GATTUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
    /// Vigil's message service for EchoAlert-style JSON messages (id, category, content): one
    /// characteristic written by phones and notified by the box. EchoAlert's own UUIDs are not
    /// published; these are Vigil's (random, version 4).
    public static let messages = GATTUUID("9F3B0001-5A1C-4C8E-8D2F-6B1E0C7A4D10")!
    public static let message = GATTUUID("9F3B0002-5A1C-4C8E-8D2F-6B1E0C7A4D10")!

    /// The longest chat or UART message the box takes (in parts, `MessageFrames`).
    public static let maximumChatBytes = 1_024
    /// The longest JSON message.
    public static let maximumMessageBytes = 4_096

    /// The box's database: GAP (with `name`), GATT, chat, UART, messages.
    public static func database(name: String) -> GATTDatabase {
        GATTDatabase(deviceName: name, services: [
            GATTService(uuid: chat, characteristics: [
                GATTCharacteristic(uuid: chatTX, properties: [.notify], maximumWriteLength: 0),
                GATTCharacteristic(uuid: chatRX, properties: [.write, .writeWithoutResponse]),
            ]),
            GATTService(uuid: uart, characteristics: [
                GATTCharacteristic(uuid: uartRX, properties: [.write, .writeWithoutResponse]),
                GATTCharacteristic(uuid: uartTX, properties: [.notify], maximumWriteLength: 0),
            ]),
            GATTService(uuid: messages, characteristics: [
                GATTCharacteristic(uuid: message, properties: [.write, .notify]),
            ]),
        ])
    }

    /// The connectable advertisement (31 bytes, all used): flags (LE General Discoverable, no
    /// BR/EDR), the chat service's 128-bit UUID, which BTFinder filters its scan on, and the
    /// first 8 bytes of `name` as a shortened name when longer (whole otherwise); phones that
    /// scan actively get the whole name from `scanResponse`.
    public static func connectableAdvertisement(name: String) -> [UInt8] {
        [0x02, 0x01, 0x06, 0x11, 0x07] + chat.bytes128.reversed() + nameStructure(name, room: 31 - 21)
    }

    /// The scan response: the complete name (cut to 29 bytes, marked shortened, if longer).
    public static func scanResponse(name: String) -> [UInt8] {
        nameStructure(name, room: 31)
    }

    /// A name AD structure within `room` bytes: complete (0x09), or cut on a character boundary
    /// and marked shortened (0x08); nothing for an empty name.
    static func nameStructure(_ name: String, room: Int) -> [UInt8] {
        var bytes = Array(name.utf8)
        guard !bytes.isEmpty else { return [] }
        if bytes.count <= room - 2 { return [UInt8(bytes.count + 1), 0x09] + bytes }
        bytes = Array(bytes.prefix(room - 2))
        while !bytes.isEmpty, String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }
        return bytes.isEmpty ? [] : [UInt8(bytes.count + 1), 0x08] + bytes
    }
}
