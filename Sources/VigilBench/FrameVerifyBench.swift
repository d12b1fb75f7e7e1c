import VigilRadio

/// frame_verify_us: CPU to check one alert frame heard on the air (issue 28): parse and
/// authenticate with the shelter key (today's shared-key tag), as `AirAlerts` does for every
/// frame it hears. The baseline, in the same run, is the same frames with a forged tag (what a
/// prankster's flood costs the box: it must be no cheaper to send, nor dearer to refuse). The
/// next issue's per-box signatures are to be measured beside these.
struct FrameVerifyBench {
    static let metric = "frame_verify_us"
    static let frames = 20_000
    let plan: Plan
    let reporter: Reporter

    func run() throws {
        progress("\(Self.metric): \(Self.frames) frames, \(plan.runs) runs")
        let key = try AlertFrameKey(shelterKey: (0..<32).map { UInt8($0 &* 7 &+ 3) })
        var valid: [[UInt8]] = []
        var forged: [[UInt8]] = []
        for i in 0..<Self.frames {
            let location = i % 2 == 0 ? AlertFrame.Coordinates(latitudeE7: 404_000_000 + Int32(i % 100) * 10_000, longitudeE7: -37_000_000) : nil
            let frame = AlertFrame(type: .sos, severity: .critical, hops: UInt8(i % 4), origin: UInt32(0x1000 + i % 64),
                                   counter: UInt32(i), expirySeconds: 1_900_000_000, location: location)
            let bytes = try frame.encode(key: key)
            valid.append(bytes)
            var bad = bytes
            bad[bad.count - 1] ^= 0x5A
            forged.append(bad)
        }
        func measure(_ frames: [[UInt8]], expectValid: Bool) throws -> Double {
            var accepted = 0
            let start = threadCPUNanoseconds()
            for f in frames {
                if (try? AlertFrame.decode(f, key: key)) != nil { accepted += 1 }
            }
            let cpu = threadCPUNanoseconds() - start
            guard accepted == (expectValid ? frames.count : 0) else {
                throw BenchError("\(Self.metric): \(accepted) of \(frames.count) frames accepted")
            }
            return Double(cpu) / 1_000 / Double(frames.count)
        }
        var checked: [Double] = []
        var refused: [Double] = []
        _ = try measure(valid, expectValid: true)   // warm-up
        for _ in 0..<plan.runs {
            checked.append(try measure(valid, expectValid: true))
            refused.append(try measure(forged, expectValid: false))
        }
        reporter.emit(MetricLine(
            metric: Self.metric, value: median(checked) ?? 0, unit: "us", baseline: median(refused),
            context: [
                ("baseline_is", .string("the same frames with a forged tag, refused (a prankster's flood)")),
                ("check", .string("AlertFrame.decode: parse, tag with the shelter key (HMAC-SHA256, truncated), compare in constant time")),
                ("frames", .int(Self.frames)),
                ("runs", .int(checked.count)),
                ("value_min", .optional(checked.min())),
                ("value_max", .optional(checked.max())),
                ("frames_per_second_one_core", .optional(median(checked).map { 1e6 / $0 })),
                ("cpu", .string("thread CPU time, one core")),
            ]))
    }
}
