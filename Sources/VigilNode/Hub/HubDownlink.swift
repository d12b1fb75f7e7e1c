import Foundation
import Logging
import VigilEvents
import VigilHubProtocol

/// The download loop beside the node's loop: follows the hub's feed from the box's cursor (a
/// stream of lines; a long poll from a hub without streams) and appends each item with its
/// position (one `HubReceived` event), so an item is applied once even when the feed is read
/// again after a crash.
final class DownlinkWorker: Sendable {
    let sink: HubSink
    let nodeID: UInt64
    let choice: HubChoice
    let logger: Logger
    let problems: HubProblems
    let generation: UInt64
    /// Only the cursor matters.
    private let snapshots = SnapshotMailbox()
    /// A stream that ends sooner than this, but for a rewind, is taken as a failure (back-off).
    static let shortStream: Duration = .seconds(5)
    /// Seconds a hub without streams may hold a poll open (under the client's 30 s read timeout).
    static let pollSeconds = 25

    init(sink: HubSink, nodeID: UInt64, choice: HubChoice, problems: HubProblems, logger: Logger) {
        self.sink = sink
        self.nodeID = nodeID
        self.choice = choice
        self.problems = problems
        self.generation = sink.generation
        self.logger = logger
    }

    func offer(_ snapshot: UplinkSnapshot) { snapshots.offer(snapshot) }

    func close() { snapshots.close() }

    func run() async {
        guard let first = await snapshots.next() else { return }
        var mark = first
        var retry = HubRetry(.download, problems: problems)
        while !Task.isCancelled {
            // Every hub of the network serves the one feed, in the one order: the cursor holds
            // across a failover.
            let (index, hub) = choice.current()
            do {
                // One stream, line after line; a rewind (or the stream's end) opens the next.
                let opened = ContinuousClock.now
                var rewound = false
                let followed = try await hub.client.followFeed(node: nodeID, after: mark.feedCursor,
                                                    at: mark.feedCursor > 0 && mark.feedCursorDigest != 0 ? mark.feedCursorDigest : nil,
                                                    wait: Self.pollSeconds) { answer in
                    retry.succeeded()
                    choice.answered(index)
                    if let rewind = Self.rewind(answer, mark: mark, hub: hub.fingerprint) {
                        logger.warning("hub: the feed no longer holds what this box took at its cursor (a hub restored from a backup?); reading it again",
                                       metadata: ["cursor": "\(mark.feedCursor)", "hub_head": "\(answer.head ?? 0)"])
                        // Everything again, appended in one turn, so an alert and its cancel read
                        // again never light the alarms apart.
                        var bodies: [EventBody] = [.hubFeedRewound(rewind)]
                        bodies += try await readAll(hub.client, fingerprint: hub.fingerprint)
                        mark = try await append(bodies, until: { $0.feedRewinds > mark.feedRewinds && $0.feedCursor >= Self.last(bodies) }, from: mark)
                        rewound = true
                        return false
                    }
                    let bodies = Self.received(answer.items, after: mark.feedCursor, hub: hub.fingerprint)
                    guard !bodies.isEmpty else { return !Task.isCancelled }
                    let last = Self.last(bodies)
                    mark = try await append(bodies, until: { $0.feedCursor >= last }, from: mark)
                    logger.info("hub: items received from the feed", metadata: ["count": "\(bodies.count)", "cursor": "\(mark.feedCursor)"])
                    return !Task.isCancelled
                }
                // A hub ends a stream after minutes; one that ends them within seconds (a proxy
                // cutting each after its first line, say) must not have the box ask again and
                // again at full speed.
                if followed.streamed, !rewound, ContinuousClock.now - opened < Self.shortStream {
                    throw HubClient.Failure.unreachable("the hub ended the feed's stream after \(ContinuousClock.now - opened)")
                }
            } catch {
                if HubChoice.isNoAnswer(error), choice.didNotAnswer(index, error) { continue }
                guard await retry.wait(after: error, "hub: the feed cannot be read; retrying", logger) else { return }
            }
        }
    }

    /// The rewind to log when the hub's feed does not hold, at the box's cursor, what the box took
    /// there: another item, or none at all (an older hub, which says neither, is not judged).
    static func rewind(_ answer: FeedAnswer, mark: UplinkSnapshot, hub: String) -> HubFeedRewound? {
        guard mark.feedCursor > 0, let head = answer.head else { return nil }
        let mine = FeedAnswer.digestText(mark.feedCursorDigest)
        guard answer.atCursor != mine, mark.feedCursorDigest != 0 || answer.atCursor == nil else { return nil }
        var r = HubFeedRewound()
        r.hub = hub
        r.fromPosition = mark.feedCursor
        r.hubHead = head
        r.cursorMissing = answer.atCursor == nil
        return r
    }

    /// The feed from the start, page after page (bounded: past `maximumCatchUpBytes` the rest
    /// comes with the next polls).
    private func readAll(_ client: HubClient, fingerprint: String) async throws -> [EventBody] {
        var bodies: [EventBody] = []
        var after: UInt64 = 0
        var bytes = 0
        while bytes < Self.maximumCatchUpBytes {
            let page = try await client.feed(node: nodeID, after: after, wait: 0)
            bodies += Self.received(page.items, after: after, hub: fingerprint, replayed: true)
            bytes += page.items.reduce(0) { $0 + $1.payload.utf8.count }
            guard let last = page.items.last?.position, last > after else { break }
            after = last
        }
        return bodies
    }

    /// Payload bytes read again at most in one turn after a rewind (16 MiB: the whole feed of a
    /// shelter network is far smaller).
    static let maximumCatchUpBytes = 16 << 20

    /// The items after `after`, as the events that take them.
    static func received(_ items: [FeedEntry], after: UInt64, hub: String, replayed: Bool = false) -> [EventBody] {
        var bodies: [EventBody] = []
        for item in items where item.position > after {
            guard let payload = Data(base64Encoded: item.payload) else { continue }
            var r = HubReceived()
            r.hub = hub
            r.position = item.position
            r.originNode = item.origin.isEmpty ? 0 : NodeIDText.parse(item.origin) ?? 0
            r.kind = item.kind
            r.timeUs = item.timeUs
            r.payload = payload
            r.replayed = replayed
            bodies.append(.hubReceived(r))
        }
        return bodies
    }

    static func last(_ bodies: [EventBody]) -> UInt64 {
        bodies.reduce(0) { if case .hubReceived(let r) = $1 { max($0, r.position) } else { $0 } }
    }

    /// Appends on the loop and waits for the snapshot in which they applied; a refusal throws.
    private func append(_ bodies: [EventBody], until applied: (UplinkSnapshot) -> Bool, from mark: UplinkSnapshot) async throws -> UplinkSnapshot {
        sink.append(bodies)
        var latest = mark
        while !applied(latest) {
            guard let next = await snapshots.next() else { throw CancellationError() }
            if next.refusals != mark.refusals { throw HubAppendRefused() }
            latest = next
        }
        return latest
    }
}
