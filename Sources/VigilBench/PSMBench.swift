import VigilJ2735

/// `psm_decode_ns`: CPU time to decode one PSM as the regional feed carries it (a J2735
/// MessageFrame in UPER, then its PersonalSafetyMessage), on one core, over a varied set of
/// PSMs made with the box's own encoder (pedestrians and cyclists at different places, speeds and
/// courses, a quarter with a cluster size). Baseline in the same run: `MessageFrame.decode`
/// alone over the same frames, so the ratio is what reading the PSM itself costs.
struct PSMBench {
    static let metric = "psm_decode_ns"
    let plan: Plan
    let options: Options
    let reporter: Reporter

    /// A PSM's UPER encoding as `PersonalSafetyMessage.decode` reads it (the root up to the
    /// heading, and the cluster size when `cluster`).
    static func frame(_ i: Int) -> [UInt8] {
        var w = UPERWriter()
        w.bit(false)
        let cluster = i % 4 == 0
        for bit in 0 ..< 18 { w.bit(cluster && bit == 7) }
        w.bit(false)
        w.integer(Int64(1 + i % 2), in: 0...4)                             // pedestrian, cyclist
        w.integer(Int64(i * 37 % 60_000), in: 0...65_535)                  // secMark
        w.integer(Int64(i % 128), in: 0...127)                             // msgCnt
        w.octets([UInt8(i & 0xFF), UInt8(i >> 8 & 0xFF), 0x2C, 0x3D])     // id
        w.bit(false); w.bit(false); w.bit(false)                           // Position3D
        w.integer(334_351_000 + Int64(i * 113 % 200_000), in: -900_000_000...900_000_001)
        w.integer(-1_120_108_000 + Int64(i * 71 % 200_000), in: -1_799_999_999...1_800_000_001)
        w.bits(0x0A0A_0000, 32)                                            // accuracy
        w.integer(Int64(i * 13 % 800), in: 0...8_191)                      // speed
        w.integer(Int64(i * 997 % 28_800), in: 0...28_800)                 // heading
        if cluster { w.bit(false); w.integer(2, in: 0...3) }
        return MessageFrame(messageID: MessageFrame.personalSafetyMessage, value: w.bytes).encode()
    }

    func run() throws {
        let frames = (0 ..< 1_000).map(Self.frame)
        let rounds = options.quick ? 200 : 1_000
        progress("\(Self.metric): \(rounds) rounds of \(frames.count) PSMs")
        var values: [Double] = []
        var baselines: [Double] = []
        for run in 1...plan.runs {
            var decoded = 0
            var checksum = 0
            let start = threadCPUNanoseconds()
            for _ in 0 ..< rounds {
                for bytes in frames {
                    guard let frame = try? MessageFrame.decode(bytes), let psm = try? PersonalSafetyMessage.decode(frame.value) else { continue }
                    decoded += 1
                    checksum &+= Int(psm.heading) &+ Int(psm.latitude)
                }
            }
            let cpu = threadCPUNanoseconds() - start
            guard decoded == rounds * frames.count else { throw BenchError("psm: \(rounds * frames.count - decoded) PSMs did not decode") }
            values.append(Double(cpu) / Double(decoded))

            var framed = 0
            let baseStart = threadCPUNanoseconds()
            for _ in 0 ..< rounds {
                for bytes in frames { if let frame = try? MessageFrame.decode(bytes) { framed &+= frame.value.count } }
            }
            let baseCPU = threadCPUNanoseconds() - baseStart
            baselines.append(Double(baseCPU) / Double(rounds * frames.count))
            progress("\(Self.metric) run \(run)/\(plan.runs): \(values.last ?? 0) ns/PSM; frame alone \(baselines.last ?? 0) ns (checksum \(checksum & 0xFF), \(framed & 0xFF))")
        }
        reporter.emit(MetricLine(
            metric: Self.metric, value: median(values) ?? 0, unit: "ns/PSM", baseline: median(baselines),
            context: [
                ("baseline_is", .string("MessageFrame.decode alone over the same frames, ns per frame")),
                ("definition", .string("thread CPU per PSM: MessageFrame then PersonalSafetyMessage decoded from UPER, 1,000 varied PSMs")),
                ("psms_per_run", .int(rounds * frames.count)),
                ("runs", .int(values.count)),
                ("value_min", .optional(values.min())),
                ("value_max", .optional(values.max())),
            ]))
    }
}
