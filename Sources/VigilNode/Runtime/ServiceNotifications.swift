import VigilEvents
import VigilSystem

/// The node's side of systemd's notification protocol (sd_notify(3); docs/operations.md
/// "Running under systemd"): `READY=1` once the log and the board are open and the restored state is in force,
/// `WATCHDOG=1` from the loop's own timer at half `WatchdogSec` (a loop that is stuck, stopped or
/// spinning in a handler stops pinging, and systemd restarts it), `STATUS=` when what it says
/// changes, and `STOPPING=1` at a clean stop.
///
/// The pings come from a timer of the loop, never a thread of their own: a thread would go on
/// pinging while the loop that keeps residents safe is stuck. A notification that cannot be sent
/// is counted and logged once; the node goes on (the service manager is not the box's safety).
final class ServiceNotifications: NodeComponent {
    unowned let context: any NodeContext
    /// Before the log is open too: systemd hears READY and the watchdog while a long check runs.
    var runsBeforeLogOpen: Bool { true }
    private let settings: ServiceManagerSettings?
    private var socket: FileDescriptor?
    private var lastStatus = ""
    private(set) var sent: UInt64 = 0
    private(set) var failed: UInt64 = 0
    static let timer = Scheduler.Timer("service-manager")
    /// STATUS= is refreshed at least this often when there is no faster watchdog.
    static let statusIntervalNanoseconds: UInt64 = 10_000_000_000

    /// `settings`: how systemd started the node (nil: not by systemd, nothing is sent).
    init(context: any NodeContext, settings: ServiceManagerSettings?) {
        self.context = context
        self.settings = settings
    }

    func open() throws(NodeError) {
        guard settings != nil else { return }
        do {
            socket = try UnixDatagram.socket()
        } catch {
            // Not fatal: the box runs without its manager hearing it (and says so).
            context.logger.warning("service manager: no notification socket", metadata: ["error": "\(error)"])
        }
    }

    /// Ping interval: half the watchdog's, or the status refresh when there is none.
    private var intervalNanoseconds: UInt64 {
        guard let us = settings?.watchdogMicroseconds, us > 0 else { return Self.statusIntervalNanoseconds }
        return min(Self.statusIntervalNanoseconds, max(us / 2, 1) &* 1_000)
    }

    func start() throws(NodeError) {
        guard settings != nil else { return }
        context.scheduler.register(Self.timer) { [unowned self] in tick() }
    }

    /// The node is up: the log and board open, components started, outputs reconciled.
    func ready() {
        guard settings != nil else { return }
        lastStatus = status()
        notify("READY=1\nSTATUS=\(lastStatus)")
        context.scheduler.schedule(Self.timer, afterNanoseconds: intervalNanoseconds)
    }

    private func tick() {
        guard !context.stopping else { return }
        let now = status()
        var message = settings?.watchdogMicroseconds ?? 0 > 0 ? "WATCHDOG=1" : ""
        if now != lastStatus {
            lastStatus = now
            message += (message.isEmpty ? "" : "\n") + "STATUS=\(now)"
        }
        if !message.isEmpty { notify(message) }
        context.scheduler.schedule(Self.timer, afterNanoseconds: intervalNanoseconds)
    }

    func stop() {
        guard settings != nil else { return }
        context.scheduler.cancel(Self.timer)
        notify("STOPPING=1\nSTATUS=stopping")
    }

    /// One line for `systemctl status`: what a volunteer needs at a glance.
    func status() -> String {
        let p = context.projections
        var parts: [String] = []
        if let memory = context.fromMemory {
            parts.append("the log stopped taking writes (\(memory.failure)): running from memory")
        } else {
            parts.append("running")
        }
        let sos = p.alerts.active.filter { $0.raisedHere && $0.kind == AlertKind.sos.rawValue }.count
        if sos > 0 { parts.append("\(sos) SOS active") }
        let alarming = p.escalations.alarming.count
        if alarming > 0 { parts.append("\(alarming) resident\(alarming == 1 ? "" : "s") not checked in") }
        parts.append("\(p.escalations.residents.count) residents")
        parts.append("\(p.alerts.active.count) active alerts")
        parts.append("radio \(RadioState(rawValue: p.health.radioState).map { "\($0)" } ?? "unknown")")
        return parts.joined(separator: ", ")
    }

    private func notify(_ message: String) {
        guard let settings, let descriptor = socket?.rawValue else { return }
        do {
            try UnixDatagram.send(Array(message.utf8), fromDescriptor: descriptor, to: settings.socketPath)
            sent &+= 1
        } catch {
            failed &+= 1
            if failed == 1 {
                context.logger.warning("service manager: a notification could not be sent", metadata: ["error": "\(error)"])
            }
        }
    }
}
