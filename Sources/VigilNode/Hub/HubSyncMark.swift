import VigilCore
import VigilEvents
import VigilLog

/// Where a box's log stands with its hub, read straight from the log (for `vigil log tail` and
/// `vigil status`, with or without a running node).
public struct HubSyncMark: Sendable, Equatable {
    /// The sync's state from the log's hub events.
    public var book: HubSyncBook
    /// Events after `book.syncedThrough` that leave the box.
    public var backlog: UInt64

    public init(book: HubSyncBook, backlog: UInt64) {
        self.book = book
        self.backlog = backlog
    }

    /// Whether `event` is synced, pending, or never leaves the box (nil).
    public func state(of event: Event) -> String? {
        guard event.body.kind.leavesBox else { return nil }
        return event.sequence <= book.syncedThrough ? "synced" : "pending"
    }

    /// Reads the log once: the hub's events are decoded, every other record only counted by kind
    /// (a million records take milliseconds).
    public static func read(_ log: EventLog) throws(LogError) -> HubSyncMark {
        var book = HubSyncBook()
        var shareable: [UInt64] = []
        let hubKinds: Set<UInt32> = [UInt32(EventKind.hubAcknowledged.rawValue), UInt32(EventKind.hubEpochStarted.rawValue)]
        try log.read { txn in
            try txn.forEach(from: 0) { result in
                guard case .success(let view) = result else { return true }
                if hubKinds.contains(view.kind) {
                    if let body = try? EventCodec.decode(kind: view.kind, payload: view.payload, sequence: view.sequence) {
                        book.apply(Event(sequence: view.sequence, timeMicroseconds: view.timeMicroseconds, body: body))
                        shareable.removeAll { $0 <= book.syncedThrough }
                    }
                } else if let kind = EventKind(rawValue: Int(view.kind)), kind.leavesBox, view.sequence > book.syncedThrough {
                    shareable.append(view.sequence)
                }
                return true
            }
        }
        return HubSyncMark(book: book, backlog: UInt64(shareable.count { $0 > book.syncedThrough }))
    }
}
