import Foundation
import Logging
import VigilCore
import VigilEvents
import VigilHubProtocol
import VigilLog

/// The box's side of the hub sync (docs/hub.md "Hub"): every event that leaves the box reaches the
/// hub exactly once, and what the hub acknowledged is logged as events.
///
/// The loop side (this component) only hands the worker snapshots of the sync state and appends
/// the events the worker asks for. The worker runs beside the loop: it reads the log in its own
/// read transactions, talks HTTPS, and never touches the node's state, so a slow or absent hub
/// never holds up the loop.
final class HubUplink: NodeComponent {
    /// What the sync needs of the configuration.
    struct Settings {
        /// Where `hub.json` is.
        var dataDirectory: String
        /// `site.name` and `site.location`: sent with every batch, and the nearest hub chosen by it.
        var site: (name: String, location: String)
        var policy: SharePolicy
        /// The key-file worker's: contacts, tolerance, verification keys.
        var exposure: ExposureSettings
    }

    unowned let context: any LogMaintenanceContext
    let settings: Settings
    /// The hub's time, read over its pinned TLS: a time the box can vouch for when its own clock
    /// is not synchronised (`AirAlerts.hubTime`). From the workers' threads.
    private let heardTime: @Sendable (UInt64) -> Void
    private var worker: UplinkWorker?
    private var downlink: DownlinkWorker?
    private var keyFiles: KeyFileWorker?
    private var keyFilesChanged = false
    /// What the workers keep failing at (`vigil status`).
    let problems: HubProblems
    /// The workers' set: `reload` starts a new one, and what an old worker still hands the loop
    /// (its task is cancelled, not awaited) is dropped.
    private(set) var generation: UInt64 = 0
    private var choice: HubChoice?
    /// Whether the box has joined a hub (`DATA/hub.json` lists one).
    var isJoined: Bool { choice != nil }
    private var tasks: [Task<Void, Never>] = []
    private var changed = false
    private var urgent: [UInt64] = []
    /// Events the workers asked for that the log refused (at once or at its commit): a worker
    /// waiting for one to apply must stop waiting.
    private var refusals: UInt64 = 0
    /// The key-file worker's appends the log refused (at once or at commit).
    private var keyFileRefusals: UInt64 = 0

    /// `problemsChanged`: whoever waits on the node's state (tests, a page) hears when the sync
    /// starts or stops failing, though no event says so; called from the workers' threads.
    init(context: any LogMaintenanceContext, settings: Settings, heardTime: @escaping @Sendable (UInt64) -> Void,
         problemsChanged: @escaping @Sendable () -> Void) {
        self.context = context
        self.settings = settings
        self.heardTime = heardTime
        problems = HubProblems(changed: problemsChanged)
    }

    func open() throws(NodeError) {
        assemble(try chooseHubs())
    }

    /// The hubs of `DATA/hub.json`, ordered for use; nil when the box has joined none.
    private func chooseHubs() throws(NodeError) -> HubChoice? {
        let links = try HubLinks.load(dataDirectory: settings.dataDirectory)
        guard !links.hubs.isEmpty else { return nil }
        do {
            return try HubChoice(links: links.hubs, node: context.nodeID, site: GeoPoint(text: settings.site.location),
                                 clock: context.clock, logger: context.logger, heardTime: heardTime)
        } catch {
            throw .unsupported("DATA/hub.json: \(error)")
        }
    }

    /// The workers for `choice` (none without a hub), of the current generation.
    private func assemble(_ choice: HubChoice?) {
        self.choice = choice
        guard let choice else {
            (worker, downlink, keyFiles) = (nil, nil, nil)
            return
        }
        let sink = HubSink(context.loopBound(self), generation: generation)
        let (nodeID, logger) = (context.nodeID, context.logger)
        worker = UplinkWorker(sink: sink, nodeID: nodeID, choice: choice, log: context.log, policy: settings.policy, site: settings.site,
                              problems: problems, logger: logger)
        downlink = DownlinkWorker(sink: sink, nodeID: nodeID, choice: choice, problems: problems, logger: logger)
        keyFiles = KeyFileWorker(sink: sink, nodeID: nodeID, clock: context.clock, log: context.log, exposure: settings.exposure,
                                 choice: choice, problems: problems, logger: logger)
    }

    func start() throws(NodeError) {
        guard let worker, let downlink, let keyFiles else { return }
        let now = snapshot()
        worker.offer(now)
        downlink.offer(now)
        keyFiles.offer(keyFileJob())
        tasks = [Task.detached { await worker.run() }, Task.detached { await downlink.run() }, Task.detached { await keyFiles.run() }]
    }

    func applied(_ event: Event) {
        guard worker != nil else { return }
        let kind = event.body.kind
        if kind.leavesBox || kind == .hubAcknowledged || kind == .hubEpochStarted || kind == .hubReceived || kind == .hubFeedRewound {
            changed = true
        }
        if SharePolicy.isUrgent(kind) { urgent.append(event.sequence) }
        if kind == .hubReceived || kind == .exposureKeysMatched { keyFilesChanged = true }
    }

