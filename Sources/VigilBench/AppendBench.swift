import VigilLog

/// append_durable_eps and append_ack_p99_ms, per sync mode and commit window.
struct AppendBench {
    let plan: Plan
    let options: Options
    let reporter: Reporter
    let workload = AppendWorkload()
    let device = BlockDevice(holding: "/tmp")

    func run() throws {
        for sync in options.syncModes {
            for window in options.windowsMilliseconds {
                if reporter.wants("append_durable_eps") || reporter.wants("append_ack_p99_ms") {
                    try saturated(sync: sync, windowMilliseconds: window)
                }
                if reporter.wants("append_ack_p99_ms") {
                    try paced(sync: sync, windowMilliseconds: window)
                }
            }
        }
    }

    private func configuration(_ directory: String, sync: SyncMode, windowMilliseconds: Int) -> LogConfiguration {
        var configuration = LogConfiguration(directory: directory)
        configuration.sync = sync
        configuration.commitWindowMicroseconds = UInt64(windowMilliseconds) * 1_000
        configuration.initialMapSize = plan.appendMapSize
        return configuration
    }

    private func runVigil(sync: SyncMode, windowMilliseconds: Int, count: Int, pacing: Pacing) throws -> VigilAppendResult {
        let result = try withTemporaryDirectory("append") { directory in
            try runVigilAppend(directory: directory,
                               configuration: configuration(directory, sync: sync, windowMilliseconds: windowMilliseconds),
                               count: count, pacing: pacing, device: device) { i in
                (LogRecord(kind: workload.kind, timeMicroseconds: workload.time(i), payload: workload.payload(i)), .sheddable)
            }
        }
        guard result.statistics.writeErrors == 0, result.refused == 0 else {
            throw BenchError("append run had \(result.statistics.writeErrors) write errors, \(result.refused) refused")
        }
        return result
    }

    /// Throughput and saturated latency, each run followed by its raw LMDB baseline.
    private func saturated(sync: SyncMode, windowMilliseconds window: Int) throws {
        var runs: [VigilAppendResult] = []
        var baselineEPS: [Double] = []
        var baselineBatches: [Double] = []
        var baselineBytesPerEvent: [Double] = []
        var baselineCPUPerEvent: [Double] = []
        for run in 1...plan.runs {
            let vigil = try runVigil(sync: sync, windowMilliseconds: window, count: plan.appendEvents,
                                     pacing: .saturated(maxInFlight: plan.maxInFlight))
            runs.append(vigil)
            var note = ""
            if plan.baselines {
                // The same events, the same bytes, the same number per transaction.
                let batch = max(1, Int(vigil.batchMean.rounded()))
                let raw = try withTemporaryDirectory("raw") { directory in
                    try RawLMDB.append(directory: directory, sync: sync, mapSize: plan.appendMapSize, batch: batch,
                                       count: plan.appendEvents, workload: workload, device: device)
                }
                let rawEPS = perSecond(plan.appendEvents, nanoseconds: raw.nanoseconds)
                baselineEPS.append(rawEPS)
                baselineBatches.append(Double(batch))
                baselineCPUPerEvent.append(Double(raw.cpuNanoseconds) / Double(plan.appendEvents))
                if let bytes = raw.io.processWriteBytes { baselineBytesPerEvent.append(Double(bytes) / Double(plan.appendEvents)) }
                note = ", raw \(Int(rawEPS)) ev/s"
            }
            progress("append \(sync.rawValue) \(window) ms run \(run)/\(plan.runs): vigil \(Int(vigil.eventsPerSecond)) ev/s "
                     + "(batch \(Int(vigil.batchMean)), \(vigil.statistics.commits) commits)" + note)
        }
        let context = common(sync: sync, window: window, runs: runs.count)
        reporter.emit(MetricLine(
            metric: "append_durable_eps", value: median(runs.map(\.eventsPerSecond)) ?? 0, unit: "events/s",
            baseline: median(baselineEPS),
            context: context + [
                ("events", .int(plan.appendEvents)),
                ("target_ratio", .double(0.8)),
                ("max_in_flight", .int(plan.maxInFlight)),
                ("value_min", .optional(runs.map(\.eventsPerSecond).min())),
                ("value_max", .optional(runs.map(\.eventsPerSecond).max())),
                ("baseline_batch", .optional(median(baselineBatches))),
                ("baseline_disk_bytes_per_event", .optional(median(baselineBytesPerEvent))),
                ("baseline_cpu_ns_per_event", .optional(median(baselineCPUPerEvent))),
                ("shed", .int(runs.map(\.shed).reduce(0, +))),
            ] + costs(runs)))
        reporter.emit(latencyLine(runs, load: "saturated", context: context + [("max_in_flight", .int(plan.maxInFlight))]))
    }

