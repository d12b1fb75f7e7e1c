import Foundation
import Logging
import VigilCore
import VigilEvents
import VigilHubProtocol
import VigilLog

/// The box's side of the hub sync (README "Hub"): every event that leaves the box reaches the
/// hub exactly once, and what the hub acknowledged is logged as events.
///
/// The loop side (this component) only hands the worker snapshots of the sync state and appends
/// the events the worker asks for. The worker runs beside the loop: it reads the log in its own
/// read transactions, talks HTTPS, and never touches the node's state, so a slow or absent hub
/// never holds up the loop.
final class HubUplink: NodeComponent {
    unowned let node: Node
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
    private var tasks: [Task<Void, Never>] = []
    private var changed = false
    private var urgent: [UInt64] = []
    /// Events the workers asked for that the log refused (at once or at its commit): a worker
    /// waiting for one to apply must stop waiting.
    private var refusals: UInt64 = 0
    /// The key-file worker's appends the log refused (at once or at commit).
    private var keyFileRefusals: UInt64 = 0

    init(node: Node) {
        self.node = node
        // Whoever waits on the node's state (tests, a page) hears when the sync starts or stops
        // failing, though no event says so.
        problems = HubProblems { [weak node] in node?.onLoop { $0.recheckState() } }
    }

    func open() throws(NodeError) {
        try choose()
    }

    /// The hubs of `DATA/hub.json` and the workers for them (none without a hub).
    private func choose() throws(NodeError) {
        let links = try HubLinks.load(dataDirectory: node.configuration.dataDirectory)
        guard !links.hubs.isEmpty else {
            (worker, downlink, keyFiles, choice) = (nil, nil, nil, nil)
            return
        }
        let choice: HubChoice
        do {
            choice = try HubChoice(links: links.hubs, node: node.nodeID,
                                   site: GeoPoint(text: node.configuration.projections.ladder.siteLocation),
                                   clock: node.clock, logger: node.logger)
        } catch {
            throw .unsupported("DATA/hub.json: \(error)")
        }
        worker = UplinkWorker(node: node, choice: choice, log: node.log,
                              policy: SharePolicy(shareContacts: node.configuration.hubShareContacts,
                                                  shareOccupancy: node.configuration.hubShareOccupancy),
                              problems: problems, generation: generation, logger: node.logger)
        downlink = DownlinkWorker(node: node, choice: choice, problems: problems, generation: generation, logger: node.logger)
        keyFiles = KeyFileWorker(node: node, choice: choice, problems: problems, generation: generation, logger: node.logger)
        self.choice = choice
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
        // A list that cannot be used leaves the sync running with the old one: it is read (and
        // its certificates loaded) before anything stops.
        let links = try HubLinks.load(dataDirectory: node.configuration.dataDirectory)
        if !links.hubs.isEmpty {
            do {
                try HubChoice(links: links.hubs, node: node.nodeID, site: nil, clock: node.clock, logger: node.logger).close()
            } catch {
                throw .unsupported("DATA/hub.json: \(error)")
            }
        }
        stop()
        tasks = []
        generation &+= 1
        changed = false
        keyFilesChanged = false
        problems.reset()
        try choose()
        try start()
        node.logger.notice("hub: the list of hubs changed; the sync starts again with it", metadata: ["hubs": "\(choice?.hubs.count ?? 0)"])
    }

