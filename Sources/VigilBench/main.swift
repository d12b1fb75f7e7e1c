#if canImport(Glibc)
import Glibc
#endif

// vigil-bench: one JSON line per metric on stdout, progress on stderr. See scripts/bench.

func runBenchmarks(_ options: Options) throws {
    let plan = Plan(options)
    let reporter = Reporter(selected: options.only)
    let started = monotonicSeconds()
    progress("\(options.quick ? "quick" : "full") mode, \(plan.runs) runs; load average \(loadAverage())")
    if reporter.wants("append_durable_eps") || reporter.wants("append_ack_p99_ms") {
        try AppendBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants("replay_eps") || reporter.wants("replay_decode_eps") {
        try ReplayBench(plan: plan, reporter: reporter).run()
    }
    if reporter.wants("scanhit_bytes") {
        try SizeBench(plan: plan, reporter: reporter).run()
    }
    if reporter.wants(SOSLatencyBench.metric) || reporter.wants(SOSLatencyBench.httpMetric) {
        try SOSLatencyBench(plan: plan, options: options, reporter: reporter).run()
    }
    if CallPathBench.metrics.contains(where: reporter.wants) {
        try CallPathBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants(MassCallBench.metric) {
        try MassCallBench(plan: plan, reporter: reporter).run()
    }
    if reporter.wants(PowerCutBench.metric) {
        try PowerCutBench(plan: plan, options: options, reporter: reporter).run()
    }
    if ScanReportBench.metrics.contains(where: reporter.wants) {
        try ScanReportBench(plan: plan, options: options, reporter: reporter).run()
    }
    if HubBench.metrics.contains(where: reporter.wants) {
        try HubBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants(HubFanoutBench.metric) {
        try HubFanoutBench(plan: plan, options: options, reporter: reporter).run()
    }
    if SalvageBench.metrics.contains(where: reporter.wants) {
        try SalvageBench(plan: plan, reporter: reporter).run()
    }
    if CompactionBench.metrics.contains(where: reporter.wants) {
        try CompactionBench(plan: plan, reporter: reporter).run()
    }
    if reporter.wants(GAENMatchBench.metric) {
        try GAENMatchBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants(FrameVerifyBench.metric) {
        try FrameVerifyBench(plan: plan, reporter: reporter).run()
    }
    if reporter.wants(ForgedFloodBench.metric) {
        try ForgedFloodBench(plan: plan, reporter: reporter).run()
    }
    if reporter.wants(PhoneFloodBench.metric) {
        try PhoneFloodBench(plan: plan, reporter: reporter).run()
    }
    if reporter.wants(ATTBench.metric) {
        try ATTBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants(MQTTIngestBench.metric) {
        try MQTTIngestBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants(PSMBench.metric) {
        try PSMBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants(CAPBench.metric) {
        try CAPBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants(WarningLatencyBench.metric) {
        try WarningLatencyBench(plan: plan, options: options, reporter: reporter).run()
    }
    if reporter.wants(ChecksumBench.metric) {
        try ChecksumBench(plan: plan, options: options, reporter: reporter).run()
    }
    progress("done in \(Int(monotonicSeconds() - started)) s; load average \(loadAverage())")
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Other work on the machine skews every number here; say how busy it was.
func loadAverage() -> String {
    var loads = [Double](repeating: 0, count: 3)
    guard getloadavg(&loads, 3) == 3 else { return "unknown" }
    return loads.map { String(($0 * 100).rounded() / 100) }.joined(separator: " ")
}

if CommandLine.arguments.count == 3 && CommandLine.arguments[1] == PowerCutBench.childFlag {
    PowerCutBench.runChild(directory: CommandLine.arguments[2])
}
if CommandLine.arguments.count == 3 && CommandLine.arguments[1] == HubFanoutBench.childFlag {
    HubFanoutBench.runChild(directory: CommandLine.arguments[2])
}
do {
    guard let options = try Options.parse(Array(CommandLine.arguments.dropFirst())) else { exit(0) }
    try runBenchmarks(options)
} catch {
    // With the load: a step that failed on a busy machine must say how busy it was.
    writeAll("vigil-bench: \(error) (load average \(loadAverage()))\n", to: STDERR_FILENO)
    exit(1)
}