    /// Latency at a steady, realistic rate, where the commit window rather than the queue decides.
    private func paced(sync: SyncMode, windowMilliseconds window: Int) throws {
        let count = Int(plan.pacedRate * plan.pacedSeconds)
        var runs: [VigilAppendResult] = []
        for run in 1...plan.runs {
            let result = try runVigil(sync: sync, windowMilliseconds: window, count: count,
                                      pacing: .paced(eventsPerSecond: plan.pacedRate))
            runs.append(result)
            progress("paced \(sync.rawValue) \(window) ms run \(run)/\(plan.runs): p50 "
                     + "\(milliseconds(percentile(result.latencies, 50) ?? 0)) ms, p99 \(milliseconds(percentile(result.latencies, 99) ?? 0)) ms")
        }
        reporter.emit(latencyLine(runs, load: "paced", context: common(sync: sync, window: window, runs: runs.count) + [
            ("rate_eps", .double(plan.pacedRate)),
            ("seconds", .double(plan.pacedSeconds)),
        ] + costs(runs, producer: false)))
    }

    private func common(sync: SyncMode, window: Int, runs: Int) -> [(String, JSONValue)] {
        [("window_ms", .int(window)), ("sync", .string(sync.rawValue)), ("runs", .int(runs))]
    }

    private func latencyLine(_ runs: [VigilAppendResult], load: String, context: [(String, JSONValue)]) -> MetricLine {
        let p99 = runs.compactMap { percentile($0.latencies, 99) }.map(milliseconds)
        let p50 = runs.compactMap { percentile($0.latencies, 50) }.map(milliseconds)
        return MetricLine(metric: "append_ack_p99_ms", value: median(p99) ?? 0, unit: "ms",
                          context: [("load", .string(load))] + context + [
                              ("p50", .optional(median(p50))),
                              ("p99_max", .optional(p99.max())),
                          ])
    }

    /// What the runs cost the storage (Vigil's own counters, checked against the kernel's) and the
    /// CPU (per event, and whether the writer thread was the bottleneck or starved of a CPU).
    /// `producer` is false for paced runs, whose producer mostly sleeps between appends.
    private func costs(_ runs: [VigilAppendResult], producer: Bool = true) -> [(String, JSONValue)] {
        func medianOf(_ value: (VigilAppendResult) -> Double?) -> JSONValue { .optional(median(runs.compactMap(value))) }
        func perEvent(_ count: UInt64?, _ r: VigilAppendResult) -> Double? {
            count.map { Double($0) / Double(max(1, r.acknowledged)) }
        }
        func share(_ nanoseconds: UInt64?, _ r: VigilAppendResult) -> Double? {
            nanoseconds.map { Double($0) / Double(max(1, r.elapsedNanoseconds)) }
        }
        let producerCPU: [(String, JSONValue)] = producer
            ? [("producer_cpu_ns_per_event", medianOf { perEvent($0.producerCPUNanoseconds, $0) })] : []
        return [
            ("batch_mean", medianOf { $0.batchMean }),
            ("commits", medianOf { Double($0.statistics.commits) }),
            ("flushes_per_commit", medianOf { $0.flushesPerCommit }),
            ("device_flushes_per_commit", medianOf { r in r.io.deviceFlushes.map { Double($0) / Double(max(1, r.statistics.commits)) } }),
            ("disk_bytes_per_event", medianOf { perEvent($0.io.processWriteBytes, $0) }),
            ("device_bytes_per_event", medianOf { perEvent($0.io.deviceBytesWritten, $0) }),
            ("writer_cpu_ns_per_event", medianOf { perEvent($0.writerCPUNanoseconds, $0) }),
        ] + producerCPU + [
            ("writer_cpu_share", medianOf { share($0.writerCPUNanoseconds, $0) }),
            ("writer_runqueue_share", medianOf { share($0.writerRunQueueNanoseconds, $0) }),
        ]
    }
}
