import VigilAccess
import VigilCore
import VigilEvents
import VigilSystem

/// Snapshots of the node for servers beside the loop (the box's page and API): the latest one,
/// and a stream of new ones. Thread-safe; the loop only ever stores and yields (never waits), so
/// however slow a reader is, the loop is not held up: each reader's stream keeps only the newest
/// snapshot it has not taken yet.
///
/// The loop builds snapshots only once a server asked for them (`activate`), at most
/// `minimumIntervalNanoseconds` apart, and at least every `heartbeatNanoseconds` (uptime, radio
/// counters).
public final class SnapshotFeed: Sendable {
    private struct State {
        var latest: NodeSnapshot?
        var readers: [UInt64: AsyncStream<NodeSnapshot>.Continuation] = [:]
        var nextReader: UInt64 = 0
        var active = false
        var finished = false
    }
    private let state = LockedValue(State())

    public init() {}

    /// A server wants snapshots (`NodeHandle.publishSnapshots`).
    func activate() {
        state.withLock { $0.active = true }
    }

    var isActive: Bool { state.withLock { $0.active } }

    /// The newest snapshot (nil before the first).
    public var latest: NodeSnapshot? { state.withLock { $0.latest } }

    /// Every snapshot from now on, starting with the newest one there is; a reader that falls
    /// behind skips to the newest. Ends when the node stops.
    public func updates() -> AsyncStream<NodeSnapshot> {
        let (stream, continuation) = AsyncStream<NodeSnapshot>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id: UInt64? = state.withLock { s in
            guard !s.finished else { return nil }
            let id = s.nextReader
            s.nextReader += 1
            s.readers[id] = continuation
            if let latest = s.latest { continuation.yield(latest) }
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.readers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Returns once a snapshot includes event `sequence` (an action's event: the page shown after
    /// it must show it), or after `timeoutSeconds` (the loop publishes within 250 ms).
    public func waitUntil(covering sequence: UInt64, timeoutSeconds: Double = 2) async {
        if let latest, latest.sequence >= sequence { return }
        let stream = updates()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await s in stream where s.sequence >= sequence { return } }
            group.addTask { try? await Task.sleep(for: .seconds(timeoutSeconds)) }
            await group.next()
            group.cancelAll()
        }
    }

    /// On the loop: stores `snapshot` and hands it to every reader.
    func publish(_ snapshot: NodeSnapshot) {
        let readers = state.withLock { s -> [AsyncStream<NodeSnapshot>.Continuation] in
            s.latest = snapshot
            return Array(s.readers.values)
        }
        for r in readers { r.yield(snapshot) }
    }

    /// The node stopped: readers' streams end.
    func finish() {
        let readers = state.withLock { s -> [AsyncStream<NodeSnapshot>.Continuation] in
            s.finished = true
            let r = Array(s.readers.values)
            s.readers.removeAll()
            return r
        }
        for r in readers { r.finish() }
    }
}

/// Publishes the node's snapshots to its `SnapshotFeed` (docs/page.md "The box's page"): after a batch
/// that changed what the page shows, no more often than every 250 ms, so an SOS reaches a viewer
/// at once and a crowded radio costs at most four small snapshots a second.
final class SnapshotPublisher: NodeComponent {
    unowned let context: any NodeContext
    /// Where the page and the API read them.
    let feed: SnapshotFeed
    /// What the LEDs and buzzer are driven to now: a change is published like an event's.
    private let outputs: () -> [OutputLine: OutputDecision]
    /// The live view of the node now (`Node.snapshot`).
    private let snapshot: () -> NodeSnapshot
    /// Before the log is open too: the page shows the box from the first second.
    var runsBeforeLogOpen: Bool { true }
    static let timer = Scheduler.Timer("page-snapshot")
    static let minimumIntervalNanoseconds: UInt64 = 250_000_000
    static let heartbeatNanoseconds: UInt64 = 5_000_000_000
    private var lastPublishedNanoseconds: UInt64?
    private var lastSequence: UInt64 = .max
    private var lastOutputs: [OutputLine: OutputDecision] = [:]
    private var started = false
    /// When the last snapshots were published (monotonic ns, the newest 64): what tests check the
    /// rate against.
    private(set) var published: [UInt64] = []

    init(context: any NodeContext, feed: SnapshotFeed, outputs: @escaping () -> [OutputLine: OutputDecision],
         snapshot: @escaping () -> NodeSnapshot) {
        self.context = context
        self.feed = feed
        self.outputs = outputs
        self.snapshot = snapshot
    }

    func start() throws(NodeError) {
        context.scheduler.register(Self.timer) { [unowned self] in publish() }
        started = true
        reconcile()
    }

    func reconcile() {
        guard started, feed.isActive else { return }
        let changed = context.projections.appliedThrough != lastSequence || outputs() != lastOutputs
        let now = context.monotonic.nowNanoseconds()
        guard let last = lastPublishedNanoseconds else { return publish() }
        guard changed else { return }
        let due = last &+ Self.minimumIntervalNanoseconds
        if now >= due { publish() } else { context.scheduler.schedule(Self.timer, atNanoseconds: due) }
    }

    /// Builds and publishes a snapshot now, and arms the heartbeat.
    private func publish() {
        guard started, feed.isActive else { return }
        let now = context.monotonic.nowNanoseconds()
        lastPublishedNanoseconds = now
        if published.count == 64 { published.removeFirst() }
        published.append(now)
        lastSequence = context.projections.appliedThrough
        lastOutputs = outputs()
        feed.publish(snapshot())
        context.scheduler.schedule(Self.timer, atNanoseconds: now &+ Self.heartbeatNanoseconds)
    }

    func stop() {
        started = false
        context.scheduler.cancel(Self.timer)
        feed.finish()
    }
}

extension Node {
    /// The live view of the node now. On the loop.
    func snapshot() -> NodeSnapshot {
        loop.owner.check("snapshot")
        // The writer's figure: the loop never reads LMDB's map itself (it may be remapped).
        let live = liveStatus()
        return NodeSnapshot(state: projections, decisions: patterns.decisions, live: live,
                            logUsedBytes: live.log.usedBytes.map { UInt64($0) },
                            timeMicroseconds: clock.nowMicroseconds())
    }
}
