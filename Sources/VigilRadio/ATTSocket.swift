internal import CBlueZ
import VigilEvents
import VigilSystem
#if canImport(Glibc)
import Glibc
#endif

// Every L2CAP call Vigil makes is in this file: the kernel's ATT fixed channel (CID 4) on LE
// links. Each is wrapped once: a -1 becomes an `HCIError` with the operation, the address and errno.

/// An LE device address with its type (public or random), as L2CAP needs both.
public struct LEAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable { case `public`, random }
    /// As printed (most significant byte first).
    public let value: UInt64
    public let kind: Kind

    public init(value: UInt64, kind: Kind) {
        self.value = value & 0xFFFF_FFFF_FFFF
        self.kind = kind
    }

    /// "AA:BB:CC:DD:EE:FF" with an optional "/random" or "/public" (public when absent).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let value = parseAddress(String(first)) else { return nil }
        let kind = parts.count == 2 ? Kind(rawValue: String(parts[1]).lowercased()) : .public
        guard let kind else { return nil }
        self.init(value: value, kind: kind)
    }

    public var description: String { formatAddress(value) + (kind == .random ? "/random" : "") }

    /// A public address, or a random one that is static (its two top bits set): an address a
    /// device keeps, which a bond can name. Resolvable and non-resolvable private addresses
    /// change; the kernel refuses keys for them.
    public var isIdentity: Bool { kind == .public || value >> 46 == 0b11 }

    /// bdaddr_t order (least significant first).
    var bytes: [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }
    var type: UInt8 { kind == .public ? UInt8(BDADDR_LE_PUBLIC) : UInt8(BDADDR_LE_RANDOM) }

    init(bytes: [UInt8], type: UInt8) {
        self.init(value: bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, kind: type == UInt8(BDADDR_LE_RANDOM) ? .random : .public)
    }
}

/// One L2CAP socket on the ATT channel: a listener that accepts LE links peers open to this
/// adapter, or one link. Non-blocking; closed exactly once (`close()` or when released). One read
/// is one ATT PDU.
public final class ATTSocket {
    public let fd: Int32
    /// The peer, for a link.
    public let peer: LEAddress?
    private var isOpen = true

    /// The largest PDU read whole; ATT's largest MTU is 517, so anything longer is a peer
    /// breaking the protocol (`Received.truncated`).
    public static let receiveCapacity = 1_024

    private init(fd: Int32, peer: LEAddress?) {
        self.fd = fd
        self.peer = peer
    }

    deinit { close() }

    public func close() {
        guard isOpen else { return }
        isOpen = false
        _ = Glibc.close(fd)
    }

    /// Listens for LE links to the adapter with address `local` (bluetoothd, where it runs, owns
    /// this channel: EADDRINUSE then).
    public static func listen(on local: LEAddress, backlog: Int32 = 4) throws(HCIError) -> ATTSocket {
        let bytes = local.bytes
        let fd = try hci("open the ATT channel of", local.description, { bytes.withUnsafeBufferPointer { cvigil_att_socket($0.baseAddress, local.type) } })
        let socket = ATTSocket(fd: fd, peer: nil)
        _ = try hci("listen on the ATT channel of", local.description, { Glibc.listen(fd, backlog) })
        return socket
    }

    /// Starts a link from the adapter `local` to `peer` at security low; the socket turns
    /// writable when the link is up or failed (`connectionError`). Encryption is asked for once
    /// it is up (`startEncryption`).
    public static func connect(from local: LEAddress, to peer: LEAddress) throws(HCIError) -> ATTSocket {
        let localBytes = local.bytes, peerBytes = peer.bytes
        let fd = try hci("open the ATT channel of", local.description, { localBytes.withUnsafeBufferPointer { cvigil_att_socket($0.baseAddress, local.type) } })
        let socket = ATTSocket(fd: fd, peer: peer)
        let connecting = ErrnoCall.negativeFails { peerBytes.withUnsafeBufferPointer { cvigil_att_connect(fd, $0.baseAddress, peer.type) } }
        if case .failure(let e) = connecting, e != .inProgress {
            throw HCIError(operation: "connect to", adapter: peer.description, errno: e)
        }
        return socket
    }

