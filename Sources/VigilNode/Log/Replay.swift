import Foundation
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
                fresh.calls.tree = checkpoint.calls.tree
                fresh.warnings.settings = checkpoint.warnings.settings
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

/// A past moment of the log, for after-incident review (`vigil status --at`): a wall-clock time,
/// or the position after an event.
public enum PastMoment: Sendable, Equatable {
    /// Every event up to the first one logged after this time (µs since the epoch). A clock that
    /// was stepped back makes a time name more than one place in the log: this is the first.
    case time(UInt64)
    /// Every event up to and including this sequence.
    case sequence(UInt64)
}

/// The projections as they were at a past moment, rebuilt from what the log holds now.
extension PastMoment {
    /// A past moment as people write it: ISO 8601 with its zone (`2026-11-24T18:30:00Z`), or a
    /// duration ago (`90m ago`, `-90m`). `vigil status --at` and the page's time travel take it.
    public static func parse(_ text: String, nowMicroseconds now: UInt64) throws(PastMomentError) -> PastMoment {
        let text = text.trimmingCharacters(in: .whitespaces)
        let relative = text.hasPrefix("-") ? String(text.dropFirst()) : text.hasSuffix(" ago") ? String(text.dropLast(4)) : nil
        if let relative {
            guard let ago = HumanDuration.parseMicroseconds(relative.trimmingCharacters(in: .whitespaces)), ago > 0 else {
                throw PastMomentError(message: "a duration ago is written like \"90m ago\" or -2h")
            }
            return .time(now > ago ? now - ago : 0)
        }
        let date = (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle()))
        guard let date, date.timeIntervalSince1970 >= 0 else {
            throw PastMomentError(message: "not a time; write it in ISO 8601 with its zone (2026-11-24T18:30:00Z) or as \"90m ago\"")
        }
        return .time(UInt64(date.timeIntervalSince1970 * 1_000_000))
    }
}

public struct PastMomentError: Error, CustomStringConvertible, Equatable {
    public var message: String
    public var description: String { message }
    public init(message: String) { self.message = message }
}

public struct PastState: Sendable {
    public var state: Projections
    /// The last event applied (0: none).
    public var throughSequence: UInt64
    /// Whether the rebuild started from the checkpoint (it covered the moment's whole prefix).
    public var fromCheckpoint: Bool
    /// Events applied on top of the start.
    public var applied: Int
}

extension Replay {
    /// Rebuilds every projection as it was at `moment`: the log's prefix up to it, replayed. The
    /// node's checkpoint is the start when the whole of it lies before the moment (its newest event
    /// time and its sequence are both within it), else the log's first record. What retention and
    /// compaction have deleted is not in the log any more: contact data of a moment older than
    /// their cutoffs is what they left (the caller says so).
    public static func state(_ log: EventLog, settings: ProjectionSettings, at moment: PastMoment) throws -> PastState {
        try log.read { txn in
            var state = Projections(settings: settings)
            var fromCheckpoint = false
            if let stored = try txn.checkpoint(named: Projections.checkpointName),
               let decoded = try? Projections.decoded(stored.state) {
                let covered = switch moment {
                case .sequence(let n): decoded.appliedThrough <= n
                case .time(let t): decoded.health.lastEventMicroseconds <= t && decoded.appliedThrough > 0
                }
                if covered {
                    state = decoded
                    fromCheckpoint = true
                } else {
                    // The node's settings, so the past is rebuilt as the node built it.
                    state.devices.pruneAfterMicroseconds = decoded.devices.pruneAfterMicroseconds
                    state.devices.pruneIntervalMicroseconds = decoded.devices.pruneIntervalMicroseconds
                    state.outbox.retryBaseMicroseconds = decoded.outbox.retryBaseMicroseconds
                    state.outbox.retryMaxMicroseconds = decoded.outbox.retryMaxMicroseconds
                    state.outbox.keepDelivered = decoded.outbox.keepDelivered
                    state.escalations.context = decoded.escalations.context
                    state.calls.tree = decoded.calls.tree
                    state.warnings.settings = decoded.warnings.settings
                }
            }
            var through = state.appliedThrough
            var applied = 0
            try txn.forEach(from: state.appliedThrough + 1) { result in
                let sequence: UInt64
                switch result {
                case .success(let view):
                    sequence = view.sequence
                    if case .time(let t) = moment, view.timeMicroseconds > t { return false }
                case .failure(let corrupt):
                    sequence = corrupt.sequence
                }
                if case .sequence(let n) = moment, sequence > n { return false }
                apply(result, to: &state)
                through = sequence
                applied += 1
                return true
            }
            return PastState(state: state, throughSequence: through, fromCheckpoint: fromCheckpoint, applied: applied)
        }
    }
}
