import VigilLog
import VigilSystem

/// `record_checksum_ns`: CPU time to checksum one stored record as the log does (CRC-32C over the
/// sequence number, then the record's 70 bytes, a scan hit's size), with the processor's CRC32
/// instruction where it has one (`HardwareCRC32C`). Baseline in the same run: the slicing-by-8
/// tables over the same records, so the ratio is what the instruction saves per record.
struct ChecksumBench {
    static let metric = "record_checksum_ns"
    let plan: Plan
    let options: Options
    let reporter: Reporter

    func run() throws {
        var generator = SplitMix64(seed: 30)
        let records = (0 ..< 1_024).map { _ in (0 ..< 70).map { _ in UInt8(truncatingIfNeeded: generator.next()) } }
        let rounds = options.quick ? 200 : 2_000
        let count = rounds * records.count
        let hardware = HardwareCRC32C.available
        progress("\(Self.metric): \(rounds) rounds of \(records.count) records; instruction: \(hardware == nil ? "none (tables)" : "yes")")
        var values: [Double] = []
        var baselines: [Double] = []
        for run in 1...plan.runs {
            var mixed: UInt32 = 0
            let start = threadCPUNanoseconds()
            for round in 0 ..< rounds {
                for (i, record) in records.enumerated() {
                    let key = withUnsafeBytes(of: UInt64(round &* 1_024 &+ i).bigEndian) { CRC32C.checksum($0) }
                    mixed ^= record.withUnsafeBytes { CRC32C.checksum($0, continuing: key) }
                }
            }
            values.append(Double(threadCPUNanoseconds() - start) / Double(count))
            var tabled: UInt32 = 0
            let baseStart = threadCPUNanoseconds()
            for round in 0 ..< rounds {
                for (i, record) in records.enumerated() {
                    let key = withUnsafeBytes(of: UInt64(round &* 1_024 &+ i).bigEndian) { CRC32C.tableChecksum($0) }
                    tabled ^= record.withUnsafeBytes { CRC32C.tableChecksum($0, continuing: key) }
                }
            }
            baselines.append(Double(threadCPUNanoseconds() - baseStart) / Double(count))
            guard mixed == tabled else { throw BenchError("record_checksum: the instruction and the tables disagree") }
            progress("\(Self.metric) run \(run)/\(plan.runs): \(values.last ?? 0) ns/record; tables \(baselines.last ?? 0) ns")
        }
        reporter.emit(MetricLine(
            metric: Self.metric, value: median(values) ?? 0, unit: "ns/record", baseline: median(baselines),
            context: [
                ("baseline_is", .string("the slicing-by-8 tables over the same records, ns per record")),
                ("definition", .string("thread CPU per record: CRC-32C of the 8-byte sequence, continued over 70 bytes, as LogWriter stores it")),
                ("instruction", .string(hardware == nil ? "none" : "yes")),
                ("records_per_run", .int(count)),
                ("runs", .int(values.count)),
                ("value_min", .optional(values.min())),
                ("value_max", .optional(values.max())),
            ]))
    }
}
