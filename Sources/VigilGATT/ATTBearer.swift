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

/// One ATT bearer (one LE link's ATT channel) with both roles: PDUs from the peer go to the
/// server or the client by opcode, and one MTU serves both (Vol 3 Part F 3.4.2: whichever side
/// exchanged it, the ATT_MTU is the link's). A box without a server role (a central that only
/// reads a sensor) has none: requests then get Request Not Supported.
public struct ATTBearer: Sendable {
    public var server: GATTServer?
    public var client = GATTClient()

    public enum Output: Equatable, Sendable {
        case server(GATTServerOutput)
        case client(GATTClientOutput)
    }

    public init(server: GATTServer?) { self.server = server }

    /// The link's ATT_MTU.
    public var mtu: Int { client.mtu }

    public mutating func receive(_ bytes: [UInt8]) -> [Output] {
        switch ATTRole.of(opcode: bytes.first ?? 0) {
        case .server:
            guard var role = server else {
                guard let opcode = bytes.first else { return [.server(.violation("an empty ATT PDU"))] }
                // Commands and confirmations are never answered.
                if opcode & 0x40 != 0 || opcode == 0x1E { return [.server(.violation("a PDU for a server this link does not have"))] }
                return [.server(.send(ATTPDU.errorResponse(request: opcode, handle: 0, error: .requestNotSupported).encode()))]
            }
            let outputs = role.receive(bytes)
            for case .mtuChanged(let agreed) in outputs { client.useMTU(agreed) }
            server = role
            return outputs.map { .server($0) }
        case .client:
            let outputs = client.receive(bytes)
            for case .mtuChanged(let agreed) in outputs { server?.useMTU(agreed) }
            return outputs.map { .client($0) }
        }
    }

    /// Starts a client procedure (see `GATTClient.start`).
    public mutating func start(_ procedure: GATTClient.Procedure) -> (id: Int, outputs: [GATTClientOutput])? {
        client.start(procedure)
    }
}
