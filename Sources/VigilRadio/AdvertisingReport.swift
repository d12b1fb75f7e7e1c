import VigilEvents

/// One advertising report as a controller delivers it (legacy or extended), already timestamped.
public struct AdvertisingReport: Sendable, Equatable {
    /// The controller's "RSSI not available" (127): the report counts, its distance does not.
    public static let rssiUnavailable: Int8 = 127

    public var address: UInt64
    public var addressType: AddressType
    public var rssi: Int8
    /// TX power from the extended report or the advertisement's TX Power Level AD, if any.
    public var txPower: Int8?
    public var connectable: Bool
    /// The raw AD structures (advertising data, plus scan response data when active scanning).
    public var data: [UInt8]
    public var timeMicroseconds: UInt64

    public init(address: UInt64, addressType: AddressType, rssi: Int8, txPower: Int8? = nil,
                connectable: Bool, data: [UInt8], timeMicroseconds: UInt64) {
        self.address = address
        self.addressType = addressType
        self.rssi = rssi
        self.txPower = txPower
        self.connectable = connectable
        self.data = data
        self.timeMicroseconds = timeMicroseconds
    }
}

/// What a radio adapter hands the event loop.
public enum RadioOutput: Sendable, Equatable {
    case report(AdvertisingReport)
    case stateChanged(RadioState, reason: String)
    /// This payload is now on the air (the controller confirmed advertising it).
    case onAir([UInt8])
    /// Something the node should log as a warning: the capture failed and was switched off, the
    /// controller refuses to advertise, notifications were lost. The radio goes on.
    case problem(String)
}

/// The interface every radio implements: the simulation and BlueZ's HCI socket.
///
/// Contract: the loop watches `descriptor` with epoll and calls `readReady` only when it is
/// readable; `readReady` never blocks. `start` and `stop` are called on the loop thread.
public protocol RadioAdapter: AnyObject {
    /// "sim", "hci0", ...
    var name: String { get }
    /// A readable descriptor: the HCI socket, or the simulation's timer.
    var descriptor: Int32 { get }
    func start() throws
    func readReady(into outputs: inout [RadioOutput]) throws
    func stop()
    /// What to advertise from now on. Idempotent: the same plan again changes nothing on the air.
    func advertise(_ plan: AdvertisingPlan)
    /// True when the adapter reports RadioStateChanged itself (the BlueZ radio, once scanning
    /// really runs); false when the node should log it on at start (the simulation).
    var reportsState: Bool { get }
}
