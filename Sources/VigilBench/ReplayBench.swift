import VigilCore
import VigilEvents
import VigilLog
import VigilNode
import VigilSystem

/// A log of `plan.replayEvents` mixed events (scan hits sheddable, the rest critical), appended as
/// the node appends them, without syncs: the input of the replay and salvage benchmarks.
func buildMixedLog(directory: String, plan: Plan) throws {
    try buildMixedLog(directory: directory, events: plan.replayEvents, plan: plan)
}

func buildMixedLog(directory: String, events count: Int, plan: Plan) throws {
    var configuration = LogConfiguration(directory: directory)
    configuration.sync = .none
    configuration.initialMapSize = 512 << 20
    var events = MixedWorkload()
    let result = try runVigilAppend(directory: directory, configuration: configuration, count: count,
                                    pacing: .saturated(maxInFlight: plan.maxInFlight), device: nil) { _ in
        let next = events.next()
        let record = LogRecord(kind: next.kind, timeMicroseconds: next.time, payload: next.payload)
        return (record, next.kind == UInt32(EventKind.scanHit.rawValue) ? .sheddable : .critical)
    }
    guard result.acknowledged == count else {
        throw BenchError("the log has \(result.acknowledged) events, expected \(count) (shed \(result.shed))")
    }
}

/// replay_eps (decode + projections, with its target and whether it is met), replay_decode_eps
/// (decode only, as replay decodes) against a raw LMDB cursor walk over the same log, and
/// replay_share lines (with replay_eps): the fraction of replay time spent decoding and in each
/// projection, so a projection that makes replay slow shows which one it is. The log is built once with SyncMode.none; every pass reads it
/// from the page cache (warm), which is what a node restart after a clean stop sees.
struct ReplayBench {
    let plan: Plan
    let reporter: Reporter

    func run() throws {
        try withTemporaryDirectory("replay") { directory in
            progress("replay: building a log of \(plan.replayEvents) mixed events")
            try build(directory)
            var full: [Double] = []
            var decodeOnly: [Double] = []
            var raw: [Double] = []
            var states: Set<[UInt8]> = []
            var shares: [String: [Double]] = [:]
            for run in 1...plan.runs {
                let walk = try RawLMDB.cursorWalk(directory: directory)
                guard walk.entries == plan.replayEvents else {
                    throw BenchError("raw walk saw \(walk.entries) entries, expected \(plan.replayEvents)")
                }
                raw.append(perSecond(walk.entries, nanoseconds: walk.nanoseconds))
                let decoded = try replayDecodeOnly(directory)
                decodeOnly.append(perSecond(decoded.events, nanoseconds: decoded.nanoseconds))
                let replayed = try replay(directory)
                full.append(perSecond(Int(replayed.projections.health.totalEvents), nanoseconds: replayed.nanoseconds))
                states.insert(try replayed.projections.encoded())
                let parts = try timeParts(directory)
                let total = Double(parts.reduce(0) { $0 + $1.nanoseconds })
                for part in parts { shares[part.name, default: []].append(Double(part.nanoseconds) / max(total, 1)) }
                progress("replay run \(run)/\(plan.runs): raw \(Int(raw.last ?? 0)) ev/s, decode \(Int(decodeOnly.last ?? 0)) ev/s, "
                         + "decode+apply \(Int(full.last ?? 0)) ev/s (\(replayed.projections.devices.devices.count) devices)")
            }
            guard states.count == 1 else { throw BenchError("replays of one log gave \(states.count) different states") }
            let context: [(String, JSONValue)] = [
                ("events", .int(plan.replayEvents)), ("runs", .int(plan.runs)), ("cache", .string("warm")),
            ]
            let value = median(full) ?? 0
            reporter.emit(MetricLine(metric: "replay_eps", value: value, unit: "events/s",
                                     baseline: median(raw), context: context + [
                                         ("value_min", .optional(full.min())), ("value_max", .optional(full.max())),
                                         ("state_bytes", .int(states.first?.count ?? 0)),
                                         ("target", .int(Self.target)), ("met", .bool(value >= Double(Self.target))),
                                     ]))
            reporter.emit(MetricLine(metric: "replay_decode_eps", value: median(decodeOnly) ?? 0, unit: "events/s",
                                     baseline: median(raw), context: context))
            // Where replay time goes (see `timeParts`): each part's median share, and that share
            // of the median replay's time per event.
            let nanosecondsPerEvent = 1e9 / max(value, 1)
            for part in ["decode"] + ProjectionPass.allCases.map(\.rawValue) {
                let share = median(shares[part] ?? []) ?? 0
                reporter.emit(MetricLine(metric: "replay_share", value: share, unit: "fraction of replay time", context: context + [
                    ("part", .string(part)), ("ns_per_event", .double(share * nanosecondsPerEvent)),
                    ("share_min", .optional(shares[part]?.min())), ("share_max", .optional(shares[part]?.max())),
                ]), with: "replay_eps")
            }
        }
    }

    /// The goal of issue 9: replay at 2M events/s or more.
    static let target = 2_000_000

    private func build(_ directory: String) throws {
        try buildMixedLog(directory: directory, plan: plan)
    }

