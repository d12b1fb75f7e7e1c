/// What the BlueZ radio counts, for `vigil status`.
public struct HCIRadioCounters: Sendable, Codable, Equatable {
    public var packetsIn: UInt64 = 0
    public var packetsOut: UInt64 = 0
    public var reports: UInt64 = 0
    public var commandsFailed: UInt64 = 0
    public var commandTimeouts: UInt64 = 0
    public var recoveries: UInt64 = 0
    public var controllerResets: UInt64 = 0
    public var hardwareErrors: UInt64 = 0
    /// Packets left unread past the budget are not lost: they wait in the socket. These are
    /// packets the parser could not use.
    public var malformedPackets: UInt64 = 0
    public var snoopErrors: UInt64 = 0
    /// Centrals that connected to the box's connectable advertising (the controller stops
    /// advertising then; the radio starts it again).
    public var incomingLinks: UInt64 = 0
    /// Connectable advertising refused (a controller that cannot advertise connectable and hold a
    /// link at once): those payloads go out non-connectable until the link ends or a minute passes.
    public var connectableRefusals: UInt64 = 0
    /// Advertising commands the controller refused (scanning goes on; advertising retries).
    public var advertisingRefusals: UInt64 = 0
    /// Payloads of a plan longer than the controller advertises (signed frames, without extended
    /// advertising or a controller that carries under 251 bytes): left out, counted once per plan.
    public var longPayloadsSkipped: UInt64 = 0
    /// Scanning/advertising commands someone else sent on the raw channel (the kernel, bluetoothd).
    public var foreignChanges: UInt64 = 0
    public init() {}
}
