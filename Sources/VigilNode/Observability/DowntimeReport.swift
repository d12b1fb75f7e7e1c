import VigilCore
import VigilEvents

/// The box's own downtime, reported (issue 10, item 7): at start, when the log's last event (the
/// previous NodeStopped, or whatever came last before a crash or power cut) is older than
/// `notify.downtime_report_after`, it appends DowntimeDetected from that event's time to now.
/// Applying it puts one message to the staff channel in the outbox ("the box was off from … to
/// …"), so the report is in the log, survives restarts and is sent once, like any other message.
///
/// The times come from the log, not from a clock read at stop: a box that lost power never wrote
/// its NodeStopped, and its last event is the best record of when it stopped watching.
final class DowntimeReport: NodeComponent {
    unowned let context: any NodeContext
    /// `notify.downtime_report_after`: a gap shorter than this is a restart, not downtime.
    let reportAfterMicroseconds: UInt64

    init(context: any NodeContext, reportAfterMicroseconds: UInt64) {
        self.context = context
        self.reportAfterMicroseconds = reportAfterMicroseconds
    }

    func start() throws(NodeError) {
        let last = context.projections.health.lastEventMicroseconds
        let now = context.clock.nowMicroseconds()
        guard last > 0, now > last, now - last >= reportAfterMicroseconds else { return }
        var downtime = DowntimeDetected()
        downtime.fromUs = last
        downtime.toUs = now
        context.append(.downtimeDetected(downtime), time: now)
        context.logger.warning("the box was off", metadata: [
            "from_us": "\(last)", "to_us": "\(now)", "seconds": "\((now - last) / 1_000_000)",
        ])
    }
}
