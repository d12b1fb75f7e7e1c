/// Settings of the BlueZ radio (config section `radio:`).
public struct HCIRadioSettings: Sendable, Equatable {
    /// "hci0", or the adapter's address "AA:BB:CC:DD:EE:FF" (stable across re-plugging).
    public var adapter = "hci0"
    public var channel: HCIChannel = .raw
    /// Active scanning asks advertisers for their scan response (names often live there); it
    /// also transmits, so passive is the default.
    public var activeScan = false
    /// Scan interval and window: window = interval means the receiver listens all the time.
    public var scanIntervalMicroseconds: UInt64 = 100_000
    public var scanWindowMicroseconds: UInt64 = 100_000
    /// Use the extended scanning and advertising commands when the controller has them (LE
    /// feature bit 12), as the kernel does: once a controller has seen an extended advertising
    /// command it may refuse legacy ones, so on the raw channel Vigil follows the kernel's choice.
    public var extended = true
    /// How often each advertisement goes out.
    public var advertisingIntervalMicroseconds: UInt64 = 100_000
    /// With several payloads (presence, alerts), each is on the air for this long in turn.
    public var rotationSlotMicroseconds: UInt64 = 500_000
    /// A command not answered in this time means the controller has failed.
    public var commandTimeoutMicroseconds: UInt64 = 2_000_000
    /// Recovery retries: the delay doubles from min to max while the adapter stays unusable, and
    /// goes back to min only once the radio has run this long without failing (a controller that
    /// fails right after setup must not be restarted four times a second).
    public var backoffMinMicroseconds: UInt64 = 250_000
    public var backoffMaxMicroseconds: UInt64 = 30_000_000
    public var stableAfterMicroseconds: UInt64 = 60_000_000
    /// Ask the kernel (management channel, asynchronous) to power the adapter up when it is down
    /// (raw channel), or down before taking it (user channel). Off leaves power to the operator.
    public var managePower = true
    /// Packets handled per wake-up; more wait for the next turn of the loop, so a flood of
    /// reports cannot starve the button or the log's acknowledgements.
    public var readBudget = 256
    /// btsnoop capture of every HCI packet; nil = off.
    public var snoopPath: String?
    public var snoopMaxFileBytes = 8 << 20
    public var snoopKeepFiles = 3

    public init() {}
}
