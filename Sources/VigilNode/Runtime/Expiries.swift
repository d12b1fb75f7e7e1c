import VigilCore
import VigilEvents

/// Time acting on alerts: when the earliest expiry among the active alerts comes (an SOS raised
/// here, an alert received, and with them their acknowledgements), `AlertExpired` says so at
/// that moment. The alert book then holds it ended, outputs and the advertising plan follow at
/// once, and replay needs no clock. Without this a quiet box (nothing else arriving) judged
/// expiry only when some other event came, and kept red on and the buzzer sounding.
///
/// One expiry at a time, earliest first; after a restart overdue ones come one after the other.
/// An expiry appended and not yet durable is not appended again.
final class Expiries: NodeComponent {
    unowned let context: any NodeContext
    static let expiryTimer = Scheduler.Timer("alert-expiry")

    init(context: any NodeContext) { self.context = context }

    func start() throws(NodeError) {
        context.scheduler.register(Self.expiryTimer) { [unowned self] in reconcile() }
    }

    /// Appends the earliest expiry once it is due, or arms the timer for it.
    func reconcile() {
        guard !context.stopping, let next = context.projections.alerts.earliestExpiry else {
            context.scheduler.cancel(Self.expiryTimer)
            return
        }
        if context.pending.containsExpiry(next.id) { return } // appended, waiting to become durable
        let now = context.clock.nowMicroseconds()
        if next.expiresAtMicroseconds <= now {
            var expired = AlertExpired()
            expired.id = next.id
            expired.expiresAtUs = next.expiresAtMicroseconds
            context.append(.alertExpired(expired), time: now)
            context.scheduler.cancel(Self.expiryTimer)
        } else {
            context.scheduler.schedule(Self.expiryTimer,
                                    atNanoseconds: context.monotonicDeadline(forWallMicroseconds: next.expiresAtMicroseconds))
        }
    }
}
