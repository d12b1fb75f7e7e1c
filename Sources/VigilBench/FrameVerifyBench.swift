import VigilCore
import VigilEvents
import VigilNode
import VigilRadio

/// frame_verify_us: CPU to check one signed alert frame heard on the air (issue 29,
/// docs/signed-frames.md): parse, the certificate (remembered after its first check), the
/// signature, the rules and freshness, as `FrameVerifier` does for every new frame. The baseline,
/// in the same run, is the shared-key check of version 1 (HMAC-SHA256), what a box paid before.
/// Context: a frame from a box never heard of (certificate and signature: two Ed25519 checks), the
/// same bytes heard again (a hash), and a forged shared-key tag.
struct FrameVerifyBench {
    static let metric = "frame_verify_us"
    static let frames = 5_000
    let plan: Plan
    let reporter: Reporter

    func run() throws {
        progress("\(Self.metric): \(Self.frames) frames, \(plan.runs) runs")
        let key = try AlertFrameKey(shelterKey: (0..<32).map { UInt8($0 &* 7 &+ 3) })
        let network = try NetworkSigningKey(seed: [UInt8](repeating: 0x42, count: 32))
        let boxes = try (0..<64).map { i -> (BoxSigningKey, BoxCertificate) in
            let box = try BoxSigningKey(seed: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ i) })
            return (box, try network.certify(node: UInt32(0x1000 + i), boxKey: box.publicKey, issued: 1_700_000_000, expires: 2_100_000_000))
        }
        let nowSeconds: UInt32 = 1_800_000_000
        var shared: [[UInt8]] = []
        var forged: [[UInt8]] = []
        var signed: [[UInt8]] = []
        for i in 0..<Self.frames {
            let location = i % 2 == 0 ? AlertFrame.Coordinates(latitudeE7: 404_000_000 + Int32(i % 100) * 10_000, longitudeE7: -37_000_000) : nil
            let (box, certificate) = boxes[i % boxes.count]
            let frame = AlertFrame(type: .sos, severity: .critical, hops: UInt8(i % 4), origin: certificate.node,
                                   counter: UInt32(i), expirySeconds: nowSeconds + 3_600, location: location)
            let bytes = try frame.encode(key: key)
            shared.append(bytes)
            var bad = bytes
            bad[bad.count - 1] ^= 0x5A
            forged.append(bad)
            signed.append(try SignedAlertFrame.sign(type: .sos, severity: 3, hops: UInt8(i % 4), origin: certificate.node, counter: UInt32(i),
                                                    expirySeconds: nowSeconds + 3_600, signedAtSeconds: nowSeconds - 60, clockVouched: true,
                                                    location: location, key: box, certificate: certificate))
        }
        let wall = UInt64(nowSeconds) * 1_000_000
        func sharedCheck(_ frames: [[UInt8]], expectValid: Bool) throws -> Double {
            var accepted = 0
            let start = threadCPUNanoseconds()
            for f in frames where (try? AlertFrame.decode(f, key: key)) != nil { accepted += 1 }
            let cpu = threadCPUNanoseconds() - start
            guard accepted == (expectValid ? frames.count : 0) else { throw BenchError("\(Self.metric): \(accepted) shared-key frames accepted") }
            return Double(cpu) / 1_000 / Double(frames.count)
        }
        /// A verifier that knows the boxes' certificates already (`warm`) or not, over all frames.
        func signedCheck(warmCertificates: Bool, repeated: Bool) throws -> Double {
            var settings = FrameVerifier.Settings()
            settings.verificationsPerSecond = 1_000_000   // the budget is forged_flood_cpu's subject
            var verifier = FrameVerifier(network: network.publicKey, settings: settings)
            var clock = VouchedClock()
            clock.systemClock(synchronised: true)
            // Heard again: fewer frames than the verifier remembers (4,096), each heard before.
            let again = Array(signed.prefix(1_000))
            if warmCertificates || repeated {
                for f in (repeated ? again : Array(signed.prefix(boxes.count))) {
                    _ = verifier.check(f, clock: &clock, wallMicroseconds: wall, monotonicMicroseconds: 0)
                }
            }
            // Without warm certificates, every box's first frame pays for its certificate: measure
            // the first frame of each box only.
            let measured = repeated ? again : warmCertificates ? signed : Array(signed.prefix(boxes.count))
            var accepted = 0
            let start = threadCPUNanoseconds()
            for f in measured {
                if case .accepted = verifier.check(f, clock: &clock, wallMicroseconds: wall, monotonicMicroseconds: 0) { accepted += 1 }
            }
            let cpu = threadCPUNanoseconds() - start
            guard accepted == measured.count else { throw BenchError("\(Self.metric): \(accepted) of \(measured.count) signed frames accepted") }
            return Double(cpu) / 1_000 / Double(measured.count)
        }
        var checked: [Double] = [], baseline: [Double] = [], firstOfABox: [Double] = [], again: [Double] = [], refused: [Double] = []
        _ = try signedCheck(warmCertificates: true, repeated: false)   // warm-up
        _ = try sharedCheck(shared, expectValid: true)
        for _ in 0..<plan.runs {
            checked.append(try signedCheck(warmCertificates: true, repeated: false))
            baseline.append(try sharedCheck(shared, expectValid: true))
            firstOfABox.append(try signedCheck(warmCertificates: false, repeated: false))
            again.append(try signedCheck(warmCertificates: true, repeated: true))
            refused.append(try sharedCheck(forged, expectValid: false))
        }
        reporter.emit(MetricLine(
            metric: Self.metric, value: median(checked) ?? 0, unit: "us", baseline: median(baseline),
            context: [
                ("baseline_is", .string("the version-1 shared-key check of the same alerts (HMAC-SHA256, truncated tag)")),
                ("check", .string("FrameVerifier.check of a new signed frame from a box whose certificate was checked before: parse, rules, SHA-256, one Ed25519 verification")),
                ("first_frame_of_a_box_us", .optional(median(firstOfABox))),
                ("same_frame_again_us", .optional(median(again))),
                ("shared_key_forged_us", .optional(median(refused))),
                ("frames", .int(Self.frames)),
                ("runs", .int(checked.count)),
                ("value_min", .optional(checked.min())),
                ("value_max", .optional(checked.max())),
                ("signed_frames_per_second_one_core", .optional(median(checked).map { 1e6 / $0 })),
                ("cpu", .string("thread CPU time, one core")),
            ]))
    }
}