    /// Decode + Projections.apply over the whole log, timed from the read transaction's start;
    /// each record goes through `Replay.apply`, as in the node's restore and `vigil replay`.
    private func replay(_ directory: String) throws -> (projections: Projections, nanoseconds: UInt64) {
        let log = try EventLog.openReadOnly(directory: directory)
        var projections = Projections()
        let start = monotonicNanoseconds()
        try log.read { txn in
            try txn.forEach { result in
                Replay.apply(result, to: &projections)
                return true
            }
        }
        let elapsed = monotonicNanoseconds() - start
        guard projections.health.undecodable == 0, projections.health.totalEvents == UInt64(plan.replayEvents) else {
            throw BenchError("replay applied \(projections.health.totalEvents) events, \(projections.health.undecodable) undecodable")
        }
        return (projections, elapsed)
    }

    /// Decode only, the way replay decodes: the codec's share of replay.
    private func replayDecodeOnly(_ directory: String) throws -> (events: Int, nanoseconds: UInt64) {
        let log = try EventLog.openReadOnly(directory: directory)
        var events = 0
        var scanHits = 0
        let start = monotonicNanoseconds()
        try log.read { txn in
            try txn.forEach { result in
                switch ReplayItem(result) {
                case .scanHit: scanHits += 1
                case .input(.event): break
                case .input(.undecodable): throw BenchError("undecodable record in the replay log")
                }
                events += 1
                return true
            }
        }
        let elapsed = monotonicNanoseconds() - start
        guard events == plan.replayEvents, scanHits > 0 else { throw BenchError("decode pass saw \(events) events") }
        return (events, elapsed)
    }

    /// Replay split into its parts, in nanoseconds: reading and decoding records as replay does
    /// ("decode"), then each projection folding them as `Projections` hands them over. Records are
    /// decoded a chunk at a time into memory and every projection is timed over the chunk, so the
    /// clock is read a few times per chunk, not per event; the time to walk the chunk alone is
    /// subtracted from each projection's.
    private func timeParts(_ directory: String) throws -> [(name: String, nanoseconds: UInt64)] {
        let log = try EventLog.openReadOnly(directory: directory)
        let passes = ProjectionPass.allCases
        var state = Projections()
        var chunk: [ReplayItem] = []
        chunk.reserveCapacity(Self.chunkSize)
        var decode: UInt64 = 0
        var folding = [UInt64](repeating: 0, count: passes.count)
        var iterating: UInt64 = 0
        func fold() {
            // Walking the chunk and dispatching to no projection is taken off every projection's time.
            let start = monotonicNanoseconds()
            for item in chunk { Self.apply(item, nil, to: &state) }
            let walk = monotonicNanoseconds() - start
            iterating += walk
            for (index, pass) in passes.enumerated() {
                let start = monotonicNanoseconds()
                for item in chunk { Self.apply(item, pass, to: &state) }
                let elapsed = monotonicNanoseconds() - start
                folding[index] += elapsed > walk ? elapsed - walk : 0
            }
            chunk.removeAll(keepingCapacity: true)
        }
        try log.read { txn in
            var start = monotonicNanoseconds()
            try txn.forEach { result in
                chunk.append(ReplayItem(result))
                if chunk.count == Self.chunkSize {
                    decode += monotonicNanoseconds() - start
                    fold()
                    start = monotonicNanoseconds()
                }
                return true
            }
            decode += monotonicNanoseconds() - start
            fold()
        }
        guard state.health.totalEvents == UInt64(plan.replayEvents), iterating > 0 else {
            throw BenchError("timed replay applied \(state.health.totalEvents) events")
        }
        return [("decode", decode)] + zip(passes, folding).map { ($0.rawValue, $1) }
    }

    /// Small enough that a chunk stays in cache between the passes over it.
    private static let chunkSize = 2_048

    /// What `Projections.apply` / `apply(scanHit:...)` gives one projection for this record. A
    /// scan hit also moves the alert book's clock (one comparison, not timed here: that method is
    /// internal to VigilCore).
    @inline(never)
    private static func apply(_ item: ReplayItem, _ pass: ProjectionPass?, to state: inout Projections) {
        switch (pass, item) {
        case (.health, .scanHit(_, _, let time)): state.health.recordScanHit(timeMicroseconds: time)
        case (.health, .input(let input)): state.health.apply(input)
        case (.devices, .scanHit(let hit, let sequence, let time)): state.devices.apply(scanHit: hit, sequence: sequence, timeMicroseconds: time)
        case (.devices, .input(let input)): state.devices.apply(input)
        case (.alerts, .input(let input)): state.alerts.apply(input)
        case (.checkIns, .input(let input)): state.checkIns.apply(input)
        case (.escalations, .input(.event(let event))): _ = state.escalations.apply(event)
        case (.outbox, .input(let input)): state.outbox.apply(input)
        case (.alarms, .input(let input)): state.alarms.apply(input)
        case (.exposures, .input(let input)): state.exposures.apply(input)
        default: break // Projections does not give this record to this projection (nil: to none)
        }
    }
}

/// The projections of `Projections`, one pass each for `replay_share`.
enum ProjectionPass: String, CaseIterable {
    case health, devices, alerts, checkIns = "check_ins", escalations, outbox, alarms, exposures
}

/// A record as replay decodes it (`Replay.apply`): a scan hit's fields, or the whole input.
enum ReplayItem {
    case scanHit(ScanHitFields, sequence: UInt64, time: UInt64)
    case input(ProjectionInput)

    @inline(__always)
    init(_ result: Result<StoredRecordView, CorruptRecord>) {
        if case .success(let view) = result, view.kind == UInt32(EventKind.scanHit.rawValue),
           let hit = EventCodec.scanHitFields(payload: view.payload) {
            self = .scanHit(hit, sequence: view.sequence, time: view.timeMicroseconds)
        } else {
            self = .input(Replay.input(result))
        }
    }
}
