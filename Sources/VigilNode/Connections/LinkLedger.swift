import VigilEvents
import VigilRadio

/// What the box's LE links have done, counted and logged in one place: the GATT server's links
/// (`GATTLinks`), the chat central's (`ChatCentral`) and the sensors' share these counters and
/// log their opening and closing the same way. Given to each at construction (decision 0008), so
/// none reaches another through the node. Loop-confined.
final class LinkLedger {
    unowned let context: any NodeContext
    private(set) var counters = ConnectionCounters()

    init(context: any NodeContext) { self.context = context }

    /// Logs a link opening or closing (`LinkChanged`); the sequence, or nil when the log refused
    /// it. A sensor's names its resident and whether it was bonded.
    @discardableResult
    func appendLink(peer: LEAddress, open: Bool, reason: String, role: LinkRole = .peripheral,
                    resident: String = "", bonded: Bool = false) -> UInt64? {
        var change = LinkChanged()
        change.resident = resident
        change.bonded = bonded
        change.peer = peer.value
        change.peerType = peer.kind == .random ? .addressRandom : .addressPublic
        change.open = open
        change.role = role
        change.reason = reason
        return context.append(.linkChanged(change), time: nil)
    }

    func countLinkOpened() { counters.linksOpened += 1 }
    func countLinkRefused() { counters.linksRefused += 1 }
    func countLinkEventShed() { counters.linkEventsShed += 1 }
    func countListenFailure() { counters.listenFailures += 1 }
    func countReceivedMessage() { counters.messagesReceived += 1 }
    func countSentMessage() { counters.messagesSent += 1 }
    func countRefusedMessage() { counters.messagesRefused += 1 }
    func countRefusedBusy() {
        counters.messagesRefused += 1
        counters.messagesRefusedBusy += 1
    }
    func countRefusedPending() {
        counters.messagesRefused += 1
        counters.messagesRefusedPending += 1
    }
    func countCallFromPhone() { counters.callsFromPhones += 1 }
    func countWarningNotified(_ sent: Bool) {
        if sent { counters.warningsNotified += 1 } else { counters.warningsNotNotified += 1 }
    }
    func countViolation() { counters.violations += 1 }
    func countClosedForMisbehaviour() { counters.linksClosedForMisbehaviour += 1 }
}

/// The adapter the box's LE links go through: `radio` and `hci.channel`. Links need a BlueZ
/// adapter on the raw channel (the simulator has none; on the user channel the box holds the
/// controller and the kernel's L2CAP is not there).
struct LinkAdapter {
    /// `radio`: an adapter's name (hci0) or address, or "sim".
    let radio: String
    let channel: HCIChannel

    var canLink: Bool { radio != "sim" && channel == .raw }

    /// The adapter, as the kernel lists it now; nil when it is not there (yet).
    func find() throws(HCIError) -> HCIAdapterInfo? {
        try listBluetoothAdapters().first { $0.name == radio || $0.addressText == radio.uppercased() }
    }
}