    private func snapshot() -> UplinkSnapshot {
        let book = node.projections.hub
        return UplinkSnapshot(epoch: book.epoch, syncedThrough: book.syncedThrough, appliedThrough: node.projections.appliedThrough,
                              urgent: urgent, feedCursor: book.feedCursor, feedCursorDigest: book.feedCursorDigest,
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
        for body in bodies where node.append(body) == nil {
            appendRefused()
            return
        }
    }

    /// Appends a key file's exposures and outcome, stopping at the first refusal (the outcome
    /// then never goes without its exposures). Returns whether all were taken, and the count of
    /// refusals after it: the worker's mark for "applied, or refused since".
    func append(forKeyFiles bodies: [EventBody], generation: UInt64) -> (accepted: Bool, refusals: UInt64) {
        guard generation == self.generation else { return (false, keyFileRefusals) }
        for body in bodies where node.append(body) == nil {
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
        let book = node.projections.exposures
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

/// The upload loop beside the node's loop.
final class UplinkWorker: @unchecked Sendable {
    let node: Node
    let choice: HubChoice
    let log: EventLog
    let policy: SharePolicy
    let logger: Logger
    /// `site.name` and `site.location`, sent with every batch for the coordinators' map.
    let site: (name: String, location: String)
    /// The newest snapshot, with every call for help since the last one taken.
    private let snapshots = SnapshotMailbox()

    /// A batch holds at most this many events, and this many payload bytes.
    static let batchEvents = 1_000
    static let batchBytes = 1 << 20
    /// Records read for one batch at most (a long run of scan hits is skipped in steps).
    static let scanLimit = 200_000

    /// The set of workers it belongs to (`HubUplink.generation`).
    let generation: UInt64

    init(node: Node, choice: HubChoice, log: EventLog, policy: SharePolicy, problems: HubProblems, generation: UInt64, logger: Logger) {
        retry = HubRetry(.upload, problems: problems)
        self.generation = generation
        self.node = node
        self.choice = choice
        self.using = choice.current()
        self.log = log
        self.policy = policy
        self.logger = logger
        let ladder = node.configuration.projections.ladder
        site = (ladder.siteName, ladder.siteLocation)
    }

    /// The box's account of itself with a batch that ends at `through`.
    private func report(through: UInt64) -> BoxReport {
        BoxReport(site: site.name.isEmpty ? nil : site.name, location: site.location.isEmpty ? nil : site.location,
                  backlog: state.appliedThrough > through ? state.appliedThrough - through : 0)
    }

    /// From the loop: the latest state (calls for help accumulate until the worker takes them).
    func offer(_ snapshot: UplinkSnapshot) { snapshots.offer(snapshot) }

    func close() { snapshots.close() }

    /// The hub of the exchange under way (`HubChoice`), chosen at the start of each.
    private var using: (index: Int, hub: HubChoice.Hub)
    private var client: HubClient { using.hub.client }
    private var hub: String { using.hub.fingerprint }

    // MARK: The loop

    private var state = UplinkSnapshot(epoch: 0, syncedThrough: 0, appliedThrough: 0, urgent: [])
    /// Calls for help not yet sent.
    private var urgentPending: [UInt64] = []
    /// Sequences after `syncedThrough` known to hold nothing that leaves the box.
    private var emptyThrough: UInt64 = 0
    private var checkedHub = false
    private var retry: HubRetry

    func run() async {
        guard let first = await snapshots.next() else { return }
        take(first)
        while !Task.isCancelled {
            let next = choice.current()
            // Another hub of the network: what it holds of this box is asked first.
            if next.index != using.index { checkedHub = false }
            using = next
            // Everything offered so far, without waiting.
            do {
                let progressed = try await step()
                retry.succeeded()
                choice.answered(using.index)
                if progressed { continue }
            } catch is CancellationError {
                return
            } catch {
                // The hub unreachable or refusing, or the log unreadable for a moment: try again,
                // at once at the next nearest hub when this one did not answer.
                checkedHub = false
                if HubChoice.isNoAnswer(error), choice.didNotAnswer(using.index, error) { continue }
                guard await retry.wait(after: error, "hub: sync failed; retrying", logger) else { return }
                continue
            }
            // Nothing to send: wait for the loop's next snapshot.
            guard let next = await snapshots.next() else { return }
            take(next)
        }
    }

    private func take(_ snapshot: UplinkSnapshot) {
        if snapshot.epoch != state.epoch || snapshot.syncedThrough < state.syncedThrough { emptyThrough = 0 }
        urgentPending.append(contentsOf: snapshot.urgent)
        state = snapshot
        urgentPending.removeAll { $0 <= state.syncedThrough }
    }

    /// One exchange with the hub. Returns whether it made progress (so the next one follows at
    /// once); false when there is nothing to send.
    private func step() async throws -> Bool {
        if !checkedHub {
            try await checkHub()
            checkedHub = true
        }
        if !urgentPending.isEmpty {
            let sequences = urgentPending
            let events = try read(sequences: Set(sequences))
            if !events.isEmpty {
                let batch = UploadBatch(node: NodeIDText.format(node.nodeID), epoch: state.epoch, epochFirst: state.epochFirst,
                                        from: events[0].seq, through: events[events.count - 1].seq, urgent: true, events: events,
                                        box: report(through: state.syncedThrough))
                _ = try await upload(batch)
            }
            urgentPending.removeAll { sequences.contains($0) }
            return true
        }
        guard state.appliedThrough > max(state.syncedThrough, emptyThrough) else { return false }
        let from = state.syncedThrough + 1
        let (events, through) = try readBatch(after: max(state.syncedThrough, emptyThrough), upTo: state.appliedThrough)
        guard !events.isEmpty else {
            emptyThrough = through
            return through < state.appliedThrough
        }
        let batch = UploadBatch(node: NodeIDText.format(node.nodeID), epoch: state.epoch, epochFirst: state.epochFirst,
                                from: from, through: through, events: events, box: report(through: through))
        guard let answer = try await upload(batch) else { return true }
        let covered = min(answer.heldThrough, batch.through)
        guard covered > state.syncedThrough else { return false }
        var ack = HubAcknowledged()
        ack.hub = hub
        ack.epoch = state.epoch
        ack.throughSequence = covered
        ack.accepted = UInt64(clamping: answer.accepted)
        try await appendAndWait(.hubAcknowledged(ack)) { $0.syncedThrough >= covered || $0.epoch != ack.epoch }
        return true
    }

    /// Sends a batch; a conflict or a hub that holds less than the box thinks is answered by
    /// logging what changes (a new epoch, the hub's mark) and nil is returned.
    private func upload(_ batch: UploadBatch) async throws -> UploadAnswer? {
        let refusal: Refusal
        do {
            let answer = try await client.upload(batch)
            logger.debug("hub: batch stored", metadata: ["from": "\(batch.from)", "through": "\(batch.through)",
                                                        "events": "\(batch.events.count)", "accepted": "\(answer.accepted)"])
            return answer
        } catch {
            guard case .refused(409, let r) = error else { throw error }
            refusal = r
        }
        switch refusal.error {
        case "conflict":
            logger.error("hub: the hub holds other content at one of this box's sequences; uploading under a new epoch",
                         metadata: ["epoch": "\(batch.epoch)", "seq": "\(refusal.seq ?? 0)"])
            try await startEpoch(reason: .conflict, hubHeld: refusal.heldThrough ?? 0)
        case "out_of_order":
            // The hub holds less than this box recorded (a hub restored from a backup): its mark
            // is the truth, and what it lacks is sent again.
            let held = refusal.heldThrough ?? 0
            logger.warning("hub: the hub holds less than it acknowledged; sending again from its mark",
                           metadata: ["hub_held_through": "\(held)", "box_synced_through": "\(state.syncedThrough)"])
            var ack = HubAcknowledged()
            ack.hub = hub
            ack.epoch = state.epoch
            ack.throughSequence = held
            try await appendAndWait(.hubAcknowledged(ack)) { $0.syncedThrough <= held || $0.epoch != ack.epoch }
        default:
            throw HubClient.Failure.refused(status: 409, refusal)
        }
        return nil
    }

    /// Asks the hub what it holds of this box: more than the box's own log (a restored SD card)
    /// starts a new epoch, so no identity is used twice.
    private func checkHub() async throws {
        let held = try await client.syncState(node: node.nodeID)
        guard let mine = held.epochs.first(where: { $0.epoch == state.epoch }) else { return }
        let last = try log.read { try $0.lastSequence() }
        if mine.highest > last || mine.heldThrough > last {
            logger.warning("hub: the hub holds more of this box's log than the box has; starting a new epoch",
                           metadata: ["hub_highest": "\(mine.highest)", "box_last": "\(last)"])
            try await startEpoch(reason: .hubAhead, hubHeld: mine.heldThrough, known: held)
        }
        // The hub holding more than this box acknowledged is not taken on trust: the upload goes
        // on from the box's own mark, and the hub's hashes tell duplicates from conflicts.
    }

    /// A new epoch, numbered after every epoch the hub knows of this box (a restored card may
    /// remember fewer than the hub has).
    private func startEpoch(reason: HubEpochStarted.Reason, hubHeld: UInt64, known: SyncState? = nil) async throws {
        let held: SyncState
        if let known { held = known } else { held = try await client.syncState(node: node.nodeID) }
        var e = HubEpochStarted()
        e.hub = hub
        e.epoch = max(state.epoch, held.epochs.map(\.epoch).max() ?? 0) + 1
        e.firstSequence = state.syncedThrough + 1
        e.reason = reason
        e.hubHeldThrough = hubHeld
        let epoch = e.epoch
        try await appendAndWait(.hubEpochStarted(e)) { $0.epoch >= epoch }
    }

    /// Appends on the loop and waits for a snapshot in which `done` holds (the event applied).
    private func appendAndWait(_ body: EventBody, until done: @escaping (UplinkSnapshot) -> Bool) async throws {
        let refusals = state.refusals
        let generation = self.generation
        node.onLoop { node in node.uplink.append(forWorker: [body], generation: generation) }
        while !done(state) {
            try Task.checkCancellation()
            guard let next = await snapshots.next() else { throw CancellationError() }
            take(next)
            if state.refusals != refusals { throw HubAppendRefused() }
        }
    }

    // MARK: Reading the log

    /// The events after `after` that leave the box, up to a batch's bounds; and the last sequence
    /// the batch covers (everything up to it was read).
    private func readBatch(after: UInt64, upTo limit: UInt64) throws -> ([UploadedEvent], UInt64) {
        var events: [UploadedEvent] = []
        var bytes = 0
        var through = after
        var scanned = 0
        let policy = policy
        try log.read { txn in
            try txn.forEach(from: after + 1) { result in
                guard case .success(let view) = result else {
                    if case .failure(let corrupt) = result { through = corrupt.sequence }
                    return true
                }
                guard view.sequence <= limit else { return false }
                scanned += 1
                if let kind = EventKind(rawValue: Int(view.kind)), kind.leavesBox,
                   let body = try? EventCodec.decode(kind: view.kind, payload: view.payload, sequence: view.sequence),
                   let e = UploadedEvent(Event(sequence: view.sequence, timeMicroseconds: view.timeMicroseconds, body: body), policy: policy) {
                    if !events.isEmpty, events.count >= Self.batchEvents || bytes + e.payload.count > Self.batchBytes { return false }
                    events.append(e)
                    bytes += e.payload.count
                }
                through = view.sequence
                return scanned < Self.scanLimit
            }
        }
        return (events, through)
    }

    /// The events at `sequences` that leave the box.
    private func read(sequences: Set<UInt64>) throws -> [UploadedEvent] {
        guard let low = sequences.min(), let high = sequences.max() else { return [] }
        var events: [UploadedEvent] = []
        let policy = policy
        try log.read { txn in
            try txn.forEach(from: low) { result in
                guard case .success(let view) = result else { return true }
                guard view.sequence <= high else { return false }
                guard sequences.contains(view.sequence),
                      let body = try? EventCodec.decode(kind: view.kind, payload: view.payload, sequence: view.sequence),
                      let e = UploadedEvent(Event(sequence: view.sequence, timeMicroseconds: view.timeMicroseconds, body: body), policy: policy)
                else { return true }
                events.append(e)
                return true
            }
        }
        return events
    }
}
