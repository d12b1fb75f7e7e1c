import VigilEvents
import VigilSystem

/// One job of the running node: the radio intake, alerts over the air, the buttons, the ladder,
/// deliveries, retention, checkpoints, the control socket.
///
/// A component is a final class made by `Node.init` and owned by the node. It reaches the node
/// only through a `NodeContext` (unowned: the node outlives its parts; decision 0008), and gets
/// its settings and the other components it uses at construction. It is only ever called on the
/// loop thread, so its state needs no lock. It watches its descriptors with `context.watch`,
/// registers its timers with the scheduler, appends events with `append`, and reads the durable
/// state in `projections`. It never changes the projections and never drives outputs itself:
/// those follow from durable events (docs/log.md "Principles"; ARCHITECTURE.md says how to add one).
protocol NodeComponent: AnyObject {
    /// Opens what the component needs from the outside (a device, a socket) and watches its
    /// descriptors. A failure here stops the node before it logs its start.
    func open() throws(NodeError)
    /// The loop is about to run and the restored state is in place: watch descriptors, arm
    /// timers, act on what is overdue.
    func start() throws(NodeError)
    /// A durable event, just applied to the projections.
    func applied(_ event: Event)
    /// An appended event the log refused: it will never be applied.
    func refused(_ event: Event)
    /// After a batch of durable events: bring effects in line with the new state.
    func reconcile()
    /// The node is stopping (it may still append): end what is running, release descriptors.
    func stop()
    /// Whether it opens and starts before the log is open, on a start that checks its log first
    /// (`LogOpening`): true only for what a call for help needs, and only for components that
    /// read neither the log nor history the restored projections would hold. The others open
    /// and start once the log is open, from the restored state.
    var runsBeforeLogOpen: Bool { get }
}

extension NodeComponent {
    func open() throws(NodeError) {}
    func start() throws(NodeError) {}
    func applied(_ event: Event) {}
    func refused(_ event: Event) {}
    func reconcile() {}
    func stop() {}
    var runsBeforeLogOpen: Bool { false }
}

/// Reading a device that the loop watches (the radio, the button): a hang-up, or reads failing
/// again and again, mean the device is gone. Its descriptor must then leave the loop, or a
/// level-triggered epoll would spin on it; what else follows (log it, stop the node) is the
/// component's call.
struct DeviceReads {
    private var failures = 0
    static let failuresBeforeGivingUp = 3

    /// Runs `read` unless the device hung up. Returns why to give up on the device, or nil;
    /// each failed read is passed to `failed` first (to count and log it).
    mutating func read(events: UInt32, _ read: () throws -> Void, failed: (any Error) -> Void) -> String? {
        if events & Epoll.hangup != 0 { return "the device hung up" }
        do {
            try read()
            failures = 0
            return nil
        } catch {
            failures += 1
            failed(error)
            return failures >= Self.failuresBeforeGivingUp ? "\(error)" : nil
        }
    }
}