/// forged_flood_cpu: the share of one core the box spends when 1,000 forged signed frames a
/// second arrive from random addresses (each a different certificate, so no cache helps), through
/// the node's own path (`AirLink.inspect`: the advert's service data, the verifier, the counters),
/// with the default verification budget. Baseline, in the same run: the same flood with no budget
/// (every frame checked). Ratio < 1: the budget is what keeps verification from being the way to
/// stop a box.
struct ForgedFloodBench {
    static let metric = "forged_flood_cpu"
    static let framesPerSecond = 1_000
    static let seconds = 3
    let plan: Plan
    let reporter: Reporter

    func run() throws {
        progress("\(Self.metric): \(Self.framesPerSecond) forged frames a second for \(Self.seconds) s, \(plan.runs) runs")
        let network = try NetworkSigningKey(seed: [UInt8](repeating: 0x42, count: 32))
        let rogue = NetworkSigningKey()
        let nowSeconds: UInt32 = 1_800_000_000
        var reports: [AdvertisingReport] = []
        var generator = SplitMix(seed: 29)
        for i in 0..<(Self.framesPerSecond * Self.seconds) {
            let box = BoxSigningKey()
            // Half with a certificate the network never signed, half in a real box's name with a
            // signature by the wrong key: both cost one Ed25519 check to refuse.
            let certificate = try (i % 2 == 0 ? rogue : network).certify(node: UInt32(0x2000 + i), boxKey: box.publicKey,
                                                                         issued: 1_700_000_000, expires: 2_100_000_000)
            var frame = try SignedAlertFrame.sign(type: .sos, severity: 3, origin: certificate.node, counter: UInt32(i % 0xFF_FFFF),
                                                  expirySeconds: nowSeconds + 3_600, signedAtSeconds: nowSeconds - 10, clockVouched: true,
                                                  key: box, certificate: certificate)
            if i % 2 == 1 { frame[frame.count - 1] ^= 0x01 }
            let payload = try AdvertisingPayload.signedVigil(frame: frame)
            reports.append(AdvertisingReport(address: generator.next() & 0xFFFF_FFFF_FFFF, addressType: .addressRandom, rssi: -70,
                                             connectable: false, data: payload.bytes, timeMicroseconds: UInt64(nowSeconds) * 1_000_000))
        }
        func share(budget: UInt64?) throws -> (share: Double, refused: UInt64, shed: UInt64) {
            var settings = AirAlertSettings()
            settings.networkKey = network.publicKey.rawRepresentation
            settings.signed.verificationsPerSecond = budget ?? 1_000_000
            let credentials = BoxCredentials(key: BoxSigningKey(), network: network.publicKey)
            var air = AirLink(key: nil, settings: settings, presence: nil, nodeID: 0x42, credentials: credentials)
            air.signed.systemClock(synchronised: true)
            let step = 1_000_000 / UInt64(Self.framesPerSecond)
            let start = threadCPUNanoseconds()
            for (i, report) in reports.enumerated() {
                if air.inspect(report, now: report.timeMicroseconds, monotonic: UInt64(i) * step) != nil {
                    throw BenchError("\(Self.metric): a forged frame was accepted")
                }
            }
            let cpu = threadCPUNanoseconds() - start
            let c = air.counters
            return (Double(cpu) / 1e9 / Double(Self.seconds), c.forged + c.forgedCertificates, c.shed)
        }
        var budgeted: [Double] = [], unbounded: [Double] = []
        var last = (share: 0.0, refused: UInt64(0), shed: UInt64(0))
        _ = try share(budget: nil)
        for _ in 0..<plan.runs {
            last = try share(budget: FrameVerifier.Settings().verificationsPerSecond)
            budgeted.append(last.share)
            unbounded.append(try share(budget: nil).share)
        }
        reporter.emit(MetricLine(
            metric: Self.metric, value: median(budgeted) ?? 0, unit: "share_of_one_core", baseline: median(unbounded),
            context: [
                ("baseline_is", .string("the same flood with no verification budget: every forged frame checked")),
                ("budget_per_second", .int(Int(FrameVerifier.Settings().verificationsPerSecond))),
                ("frames_per_second", .int(Self.framesPerSecond)),
                ("seconds", .int(Self.seconds)),
                ("checked_and_refused", .int(Int(last.refused))),
                ("shed", .int(Int(last.shed))),
                ("runs", .int(budgeted.count)),
                ("path", .string("AirLink.inspect: service data, FrameVerifier.check, counters")),
                ("cpu", .string("thread CPU time over the flood's simulated seconds")),
            ]))
    }
}

/// A small deterministic generator for the flood's addresses.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
