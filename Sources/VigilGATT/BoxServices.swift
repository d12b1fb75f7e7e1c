/// The services a Vigil box offers over GATT (README "Connections"), and their UUIDs.
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
}
