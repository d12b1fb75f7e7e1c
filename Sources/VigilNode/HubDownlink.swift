import Foundation
import Logging
import VigilEvents
import VigilHubProtocol

/// The download loop beside the node's loop: long-polls the hub's feed from the box's cursor and
/// appends each item with its position (one `HubReceived` event), so an item is applied once
/// even when the feed is read again after a crash.
final class DownlinkWorker: @unchecked Sendable {
    let node: Node
    let choice: HubChoice
    let logger: Logger
    let problems: HubProblems
    /// Only the cursor matters.
    private let snapshots = SnapshotMailbox()
    private var cursor: UInt64 = 0
    private var refusals: UInt64 = 0
    /// Seconds the hub may hold a poll open (under the client's 30 s read timeout).
    static let pollSeconds = 25

    init(node: Node, choice: HubChoice, problems: HubProblems, logger: Logger) {
        self.node = node
        self.choice = choice
        self.problems = problems
        self.logger = logger
    }

    func offer(_ snapshot: UplinkSnapshot) { snapshots.offer(snapshot) }

    func close() { snapshots.close() }

    func run() async {
        guard let first = await snapshots.next() else { return }
        cursor = first.feedCursor
        refusals = first.refusals
        var retry = HubRetry(.download, problems: problems)
        while !Task.isCancelled {
            // Every hub of the network serves the one feed, in the one order: the cursor holds
            // across a failover.
            let (index, hub) = choice.current()
            do {
                let answer = try await hub.client.feed(node: node.nodeID, after: cursor, wait: Self.pollSeconds)
                retry.succeeded()
                choice.answered(index)
                guard let last = answer.items.last?.position, last > cursor else { continue }
                var bodies: [EventBody] = []
                for item in answer.items where item.position > cursor {
                    guard let payload = Data(base64Encoded: item.payload) else { continue }
                    var r = HubReceived()
                    r.hub = hub.fingerprint
                    r.position = item.position
                    r.originNode = item.origin.isEmpty ? 0 : NodeIDText.parse(item.origin) ?? 0
                    r.kind = item.kind
                    r.timeUs = item.timeUs
                    r.payload = payload
                    bodies.append(.hubReceived(r))
                }
                let received = bodies
                node.onLoop { node in node.uplink.append(forWorker: received) }
                while cursor < last {
                    guard let next = await snapshots.next() else { return }
                    cursor = max(cursor, next.feedCursor)
                    if next.refusals != refusals {
                        refusals = next.refusals
                        throw HubAppendRefused()
                    }
                }
                logger.info("hub: items received from the feed", metadata: ["count": "\(bodies.count)", "cursor": "\(cursor)"])
            } catch {
                if HubChoice.isNoAnswer(error), choice.didNotAnswer(index, error) { continue }
                guard await retry.wait(after: error, "hub: the feed cannot be read; retrying", logger) else { return }
            }
        }
    }
}
