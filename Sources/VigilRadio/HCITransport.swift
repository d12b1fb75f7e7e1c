import VigilSystem
#if canImport(Glibc)
import Glibc
#endif

/// What the BlueZ radio needs from the kernel: finding adapters, their sockets, power requests.
///
/// `BlueZTransport` is the real one. Tests give the radio a transport whose "sockets" are packet
/// socket pairs with a scripted controller on the other end, so the radio's state machine runs
/// on recorded HCI bytes without Bluetooth.
public protocol HCITransport: AnyObject {
    /// The adapter named "hci0" or with this address; nil when absent.
    func find(_ selector: String) throws(HCIError) -> HCIAdapterInfo?
    /// The adapter's socket on `channel`: non-blocking, one packet per read, closed with `close`.
    func open(_ adapter: HCIAdapterInfo, channel: HCIChannel) throws(HCIError) -> Int32
    /// A descriptor that delivers the stack's adapter notifications (HCI event 0xFD), or nil.
    func openNotifications() throws(HCIError) -> Int32?
    /// Asks for the adapter to be powered up or down; returns at once.
    func requestPower(_ adapter: HCIAdapterInfo, up: Bool) throws(HCIError)
    func read(_ fd: Int32, adapter: String, into buffer: UnsafeMutableRawBufferPointer) throws(HCIError) -> Int?
    func write(_ fd: Int32, adapter: String, packet: [UInt8]) throws(HCIError)
    func close(_ fd: Int32)
}

/// The kernel's HCI sockets through libbluetooth (see HCISocket.swift).
public final class BlueZTransport: HCITransport {
    private var management: HCISocketHandle?
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1_024, alignment: 8)

    public init() {}
    deinit { scratch.deallocate() }

    public func find(_ selector: String) throws(HCIError) -> HCIAdapterInfo? { try HCI.find(selector) }

    public func open(_ adapter: HCIAdapterInfo, channel: HCIChannel) throws(HCIError) -> Int32 {
        let handle = try HCI.open(adapter, channel: channel)
        return handle.release()
    }

    public func openNotifications() throws(HCIError) -> Int32? { try HCI.openNotifications().release() }

    public func requestPower(_ adapter: HCIAdapterInfo, up: Bool) throws(HCIError) {
        if management == nil { management = try HCI.openManagement() }
        guard let m = management else { return }
        // Answers and the kernel's management events are not needed: drain what came so far so the
        // socket's buffer never fills.
        while (try? HCI.read(m.fd, adapter: "-", into: scratch)).flatMap({ $0 }) != nil {}
        try HCI.requestPower(adapter, up: up, management: m.fd)
    }

    public func read(_ fd: Int32, adapter: String, into buffer: UnsafeMutableRawBufferPointer) throws(HCIError) -> Int? {
        try HCI.read(fd, adapter: adapter, into: buffer)
    }

    public func write(_ fd: Int32, adapter: String, packet: [UInt8]) throws(HCIError) {
        try HCI.write(fd, adapter: adapter, packet: packet)
    }

    public func close(_ fd: Int32) { _ = Glibc.close(fd) }
}
