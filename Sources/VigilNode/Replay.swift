import VigilSystem
import VigilCore
import VigilEvents
import VigilLog

/// Feeding stored records to projections: shared by the node's restore, `vigil replay`,
/// `vigil status` and the benchmarks, so all of them fold the log the same way.
public enum Replay {
    /// Turns one stored record into a projection input without copying its payload.
    @inline(__always)
    public static func input(_ result: Result<StoredRecordView, CorruptRecord>) -> ProjectionInput {
        switch result {
        case .failure(let corrupt):
            return .undecodable(EventDecodingError(sequence: corrupt.sequence, reason: .envelope(corrupt.reason)))
        case .success(let view):
            do {
                let body = try EventCodec.decode(kind: view.kind, payload: view.payload, sequence: view.sequence)
                return .event(Event(sequence: view.sequence, timeMicroseconds: view.timeMicroseconds, body: body))
            } catch {
                return .undecodable(error)
            }
        }
    }

    /// Applies one stored record to `state`: the same as `state.apply(input(result))`, but a
    /// ScanHit (about 90 % of a log) is decoded into plain fields and folded without building the
    /// generated message; anything the fast path does not take goes through `input`.
    @inline(__always)
    public static func apply(_ result: Result<StoredRecordView, CorruptRecord>, to state: inout Projections) {
        if case .success(let view) = result, view.kind == scanHitKind,
           let hit = EventCodec.scanHitFields(payload: view.payload), !state.needsWholeEvent(forScanHit: hit) {
            state.apply(scanHit: hit, sequence: view.sequence, timeMicroseconds: view.timeMicroseconds)
        } else {
            state.apply(input(result))
        }
    }

    private static let scanHitKind = UInt32(EventKind.scanHit.rawValue)

    /// Applies every record after `state.appliedThrough` to `state`, in one read transaction.
    /// Returns how many records were applied.
    @discardableResult
    public static func catchUp(_ state: inout Projections, from log: EventLog) throws(LogError) -> Int {
        var applied = 0
        var current = state // on a read error, `state` is left as it was
        try log.read { txn in
            try txn.forEach(from: current.appliedThrough + 1) { result in
                apply(result, to: &current)
                applied += 1
                return true
            }
        }
        state = current
        return applied
    }

    /// The state as checkpointed, if a readable checkpoint exists.
    public static func checkpoint(in log: EventLog) throws(LogError) -> Projections? {
        guard let stored = try log.read({ try $0.checkpoint(named: Projections.checkpointName) }) else { return nil }
        return try? Projections.decoded(stored.state)
    }
}

/// The outcome of `vigil replay`: the state rebuilt from sequence 0 against the state the node
/// maintains incrementally (its checkpoint plus the tail after it), compared byte for byte.
public struct ReplayReport: Sendable {
    public var rebuilt: Projections
    public var incremental: Projections
    public var checkpointSequence: UInt64?
    public var replayedEvents: Int
    public var tailEvents: Int
    public var seconds: Double
    public var rebuiltBytes: [UInt8]
    public var incrementalBytes: [UInt8]
    public var matches: Bool { rebuiltBytes == incrementalBytes }
}

extension Replay {
    /// Rebuilds every projection from the start of the log and compares it with checkpoint + tail,
    /// all inside one read transaction so a node writing meanwhile cannot skew the comparison.
    public static func verify(_ log: EventLog, settings: ProjectionSettings) throws -> ReplayReport {
        try log.read { txn in
            let stored = try txn.checkpoint(named: Projections.checkpointName)
            let checkpoint = stored.flatMap { try? Projections.decoded($0.state) }
            var fresh = Projections(settings: settings)
            // Use the settings the node used, so a difference means a reducer bug, not a setting.
            if let checkpoint {
                fresh.devices.pruneAfterMicroseconds = checkpoint.devices.pruneAfterMicroseconds
                fresh.devices.pruneIntervalMicroseconds = checkpoint.devices.pruneIntervalMicroseconds
                fresh.outbox.retryBaseMicroseconds = checkpoint.outbox.retryBaseMicroseconds
                fresh.outbox.retryMaxMicroseconds = checkpoint.outbox.retryMaxMicroseconds
                fresh.outbox.keepDelivered = checkpoint.outbox.keepDelivered
                fresh.escalations.context = checkpoint.escalations.context
            }
            let started = monotonicNanoseconds()
            var replayed = 0
            try txn.forEach(from: 0) { result in
                apply(result, to: &fresh)
                replayed += 1
                return true
            }
            let seconds = Double(monotonicNanoseconds() - started) / 1e9
            var incremental = checkpoint ?? fresh
            var tail = 0
            if checkpoint != nil {
                try txn.forEach(from: incremental.appliedThrough + 1) { result in
                    apply(result, to: &incremental)
                    tail += 1
                    return true
                }
            }
            return ReplayReport(rebuilt: fresh, incremental: incremental, checkpointSequence: stored?.sequence,
                                replayedEvents: replayed, tailEvents: tail, seconds: seconds,
                                rebuiltBytes: try fresh.encoded(), incrementalBytes: try incremental.encoded())
        }
    }

    /// The current state for readers outside the node: checkpoint plus tail, one snapshot.
    public static func currentState(_ log: EventLog, settings: ProjectionSettings) throws -> Projections {
        try log.read { txn in
            var state = Projections(settings: settings)
            if let stored = try txn.checkpoint(named: Projections.checkpointName),
               let decoded = try? Projections.decoded(stored.state) {
                state = decoded
            }
            try txn.forEach(from: state.appliedThrough + 1) { result in
                apply(result, to: &state)
                return true
            }
            return state
        }
    }
}
