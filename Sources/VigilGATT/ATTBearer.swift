/// Which role of an ATT bearer a PDU from the peer is for. On one LE link both sides may be
/// server and client at once (a phone reads the box's chat service while the box reads the
/// phone's): requests, commands and confirmations go to this side's server; responses,
/// notifications and indications to its client.
public enum ATTRole: Sendable, Equatable {
    case server
    case client

    public static func of(opcode: UInt8) -> ATTRole {
        switch opcode {
        // Error, every response, notification, indication, and the newer multiple-variable responses.
        case 0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x1B, 0x1D, 0x21, 0x23: .client
        default: .server
        }
    }
}
