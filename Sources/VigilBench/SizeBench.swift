import VigilLog

/// scanhit_bytes: bytes the events database takes per ScanHit, from LMDB's page statistics, on a
/// log of ScanHits only appended as the node appends them (group commit, MDB_APPEND).
struct SizeBench {
    let plan: Plan
    let reporter: Reporter

    /// What LMDB adds to every entry of a leaf page: node header (8) + key (8) + slot (2).
    static let entryOverhead = 18

    func run() throws {
        let workload = AppendWorkload()
        try withTemporaryDirectory("size") { directory in
            var configuration = LogConfiguration(directory: directory)
            configuration.sync = .none
            let count = plan.sizeEvents
            let result = try runVigilAppend(directory: directory, configuration: configuration, count: count,
                                            pacing: .saturated(maxInFlight: plan.maxInFlight), device: nil) { i in
                (LogRecord(kind: workload.kind, timeMicroseconds: workload.time(i), payload: workload.payload(i)), .sheddable)
            }
            let log = try EventLog.openReadOnly(directory: directory)
            let pages = try log.read { try $0.eventsPageStatistics() }
            let used = try log.spaceUsage()
            guard pages.entries == count, result.statistics.recordsWritten == UInt64(count) else {
                throw BenchError("size log has \(pages.entries) entries, expected \(count)")
            }
            let perEvent = Double(pages.totalBytes) / Double(pages.entries)
            let valueBytes = Double(result.statistics.valueBytesWritten) / Double(count)
            let payloadBytes = Double(workload.payloads.map(\.count).reduce(0, +)) / Double(workload.payloads.count)
            let pageCapacity = Double(pages.leafPages * (pages.pageSize - 16))
            let leafFill = pageCapacity == 0 ? 0 : Double(count) * (valueBytes + Double(Self.entryOverhead)) / pageCapacity
            progress("size: \(perEvent) bytes/event (\(valueBytes) value bytes, \(pages.leafPages) leaf pages)")
            reporter.emit(MetricLine(metric: "scanhit_bytes", value: perEvent, unit: "bytes/event", context: [
                ("events", .int(count)),
                ("runs", .int(1)),
                ("deterministic", .bool(true)),
                ("target", .int(40)),
                ("value_bytes", .double(valueBytes)),
                ("payload_bytes", .double(payloadBytes)),
                ("envelope_bytes", .double(valueBytes - payloadBytes)),
                ("lmdb_overhead_bytes", .double(perEvent - valueBytes)),
                ("lmdb_entry_overhead_bytes", .int(Self.entryOverhead)),
                ("leaf_fill", .double(leafFill)),
                ("leaf_pages", .int(pages.leafPages)),
                ("branch_pages", .int(pages.branchPages)),
                ("overflow_pages", .int(pages.overflowPages)),
                ("page_size", .int(pages.pageSize)),
                ("depth", .int(pages.depth)),
                ("file_bytes_per_event", .double(Double(used.usedBytes) / Double(count))),
            ]))
        }
    }
}
