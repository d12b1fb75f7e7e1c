import VigilLog

/// Command line: see `usage`. --sync, --window, --events, --in-flight and --no-baseline narrow the
/// append benchmark, e.g. to count one configuration's syscalls under strace or to profile Vigil
/// without its baseline; --runs applies to every benchmark.
struct Options {
    static let metrics = ["append_durable_eps", "append_ack_p99_ms", "replay_eps", "replay_decode_eps", "scanhit_bytes",
                          "sos_latency_p99_ms", "sos_latency_p99_ms_http_load"] + ScanReportBench.metrics + [GAENMatchBench.metric] + HubBench.metrics + SalvageBench.metrics + CompactionBench.metrics
        + [ATTBench.metric, PSMBench.metric, MQTTIngestBench.metric, MassCallBench.metric, PowerCutBench.metric, HubFanoutBench.metric] + CallPathBench.metrics
        + [PhoneFloodBench.metric, FrameVerifyBench.metric, ForgedFloodBench.metric, ChecksumBench.metric, CAPBench.metric, WarningLatencyBench.metric]

    var quick = false
    var only: Set<String>?
    var syncModes: [SyncMode] = [.deferredMeta, .full]
    var windowsMilliseconds: [Int] = [1, 5, 10]
    var runs: Int?
    var appendEvents: Int?
    var maxInFlight: Int?
    var baselines = true

    static let usage = """
        usage: vigil-bench [--quick] [--only METRIC[,METRIC...]] [--sync deferred-meta|full]
                           [--window MS[,MS...]] [--runs N] [--events N] [--in-flight N]
                           [--no-baseline]
        metrics: \(metrics.joined(separator: ", "))
        """

    /// Parses arguments; nil after printing usage for --help. Throws on anything unknown.
    static func parse(_ arguments: [String]) throws -> Options? {
        var options = Options()
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw BenchError("\(flag) needs a value\n\(usage)") }
            return v
        }
        func positive(_ flag: String) throws -> Int {
            let text = try value(flag)
            guard let n = Int(text), n > 0 else { throw BenchError("\(flag) needs a positive integer, not \(text)") }
            return n
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--quick": options.quick = true
            case "--only":
                let names = try value(argument).split(separator: ",").map(String.init)
                for name in names where !metrics.contains(name) {
                    throw BenchError("unknown metric \(name)\n\(usage)")
                }
                options.only = (options.only ?? []).union(names)
            case "--sync":
                let text = try value(argument)
                guard let mode = SyncMode(rawValue: text), mode != .none else {
                    throw BenchError("--sync takes deferred-meta or full, not \(text)")
                }
                options.syncModes = [mode]
            case "--window":
                let text = try value(argument)
                let windows = text.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
                guard !windows.isEmpty else { throw BenchError("--window takes milliseconds, not \(text)") }
                options.windowsMilliseconds = windows
            case "--runs": options.runs = try positive(argument)
            case "--events": options.appendEvents = try positive(argument)
            case "--in-flight": options.maxInFlight = try positive(argument)
            case "--no-baseline": options.baselines = false
            case "--help", "-h":
                print(usage)
                return nil
            default: throw BenchError("unknown argument \(argument)\n\(usage)")
            }
        }
        return options
    }
}

/// Sizes of each benchmark, by mode.
struct Plan {
    let runs: Int
    let appendEvents: Int
    let maxInFlight: Int
    let baselines: Bool
    let pacedRate: Double = 2_000
    let pacedSeconds: Double
    let replayEvents: Int
    let sizeEvents = 200_000
    /// Map size for append runs, Vigil and baseline alike: big enough that neither grows it.
    let appendMapSize = 256 << 20

    init(_ options: Options) {
        runs = options.runs ?? (options.quick ? 3 : 5)
        appendEvents = options.appendEvents ?? (options.quick ? 100_000 : 500_000)
        maxInFlight = options.maxInFlight ?? 50_000
        baselines = options.baselines
        pacedSeconds = options.quick ? 0.75 : 2
        replayEvents = options.quick ? 200_000 : 1_000_000
    }
}
