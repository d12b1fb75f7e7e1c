import Foundation
import VigilEvents
import VigilLog
import VigilSystem

/// scanhit_bytes: bytes the events database takes per scan hit of the raw tier, from LMDB's page
/// statistics, on logs appended as the node appends them (group commit, MDB_APPEND).
///
/// The raw tier is one ScanBatch record per scan window (docs/log.md "The raw tier"): 2,000 devices
/// each heard in every one-second window, the crowded shelter's hits. The baseline, in the same
/// run, is the same hits one ScanHit record each (how the node logged them before schema 12);
/// the ratio is batch / baseline. The same batches with a GAEN identifier in every hit (16 + 4
/// bytes that cannot be shared) are reported beside it.
struct SizeBench {
    let plan: Plan
    let reporter: Reporter

    /// What LMDB adds to every entry of a leaf page: node header (8) + key (8) + slot (2).
    static let entryOverhead = 18

    struct Measured {
        var perRecord: Double
        var perHit: Double
        var valueBytesPerHit: Double
        var pages: PageStatistics
        var fileBytesPerHit: Double
    }

    /// Appends `records` (each holding `hitsPerRecord` hits) to a fresh log and measures it.
    func measure(_ name: String, records: [LogRecord], hitsPerRecord: Int) throws -> Measured {
        try withTemporaryDirectory("size-\(name)") { directory in
            var configuration = LogConfiguration(directory: directory)
            configuration.sync = .none
            let result = try runVigilAppend(directory: directory, configuration: configuration, count: records.count,
                                            pacing: .saturated(maxInFlight: plan.maxInFlight), device: nil) { i in
                (records[i], .sheddable)
            }
            let log = try EventLog.openReadOnly(directory: directory)
            let pages = try log.read { try $0.eventsPageStatistics() }
            let used = try log.spaceUsage()
            guard pages.entries == records.count, result.statistics.recordsWritten == UInt64(records.count) else {
                throw BenchError("size log \(name) has \(pages.entries) entries, expected \(records.count)")
            }
            let hits = Double(records.count * hitsPerRecord)
            return Measured(perRecord: Double(pages.totalBytes) / Double(records.count), perHit: Double(pages.totalBytes) / hits,
                            valueBytesPerHit: Double(result.statistics.valueBytesWritten) / hits, pages: pages,
                            fileBytesPerHit: Double(used.usedBytes) / hits)
        }
    }

    /// One window's hits of every device, as `ScanWindow.close` makes them.
    static func window(_ w: Int, gaen: Bool, rng: inout SplitMix64) -> [ScanHit] {
        (0..<Workload.deviceCount).map { device in
            var hit = Workload.scanHit(device: device, using: &rng)
            if gaen {
                // A phone's RPI changes every 15 minutes: unique within a window.
                hit.advertisement.gaenRpi = (0..<2).reduce(into: [UInt8]()) { bytes, _ in
                    let v = rng.next()
                    bytes += (0..<8).map { UInt8(truncatingIfNeeded: v >> UInt64(8 * $0)) }
                }.withUnsafeBufferPointer { Data($0) }
                hit.advertisement.gaenAem = Data([0x40, UInt8(truncatingIfNeeded: rng.next()), 0, 0])
            }
            return hit
        }
    }

    func batches(gaen: Bool) throws -> [LogRecord] {
        var rng = SplitMix64(seed: gaen ? 7 : 42)
        let windows = max(1, plan.sizeEvents / Workload.deviceCount)
        return try (0..<windows).map { w in
            let (batch, rest) = ScanBatch.packing(Self.window(w, gaen: gaen, rng: &rng))
            guard rest.isEmpty else { throw BenchError("size: a window hit did not fit its batch") }
            let (kind, payload) = EventCodec.encode(.scanBatch(batch))
            return LogRecord(kind: kind, timeMicroseconds: Workload.startMicroseconds + UInt64(w + 1) * 1_000_000, payload: payload)
        }
    }

    func run() throws {
        let workload = AppendWorkload()
        let singles = (0..<plan.sizeEvents).map { i in
            LogRecord(kind: workload.kind, timeMicroseconds: workload.time(i), payload: workload.payload(i))
        }
        let baseline = try measure("single", records: singles, hitsPerRecord: 1)
        let batched = try measure("batch", records: try batches(gaen: false), hitsPerRecord: Workload.deviceCount)
        let gaen = try measure("gaen", records: try batches(gaen: true), hitsPerRecord: Workload.deviceCount)
        let payloadBytes = Double(workload.payloads.map(\.count).reduce(0, +)) / Double(workload.payloads.count)
        let pageCapacity = Double(baseline.pages.leafPages * (baseline.pages.pageSize - 16))
        let leafFill = pageCapacity == 0 ? 0 : Double(singles.count) * (baseline.valueBytesPerHit + Double(Self.entryOverhead)) / pageCapacity
        progress("size: \(batched.perHit) bytes/hit batched, \(gaen.perHit) with GAEN, \(baseline.perHit) one record each")
        reporter.emit(MetricLine(metric: "scanhit_bytes", value: batched.perHit, unit: "bytes/hit", baseline: baseline.perHit, context: [
            ("hits", .int(plan.sizeEvents)),
            ("hits_per_record", .int(Workload.deviceCount)),
            ("runs", .int(1)),
            ("deterministic", .bool(true)),
            ("target", .int(40)),
            ("value_bytes_per_hit", .double(batched.valueBytesPerHit)),
            ("lmdb_overhead_bytes_per_hit", .double(batched.perHit - batched.valueBytesPerHit)),
            ("overflow_pages", .int(batched.pages.overflowPages)),
            ("file_bytes_per_hit", .double(batched.fileBytesPerHit)),
            ("gaen_bytes_per_hit", .double(gaen.perHit)),
            ("baseline_value_bytes", .double(baseline.valueBytesPerHit)),
            ("baseline_payload_bytes", .double(payloadBytes)),
            ("baseline_envelope_bytes", .double(baseline.valueBytesPerHit - payloadBytes)),
            ("baseline_lmdb_overhead_bytes", .double(baseline.perHit - baseline.valueBytesPerHit)),
            ("baseline_leaf_fill", .double(leafFill)),
            ("page_size", .int(baseline.pages.pageSize)),
        ]))
    }
}
