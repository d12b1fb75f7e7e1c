import VigilCore
import VigilEvents
import VigilLog
import VigilSystem

/// replay_eps (decode + projections) and replay_decode_eps (decode only), against a raw LMDB
/// cursor walk over the same log. The log is built once with SyncMode.none; every pass reads it
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
                progress("replay run \(run)/\(plan.runs): raw \(Int(raw.last ?? 0)) ev/s, decode \(Int(decodeOnly.last ?? 0)) ev/s, "
                         + "decode+apply \(Int(full.last ?? 0)) ev/s (\(replayed.projections.devices.devices.count) devices)")
            }
            guard states.count == 1 else { throw BenchError("replays of one log gave \(states.count) different states") }
            let context: [(String, JSONValue)] = [
                ("events", .int(plan.replayEvents)), ("runs", .int(plan.runs)), ("cache", .string("warm")),
            ]
            reporter.emit(MetricLine(metric: "replay_eps", value: median(full) ?? 0, unit: "events/s",
                                     baseline: median(raw), context: context + [
                                         ("value_min", .optional(full.min())), ("value_max", .optional(full.max())),
                                         ("state_bytes", .int(states.first?.count ?? 0)),
                                         ("target", .int(2_000_000)),
                                     ]))
            reporter.emit(MetricLine(metric: "replay_decode_eps", value: median(decodeOnly) ?? 0, unit: "events/s",
                                     baseline: median(raw), context: context))
        }
    }

    private func build(_ directory: String) throws {
        var configuration = LogConfiguration(directory: directory)
        configuration.sync = .none
        configuration.initialMapSize = 512 << 20
        var events = MixedWorkload()
        let result = try runVigilAppend(directory: directory, configuration: configuration, count: plan.replayEvents,
                                        pacing: .saturated(maxInFlight: plan.maxInFlight), device: nil) { _ in
            let next = events.next()
            let record = LogRecord(kind: next.kind, timeMicroseconds: next.time, payload: next.payload)
            return (record, next.kind == UInt32(EventKind.scanHit.rawValue) ? .sheddable : .critical)
        }
        guard result.acknowledged == plan.replayEvents else {
            throw BenchError("replay log has \(result.acknowledged) events, expected \(plan.replayEvents) (shed \(result.shed))")
        }
    }

    /// Decode + Projections.apply over the whole log, timed from the read transaction's start.
    private func replay(_ directory: String) throws -> (projections: Projections, nanoseconds: UInt64) {
        let log = try EventLog.openReadOnly(directory: directory)
        var projections = Projections()
        let start = monotonicNanoseconds()
        try log.read { txn in
            try txn.forEach { result in
                switch result {
                case .success(let view):
                    do throws(EventDecodingError) {
                        let body = try EventCodec.decode(kind: view.kind, payload: view.payload, sequence: view.sequence)
                        projections.apply(.event(Event(sequence: view.sequence, timeMicroseconds: view.timeMicroseconds, body: body)))
                    } catch {
                        projections.apply(.undecodable(error))
                    }
                case .failure(let corrupt):
                    projections.apply(.undecodable(EventDecodingError(sequence: corrupt.sequence, reason: .envelope(corrupt.reason))))
                }
                return true
            }
        }
        let elapsed = monotonicNanoseconds() - start
        guard projections.health.undecodable == 0, projections.health.totalEvents == UInt64(plan.replayEvents) else {
            throw BenchError("replay applied \(projections.health.totalEvents) events, \(projections.health.undecodable) undecodable")
        }
        return (projections, elapsed)
    }

    /// Decode only: the codec's share of replay.
    private func replayDecodeOnly(_ directory: String) throws -> (events: Int, nanoseconds: UInt64) {
        let log = try EventLog.openReadOnly(directory: directory)
        var events = 0
        var scanHits = 0
        let start = monotonicNanoseconds()
        try log.read { txn in
            try txn.forEach { result in
                guard case .success(let view) = result else { throw BenchError("unreadable envelope in the replay log") }
                let body = try EventCodec.decode(kind: view.kind, payload: view.payload, sequence: view.sequence)
                if case .scanHit = body { scanHits += 1 }
                events += 1
                return true
            }
        }
        let elapsed = monotonicNanoseconds() - start
        guard events == plan.replayEvents, scanHits > 0 else { throw BenchError("decode pass saw \(events) events") }
        return (events, elapsed)
    }
}
