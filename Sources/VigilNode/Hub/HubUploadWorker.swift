import Foundation
import Logging
import VigilCore
import VigilEvents
import VigilHubProtocol
import VigilLog

/// The upload loop beside the node's loop.
final class UplinkWorker: @unchecked Sendable {
    let sink: HubSink
    let nodeID: UInt64
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

    init(sink: HubSink, nodeID: UInt64, choice: HubChoice, log: EventLog, policy: SharePolicy, site: (name: String, location: String),
         problems: HubProblems, logger: Logger) {
        retry = HubRetry(.upload, problems: problems)
        self.generation = sink.generation
        self.sink = sink
        self.nodeID = nodeID
        self.choice = choice
        self.using = choice.current()
        self.log = log
        self.policy = policy
        self.logger = logger
        self.site = site
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
                let batch = UploadBatch(node: NodeIDText.format(nodeID), epoch: state.epoch, epochFirst: state.epochFirst,
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
        let batch = UploadBatch(node: NodeIDText.format(nodeID), epoch: state.epoch, epochFirst: state.epochFirst,
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
        let held = try await client.syncState(node: nodeID)
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
        if let known { held = known } else { held = try await client.syncState(node: nodeID) }
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
        sink.append([body])
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