    /// A link a peer opened; nil when none is waiting.
    public func accept() throws(HCIError) -> ATTSocket? {
        var bytes = [UInt8](repeating: 0, count: 6)
        var type: UInt8 = 0
        let connection: Int32
        switch ErrnoCall.negativeFails({ bytes.withUnsafeMutableBufferPointer { cvigil_att_accept(fd, $0.baseAddress, &type) } }) {
        case .success(let accepted): connection = accepted
        case .failure(let e) where e == .wouldBlock || e == .interrupted || e.rawValue == ECONNABORTED: return nil
        case .failure(let e): throw HCIError(operation: "accept on the ATT channel", adapter: "-", errno: e)
        }
        return ATTSocket(fd: connection, peer: LEAddress(bytes: bytes, type: type))
    }

    /// Nil once a link started by `connect` is up; the reason it failed otherwise.
    public func connectionError() -> Errno? {
        let value = cvigil_att_error(fd)
        return value == 0 ? nil : Errno(rawValue: value)
    }

    /// Asks the kernel to encrypt a link that is up (pairing first when it holds no key for the
    /// peer). True: under way, the socket turns writable again when it is done (or fails);
    /// false: nothing started (already encrypted, or the kernel cannot: read `encryption()`).
    ///
    /// Why not at connect: the box reads the level it got with `encryption()` instead of trusting
    /// the option, and a link at low that cannot be encrypted is still a link (an unbonded
    /// sensor). Either way Debian's 6.1 kernel BUGs when the socket of a link whose encryption
    /// failed is closed (list corruption in hci_chan_del): `KernelBondSupport`.
    public func startEncryption() throws(HCIError) -> Bool {
        switch ErrnoCall.negativeFails({ cvigil_att_raise_security(fd, UInt8(BT_SECURITY_MEDIUM)) }) {
        case .success: return true
        case .failure(.invalid): return false
        case .failure(let e): throw HCIError(operation: "ask for encryption on the link to", adapter: peer?.description ?? "-", errno: e)
        }
    }

    /// Whether the link is encrypted now, and with a key of how many bytes (nil: the kernel
    /// would not say, as for a link already gone).
    public func encryption() -> (encrypted: Bool, keySize: Int)? {
        var level: UInt8 = 0, size: UInt8 = 0
        guard cvigil_att_security(fd, &level, &size) == 0 else { return nil }
        return (level >= UInt8(BT_SECURITY_MEDIUM), Int(size))
    }

    public enum Received: Equatable, Sendable {
        case pdu([UInt8])
        /// A PDU longer than `receiveCapacity`: dropped.
        case truncated
        case nothing
        /// The link closed (the peer disconnected, or the link was lost).
        case closed(Errno?)
    }

    public func receive() -> Received {
        var buffer = [UInt8](repeating: 0, count: Self.receiveCapacity)
        var truncated: Int32 = 0
        while true {
            switch ErrnoCall.negativeFails({ buffer.withUnsafeMutableBufferPointer { cvigil_att_receive(fd, $0.baseAddress, $0.count, &truncated) } }) {
            case .success(0): return .closed(nil)
            case .success(let n): return truncated != 0 ? .truncated : .pdu(Array(buffer.prefix(n)))
            case .failure(.interrupted): continue
            case .failure(.wouldBlock): return .nothing
            case .failure(let e): return .closed(e)
            }
        }
    }

    /// Sends one PDU. EAGAIN (the kernel's queue for the link is full) is an error the caller
    /// counts: ATT's one-request-at-a-time rule keeps the queue short for anything but
    /// notifications.
    public func send(_ pdu: [UInt8]) throws(HCIError) {
        while true {
            switch ErrnoCall.negativeFails({ pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }) {
            case .success: return
            case .failure(.interrupted): continue
            case .failure(let e): throw HCIError(operation: "send on the ATT link to", adapter: peer?.description ?? "-", errno: e)
            }
        }
    }
}
