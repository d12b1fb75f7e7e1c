internal import CBlueZ
import VigilEvents
import VigilSystem
#if canImport(Glibc)
import Glibc
#endif

// Every libbluetooth and HCI-socket call Vigil makes is in this file. Each is wrapped once: a -1
// becomes an `HCIError` with the operation, the adapter and errno, so no caller reads errno.

/// Which HCI channel the radio uses.
public enum HCIChannel: String, Sendable, CaseIterable {
    /// Shares the adapter with the kernel and bluetoothd: the kernel initialised it, Vigil adds
    /// its LE commands. Needs CAP_NET_RAW (commands) and the adapter up.
    case raw
    /// Exclusive: the kernel steps aside and Vigil initialises the controller itself (reset,
    /// event masks). The adapter must be down and nothing else may use it: the kiosk default
    /// where bluetoothd is absent. Needs CAP_NET_ADMIN.
    case user
}

/// A failed HCI call: which one, on which adapter, and the errno it left.
public struct HCIError: Error, Sendable, CustomStringConvertible, Equatable {
    public let operation: String
    public let adapter: String
    public let errno: Errno

    /// The adapter is gone (unplugged, its driver unloaded, the emulator stopped).
    public var adapterVanished: Bool { [ENODEV, ENXIO, EPIPE].contains(errno.rawValue) }
    /// The adapter exists but is powered down.
    public var adapterDown: Bool { errno.rawValue == ENETDOWN }
    /// The kernel has no Bluetooth at all (this development machine's kernel).
    public var noBluetooth: Bool { errno.rawValue == EAFNOSUPPORT }

    public var description: String {
        var text = adapter == "-" ? "\(operation): \(errno)" : "\(operation) \(adapter): \(errno)"
        if noBluetooth { text += " — this kernel has no Bluetooth (AF_BLUETOOTH)" }
        if errno.rawValue == EPERM || errno == .accessDenied {
            text += " — needs CAP_NET_RAW and CAP_NET_ADMIN (see board/vigil.service)"
        }
        if errno == .busy { text += " — the user channel needs the adapter down and unused (stop bluetoothd, or use channel: raw)" }
        return text
    }
}

/// Runs one system call on a Bluetooth socket (HCI or ATT) and turns a failure into an
/// `HCIError` naming the operation and the adapter or peer: the one place this module does so.
@inline(__always)
func hci(_ operation: String, _ adapter: String, _ body: () -> Int32) throws(HCIError) -> Int32 {
    switch ErrnoCall.negativeFails(body) {
    case .success(let result): return result
    case .failure(let e): throw HCIError(operation: operation, adapter: adapter, errno: e)
    }
}

/// A registered adapter as the kernel lists it.
public struct HCIAdapterInfo: Sendable, Equatable {
    public let id: UInt16
    public let name: String
    /// BD_ADDR as printed (most significant byte first).
    public let address: UInt64
    public let isUp: Bool

    public var addressText: String { formatAddress(address) }
}

/// Whether `text` names an adapter: "hci0" or an address "AA:BB:CC:DD:EE:FF".
public func isAdapterSelector(_ text: String) -> Bool {
    parseAddress(text) != nil || (text.hasPrefix("hci") && Int(text.dropFirst(3)) != nil)
}

/// Parses "AA:BB:CC:DD:EE:FF" (either case); nil for anything else.
public func parseAddress(_ text: String) -> UInt64? {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 6 else { return nil }
    var value: UInt64 = 0
    for part in parts {
        guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
        value = value << 8 | UInt64(byte)
    }
    return value
}

/// An open HCI socket, closed exactly once (on `close()` or when released).
final class HCISocketHandle {
    let fd: Int32
    private var isOpen = true

    init(fd: Int32) { self.fd = fd }

    func close() {
        guard isOpen else { return }
        isOpen = false
        _ = Glibc.close(fd)
    }

    /// Hands the descriptor to the caller, who closes it from now on.
    func release() -> Int32 {
        isOpen = false
        return fd
    }

    deinit { close() }
}

/// The adapters this kernel has (`vigil radio adapters`).
public func listBluetoothAdapters() throws(HCIError) -> [HCIAdapterInfo] { try HCI.adapters() }

