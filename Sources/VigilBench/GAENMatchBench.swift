import Foundation
import VigilCore
import VigilEvents
import VigilExposure
import VigilSystem

/// `gaen_match_keys_per_s`: diagnosis keys matched per second on one core against 100k stored
/// identifiers (1M keys in full mode): per key, one key schedule, all 144 RPIs derived at once
/// (OpenSSL ECB), each looked up in the identifier index. The baseline in the same run is the
/// straightforward way: swift-crypto's high-level API, one AES call per RPI, and a Swift `Set`
/// of identifiers. A thousand of the keys are "sick" keys whose identifiers were heard, so the
/// matches are real ones and are checked.
struct GAENMatchBench {
    static let metric = "gaen_match_keys_per_s"
    static let target = 100_000.0
    let plan: Plan
    let options: Options
    let reporter: Reporter

    func run() throws {
        let storedCount = 100_000
        let keyCount = options.quick ? 100_000 : 1_000_000
        let baselineKeys = options.quick ? 5_000 : 20_000
        let sickCount = 1_000
        progress("\(Self.metric): \(storedCount) stored identifiers, \(keyCount) keys (\(sickCount) of them heard)")

        // The stored identifiers: 99k random ones, plus one from each sick key (its 60th interval).
        var rng = SplitMix64(seed: 0x6AE1)
        let day: UInt32 = 2_655_936
        let sick = try (0..<sickCount).map { _ in try TemporaryExposureKey(keyData: rng.bytes(16), rollingStartIntervalNumber: day) }
        var contacts = ExposureContacts()
        var sequence: UInt64 = 0
        func store(_ id: [UInt8], interval: UInt32) {
            sequence += 1
            var hit = ScanHit()
            hit.count = 1
            hit.rssiMin = -60; hit.rssiMax = -60; hit.rssiSum = -60
            hit.advertisement.gaenRpi = Data(id)
            contacts.apply(Event(sequence: sequence, timeMicroseconds: UInt64(interval) * 600_000_000 + 1_000_000, body: .scanHit(hit)))
        }
        for key in sick { store(try ExposureKeySchedule(key).identifier(forInterval: day + 60).bytes, interval: day + 60) }
        for _ in 0..<(storedCount - sickCount) { store(rng.bytes(16), interval: day + 60) }

        var keys = try (0..<(keyCount - sickCount)).map { _ in
            DiagnosisKey(key: try TemporaryExposureKey(keyData: rng.bytes(16), rollingStartIntervalNumber: day))
        }
        // Sick keys spread through the file.
        for (i, key) in sick.enumerated() { keys.insert(DiagnosisKey(key: key), at: i * (keys.count / sickCount)) }

        var rates: [Double] = []
        var matched = 0
        for run in 1...plan.runs {
            let matcher = try ExposureMatcher(contacts: contacts, engine: .fastest)
            let start = threadCPUNanoseconds()
            let matches = try matcher.match(keys)
            let cpu = threadCPUNanoseconds() - start
            matched = matches.count
            guard matched == sickCount else { throw BenchError("gaen match: \(matched) matches, expected \(sickCount)") }
            rates.append(Double(keys.count) * 1e9 / Double(max(cpu, 1)))
            progress("\(Self.metric) run \(run)/\(plan.runs): \(Int(rates.last ?? 0)) keys/s (\(matcher.index.count) identifiers, engine \(RollingProximityIdentifierDeriver.Engine.fastest))")
        }

        // Baseline: one high-level AES call per RPI, identifiers in a Set.
        var baselineRates: [Double] = []
        let stored = Set(contacts.tracks.keys.compactMap { Bytes16($0) })
        let sample = Array(keys.prefix(baselineKeys)) + sick.prefix(10).map { DiagnosisKey(key: $0) }
        for _ in 1...min(plan.runs, 3) {
            let start = threadCPUNanoseconds()
            var found = 0
            for key in sample {
                let schedule = ExposureKeySchedule(key.key)
                for i in 0..<key.key.rollingPeriod {
                    let rpi = try schedule.identifier(forInterval: key.key.rollingStartIntervalNumber + i)
                    if stored.contains(rpi.value) { found += 1 }
                }
            }
            let cpu = threadCPUNanoseconds() - start
            guard found >= 10 else { throw BenchError("gaen baseline found \(found) matches") }
            baselineRates.append(Double(sample.count) * 1e9 / Double(max(cpu, 1)))
        }

        reporter.emit(MetricLine(
            metric: Self.metric, value: median(rates) ?? 0, unit: "keys/s", baseline: median(baselineRates),
            context: [
                ("baseline_is", .string("swift-crypto high-level API, one AES call per RPI (144 per key), identifiers in a Swift Set; \(sample.count) keys")),
                ("target", .double(Self.target)),
                ("stored_identifiers", .int(storedCount)),
                ("keys", .int(keys.count)),
                ("matches", .int(matched)),
                ("engine", .string(RollingProximityIdentifierDeriver.Engine.fastest.rawValue)),
                ("cpu", .string("thread CPU time, one core")),
                ("runs", .int(rates.count)),
                ("value_min", .optional(rates.min())),
                ("value_max", .optional(rates.max())),
                ("ns_per_key", .optional(median(rates).map { 1e9 / $0 })),
            ]))
    }
}

extension SplitMix64 {
    mutating func bytes(_ n: Int) -> [UInt8] {
        var out: [UInt8] = []
        while out.count < n { withUnsafeBytes(of: next()) { out += $0 } }
        return Array(out.prefix(n))
    }
}