    func reconcile() {
        if keyFilesChanged, let keyFiles {
            keyFilesChanged = false
            keyFiles.offer(keyFileJob())
        }
        guard let worker, changed else { return }
        changed = false
        let now = snapshot()
        worker.offer(now)
        downlink?.offer(now)
        urgent.removeAll()
    }

    func stop() {
        for t in tasks { t.cancel() }
        keyFiles?.close()
        downlink?.close()
        worker?.close()
        choice?.close()
    }

    /// `DATA/hub.json` changed while the node runs (`vigil hub join`, `add`): the workers stop and
    /// start again with the new list, from the log's marks (the upload's mark, the feed's cursor),
    /// so nothing is sent or taken twice. An exchange under way is given up; what it had appended
    /// stays. On the loop.
    func reload() throws(NodeError) {
        // A list that cannot be used leaves the sync running with the old one: it is read, and
        // its certificates loaded, before anything stops (once: the same choice is then used).
        let next = try chooseHubs()
        stop()
        tasks = []
        generation &+= 1
        changed = false
        keyFilesChanged = false
        problems.reset()
        assemble(next)
        try start()
        context.logger.notice("hub: the list of hubs changed; the sync starts again with it", metadata: ["hubs": "\(choice?.hubs.count ?? 0)"])
    }

    private func snapshot() -> UplinkSnapshot {
        let book = context.projections.hub
        // Running from memory, events past the last one stored are not in the log to upload: the
        // worker would look for them forever.
        let stored = context.fromMemory?.lastStored ?? .max
        return UplinkSnapshot(epoch: book.epoch, syncedThrough: book.syncedThrough,
                              appliedThrough: min(context.projections.appliedThrough, stored),
                              urgent: urgent.filter { $0 <= stored }, feedCursor: book.feedCursor, feedCursorDigest: book.feedCursorDigest,
                              feedRewinds: book.feedRewinds, epochFirst: book.epochFirstSequence, refusals: refusals)
    }

    func refused(_ event: Event) {
        switch event.body.kind {
        case .hubAcknowledged, .hubEpochStarted, .hubReceived, .hubFeedRewound: appendRefused()
        case .exposureKeysMatched, .exposureDetected:
            // (An exposure the CLI sent counts too: the worker then only matches once more.)
            keyFileRefusals &+= 1
            keyFiles?.offer(keyFileJob())
        default: break
        }
    }

    /// Appends for a worker, on the loop, in order, stopping at the first the log refuses (a
    /// later feed item must not be taken before an earlier one); a refusal at once is told to the
    /// workers like one at commit (`refused`).
    func append(forWorker bodies: [EventBody], generation: UInt64) {
        guard generation == self.generation else { return }
        for body in bodies where context.append(body, time: nil) == nil {
            appendRefused()
            return
        }
    }

    /// Appends a key file's exposures and outcome, stopping at the first refusal (the outcome
    /// then never goes without its exposures). Returns whether all were taken, and the count of
    /// refusals after it: the worker's mark for "applied, or refused since".
    func append(forKeyFiles bodies: [EventBody], generation: UInt64) -> (accepted: Bool, refusals: UInt64) {
        guard generation == self.generation else { return (false, keyFileRefusals) }
        for body in bodies where context.append(body, time: nil) == nil {
            keyFileRefusals &+= 1
            return (false, keyFileRefusals)
        }
        return (true, keyFileRefusals)
    }

    private func appendRefused() {
        refusals &+= 1
        let now = snapshot()
        worker?.offer(now)
        downlink?.offer(now)
    }

    /// The oldest key file offered and not settled, for the key-file worker.
    private func keyFileJob() -> KeyFileJob {
        let book = context.projections.exposures
        let offer = book.nextKeyFileOffer
        return KeyFileJob(offer: offer, known: offer == nil ? [:] : ExposureKeyMatching.known(book), refusals: keyFileRefusals)
    }
}

/// What the worker needs of the node's state, as of one loop turn.
struct UplinkSnapshot: Sendable, Equatable {
    var epoch: UInt32
    var syncedThrough: UInt64
    var appliedThrough: UInt64
    /// Calls for help applied since the last snapshot.
    var urgent: [UInt64]
    /// The hub feed's position the box has taken everything up to, and the fingerprint of the
    /// item it took there.
    var feedCursor: UInt64 = 0
    var feedCursorDigest: UInt64 = 0
    /// Times the feed was found given out again (`HubFeedRewound`).
    var feedRewinds: UInt64 = 0
    /// The first sequence of the current epoch.
    var epochFirst: UInt64 = 1
    /// Worker appends the log refused so far.
    var refusals: UInt64 = 0
}

/// The log refused an event a hub worker appended (the log is failing): the exchange is given up
/// and retried with back-off, instead of waiting for an event that will never apply.
struct HubAppendRefused: Error, CustomStringConvertible {
    var description: String { "the log refused the sync's event; retrying" }
}