/// The kernel's HCI socket calls. Nothing here knows about scanning or advertising.
enum HCI {
    /// The registered adapters, through an unbound socket (works whether they are up or down).
    static func adapters() throws(HCIError) -> [HCIAdapterInfo] {
        let fd = try hci("socket", "-", { cvigil_hci_open(UInt16(HCI_DEV_NONE), UInt16(HCI_CHANNEL_RAW)) })
        defer { close(fd) }
        var ids = [UInt16](repeating: 0, count: Int(HCI_MAX_DEV))
        let count = try hci("list adapters", "-", { ids.withUnsafeMutableBufferPointer { cvigil_hci_device_ids(fd, $0.baseAddress, Int32(HCI_MAX_DEV)) } })
        var result: [HCIAdapterInfo] = []
        for id in ids.prefix(Int(count)) {
            var name = [CChar](repeating: 0, count: 9)
            var address = [UInt8](repeating: 0, count: 6)
            var flags: UInt32 = 0
            // An adapter unregistered between the list and this call is simply not listed.
            let ok = name.withUnsafeMutableBufferPointer { n in
                address.withUnsafeMutableBufferPointer { a in
                    cvigil_hci_device_info(fd, id, n.baseAddress, a.baseAddress, &flags)
                }
            }
            guard ok == 0 else { continue }
            let printed = address.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            result.append(HCIAdapterInfo(id: id, name: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                                         address: printed, isUp: cvigil_hci_is_up(flags) != 0))
        }
        return result
    }

    /// Finds an adapter by name ("hci0") or address ("AA:BB:CC:DD:EE:FF"); nil when absent.
    static func find(_ selector: String) throws(HCIError) -> HCIAdapterInfo? {
        let list = try adapters()
        if let address = parseAddress(selector) { return list.first { $0.address == address } }
        return list.first { $0.name == selector }
    }

    /// Opens the adapter's socket on `channel`, non-blocking. On the raw channel every event is
    /// let through (by default the kernel passes a raw socket only a few).
    static func open(_ adapter: HCIAdapterInfo, channel: HCIChannel) throws(HCIError) -> HCISocketHandle {
        let fd = try hci("open \(channel.rawValue) channel of", adapter.name, {
            cvigil_hci_open(adapter.id, UInt16(channel == .raw ? HCI_CHANNEL_RAW : HCI_CHANNEL_USER))
        })
        let socket = HCISocketHandle(fd: fd)
        if channel == .raw {
            _ = try hci("set the event filter of", adapter.name, { cvigil_hci_filter_all_events(fd) })
        }
        return socket
    }

    /// An unbound socket that hears the stack's adapter notifications (registered, unregistered,
    /// up, down), so recovery waits on a descriptor instead of polling.
    static func openNotifications() throws(HCIError) -> HCISocketHandle {
        let fd = try hci("open the notification socket", "-", { cvigil_hci_open(UInt16(HCI_DEV_NONE), UInt16(HCI_CHANNEL_RAW)) })
        let socket = HCISocketHandle(fd: fd)
        _ = try hci("set the notification filter", "-", { cvigil_hci_filter_stack_events(fd) })
        return socket
    }

    /// Opens the management channel (non-blocking), for power requests.
    static func openManagement() throws(HCIError) -> HCISocketHandle {
        HCISocketHandle(fd: try hci("open the management channel", "-", { cvigil_mgmt_open() }))
    }

    /// Asks the kernel to power an adapter up or down and returns at once (the HCIDEVUP ioctl
    /// would block the event loop for the whole controller initialisation). The stack's UP/DOWN
    /// notification says when it is done; the answer on the management socket is drained later.
    static func requestPower(_ adapter: HCIAdapterInfo, up: Bool, management fd: Int32) throws(HCIError) {
        _ = try hci(up ? "request power-up of" : "request power-down of", adapter.name, {
            cvigil_mgmt_set_powered(fd, adapter.id, up ? 1 : 0)
        })
    }

    /// Reads one packet; nil when none is waiting. A packet never spans reads on an HCI socket.
    static func read(_ fd: Int32, adapter: String, into buffer: UnsafeMutableRawBufferPointer) throws(HCIError) -> Int? {
        while true {
            switch ErrnoCall.negativeFails({ Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
            case .success(let n): return n
            case .failure(.interrupted): continue
            case .failure(.wouldBlock): return nil
            case .failure(let e): throw HCIError(operation: "read from", adapter: adapter, errno: e)
            }
        }
    }

    /// Writes one whole packet (packet-type byte first). The kernel takes a packet whole or not
    /// at all.
    static func write(_ fd: Int32, adapter: String, packet: [UInt8]) throws(HCIError) {
        while true {
            switch ErrnoCall.negativeFails({ packet.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }) {
            case .success: return
            case .failure(.interrupted): continue
            case .failure(let e): throw HCIError(operation: "write to", adapter: adapter, errno: e)
            }
        }
    }
}
