import VigilSystem

/// The kernel's management channel for bonding (Management.swift has the protocol): a
/// non-blocking socket the node watches on its loop. Every management socket hears every
/// adapter's events; callers filter by index. Needs CAP_NET_ADMIN, as the radio's power requests do.
public final class ManagementChannel {
    private let handle: HCISocketHandle
    public var fd: Int32 { handle.fd }
    private var buffer = [UInt8](repeating: 0, count: ManagementEvent.maximumLength)

    private init(handle: HCISocketHandle) { self.handle = handle }

    public static func open() throws(HCIError) -> ManagementChannel {
        ManagementChannel(handle: try HCI.openManagement())
    }

    public func close() { handle.close() }

    /// Sends one command; the answer comes as an event (Command Complete or Command Status).
    public func send(_ command: ManagementCommand, index: UInt16) throws(HCIError) {
        try HCI.write(handle.fd, adapter: "hci\(index)", packet: command.packet(index: index))
    }

    /// The next packet the kernel sent; nil when none is waiting.
    public func receive() throws(HCIError) -> [UInt8]? {
        let fd = handle.fd
        let result: Result<Int?, HCIError> = buffer.withUnsafeMutableBytes { raw in
            do throws(HCIError) { return .success(try HCI.read(fd, adapter: "the management channel", into: raw)) } catch { return .failure(error) }
        }
        guard let n = try result.get() else { return nil }
        return Array(buffer.prefix(n))
    }
}
