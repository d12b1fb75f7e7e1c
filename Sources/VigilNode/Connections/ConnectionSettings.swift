import Logging
import VigilCore
import VigilEvents
import VigilGATT
import VigilRadio
import VigilSystem

/// `connections:` in the configuration (docs/connections.md "Connections").
public struct ConnectionSettings: Sendable, Equatable {
    /// Serve the box's GATT services on the radio's adapter (raw channel only).
    public var enabled = false
    /// LE links peers may hold at once; one more is accepted and closed at once, and counted.
    public var maximumLinks = 4
    /// The name GAP serves (empty: "Vigil" and the node id's last four digits).
    public var deviceName = ""
    /// Messages a peer may send: `messageBurst` at once, then one per `messageIntervalMicroseconds`.
    public var messageBurst = 10
    public var messageIntervalMicroseconds: UInt64 = 500_000
    /// Protocol violations (and refused messages) after which the box closes the link.
    public var violationLimit = 8
    /// A link's messages logged but not yet durable; more are refused until some are
    /// (`PendingWrites`).
    public var maximumPendingWrites = 16
    /// Link to residents' heart-rate sensors (`--hr-sensor`); needs a BlueZ adapter on the raw
    /// channel, not `enabled` (linking out serves nothing to peers).
    public var heartRateSensors = true
    /// Bond with heart-rate sensors at enrolment and trust only links encrypted with the bond
    /// (docs/sensor-bonds.md). `auto` (the default): where the kernel is known to survive a
    /// failed bond (Linux 6.12 or later, `KernelBondSupport`), else linked without bonds and
    /// status says why. `on`: bonds or no link at all. On Debian 12's 6.1 a device at a bonded
    /// sensor's address without its key (an impostor, or a strap that lost its bond) makes the
    /// kernel's Bluetooth BUG when the box closes the failed link (found in the VM, issue 28).
    public var sensorBonds = SensorBondMode.auto
    /// Sensors linked at once (residents by id; the rest are shown as not linked).
    public var maximumSensors = 8
    /// A sensor's readings are logged at most this often while they say the same thing.
    public var heartRateLogIntervalMicroseconds: UInt64 = 60_000_000
    public init() {}
}

/// `connections.sensor_bonds`.
public enum SensorBondMode: String, Sendable, Equatable {
    /// Bonds where the kernel can take them; else sensors are linked without, and status says so.
    case auto
    /// Bonds, or no sensor linked (status says why).
    case on
    /// No bonds: any device at a sensor's address is believed.
    case off
}

/// Counted, for `vigil status` and metrics.
public struct ConnectionCounters: Sendable, Codable, Equatable {
    public var linksOpened: UInt64 = 0
    public var linksRefused: UInt64 = 0
    /// Links the box closed because the peer kept breaking the protocol or its limits.
    public var linksClosedForMisbehaviour: UInt64 = 0
    public var messagesReceived: UInt64 = 0
    public var messagesSent: UInt64 = 0
    /// Writes refused for the peer's rate, a message over the limit, or one that did not parse.
    public var messagesRefused: UInt64 = 0
    /// Of those, refused because the link already had `maximumPendingWrites` messages waiting
    /// for the card (the box's slowness: no strike).
    public var messagesRefusedPending: UInt64 = 0
    public var violations: UInt64 = 0
    /// Phones' sos and medical messages logged: the call book opens a phone's call for staff from
    /// each, or takes it into the unanswered one, or (4 open) leaves it a message
    /// (`CallBook.phoneAsked`); never an alert of the network by itself.
    public var callsFromPhones: UInt64 = 0
    /// Of `messagesRefused`, refused because phones together used the box's budget
    /// (`PhoneBudgets`): no strike, the phone may not be the one flooding.
    public var messagesRefusedBusy: UInt64 = 0
    /// Phones' links opened and closed without a `LinkChanged` (over `PhoneBudgets`' link events).
    public var linkEventsShed: UInt64 = 0
    public var listenFailures: UInt64 = 0
    /// Public warnings notified on the message characteristic (one per warning and link; a
    /// notification is not acknowledged, so this says sent, not read).
    public var warningsNotified: UInt64 = 0
    /// Of those a link would not take (its queue full): tried again when the warnings change.
    public var warningsNotNotified: UInt64 = 0
}
