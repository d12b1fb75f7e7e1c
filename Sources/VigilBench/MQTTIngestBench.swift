import Foundation
import VigilCore
import VigilNode
import VigilSystem
import VigilTestSupport

/// `mqtt_psm_ingest_eps`: PSMs a second from a real broker through the node's hazard feed into
/// the projection, none shed. A Mosquitto broker on loopback with mutual TLS (as the tests run
/// it); a running node (real clocks, the default `deferred-meta` log, a site at Phoenix's
/// reference point) subscribed to DriveAZ's topics; a publisher floods `count` PSMs from 2,000
/// pedestrians, at QoS 0 as fast as its socket takes them. The feed's coalescing (a road user
/// logged at most once a second) is off for the run, so every PSM is decoded, logged and
/// applied: the figure is the whole path's, not the coalescing's.
/// The figure is `count` over the time from the flood's first byte to the projection having
/// applied the last report (each `HazardReported` durable in the log first). The feed's bound
/// on reports in flight is raised for the run so that none is shed; a run that sheds fails.
///
/// Baseline in the same run: the same flood to a bare libmosquitto subscriber that only counts
/// (the broker's and TLS's own rate on this machine), so the ratio is what decoding, logging and
/// applying cost on top. Context: commits and flushes per thousand PSMs (what an SD card sees).
struct MQTTIngestBench {
    static let metric = "mqtt_psm_ingest_eps"
    let plan: Plan
    let options: Options
    let reporter: Reporter

    var count: Int { options.quick ? 5_000 : 20_000 }
    static let pedestrians = 2_000

    func run() throws {
        var values: [Double] = [], baselines: [Double] = []
        var commitsPerThousand: [Double] = [], flushesPerThousand: [Double] = []
        try withTemporaryDirectory("mqtt") { directory in
            let broker = try MosquittoBroker(directory: directory + "/broker", port: freeLoopbackPort())
            try broker.start()
            defer { broker.stop() }
            for run in 1...plan.runs {
                let baseline = try bareSubscriber(broker)
                let (eps, commits, flushes) = try throughNode(broker, directory: directory + "/node-\(run)")
                values.append(eps)
                baselines.append(baseline)
                commitsPerThousand.append(commits * 1_000 / Double(count))
                flushesPerThousand.append(flushes * 1_000 / Double(count))
                progress("\(Self.metric) run \(run)/\(plan.runs): \(Int(eps)) PSM/s through the node; bare subscriber \(Int(baseline)) PSM/s; \(Int(commits)) commits, \(Int(flushes)) flushes")
            }
        }
        reporter.emit(MetricLine(
            metric: Self.metric, value: median(values) ?? 0, unit: "PSM/s", baseline: median(baselines),
            context: [
                ("baseline_is", .string("the same flood to a bare libmosquitto subscriber that only counts, PSM/s")),
                ("definition", .string("PSMs from a TLS Mosquitto on loopback through the hazard feed, durable in the log and applied to the projection, none shed")),
                ("psms_per_run", .int(count)),
                ("pedestrians", .int(Self.pedestrians)),
                ("runs", .int(values.count)),
                ("value_min", .optional(values.min())),
                ("value_max", .optional(values.max())),
                ("commits_per_1000_psms", .optional(median(commitsPerThousand))),
                ("flushes_per_1000_psms", .optional(median(flushesPerThousand))),
            ]))
    }

    /// The broker's own rate: a subscriber that only counts.
    private func bareSubscriber(_ broker: MosquittoBroker) throws -> Double {
        let started = LockedValue<UInt64?>(nil)
        let flood = LockedValue<String?>(nil)
        var floodThread: OSThread?
        let received = try FeedPublisher.receive(broker: broker, topic: "vzimp/1/GeoRelevance/+/+/Public/j2735/PSM/+", count: count) {
            started.withLock { $0 = monotonicNanoseconds() }
            floodThread = try? OSThread(name: "bench-flood") { [count] in
                do { try FeedPublisher.flood(broker: broker, count: count, distinctIDs: Self.pedestrians) } catch { flood.withLock { $0 = "\(error)" } }
            }
        }
        let end = monotonicNanoseconds()
        floodThread?.join()
        if let failure = flood.withLock({ $0 }) { throw BenchError("mqtt: the flood failed: \(failure)") }
        guard received == count, let start = started.withLock({ $0 }) else { throw BenchError("mqtt: the bare subscriber got \(received) of \(count)") }
        return Double(count) / (Double(end - start) / 1e9)
    }

    private func throughNode(_ broker: MosquittoBroker, directory: String) throws -> (Double, Double, Double) {
        var configuration = NodeConfiguration()
        configuration.dataDirectory = directory
        configuration.radio = "sim"
        configuration.simulation.advertisers = 0
        configuration.projections.hazardSite = HazardSite(latitude: 33.4351, longitude: -112.0108)
        var feed = HazardFeedSettings()
        feed.brokers = [HazardFeedSettings.Broker(name: "phoenix", host: "127.0.0.1", port: broker.port, latitude: 33.4351, longitude: -112.0108)]
        feed.caFile = broker.directory + "/ca.pem"
        feed.certificateFile = broker.directory + "/box.crt"
        feed.keyFile = broker.directory + "/box.key"
        feed.vru = false
        feed.maximumInFlight = count
        feed.roadUserLogIntervalMicroseconds = 0
        configuration.hazardFeed = feed
        let node: Node
        do {
            node = try Node(configuration: configuration, logger: benchNodeLogger())
        } catch {
            throw BenchError("mqtt: cannot open a node in \(directory): \(error)")
        }
        let finished = LockedValue<String??>(nil)
        let running = try NodeThread(node, name: "vigil-bench-mqtt") { error in finished.withLock { $0 = .some(error.map { "\($0)" }) } }
        defer {
            running.handle.requestStop(reason: "benchmark done")
            _ = running.join()
        }
        func read<T: Sendable>(_ body: @escaping @Sendable (Node) -> T) -> T? {
            let box = LockedValue<T?>(nil)
            running.handle.onLoop { n in box.withLock { $0 = body(n) } }
            return wait(seconds: 10) { box.withLock { $0 } }
        }
        // Connected, and subscribed: a probe PSM (a pedestrian of its own) comes through.
        guard wait(seconds: 20, { (read { $0.liveStatus().hazardFeed?.connected } ?? nil) == true ? true : nil }) == true else {
            throw BenchError("mqtt: the node did not connect to the broker")
        }
        let probed = wait(seconds: 20) { () -> Bool? in
            try? FeedPublisher.flood(broker: broker, count: 1, distinctIDs: 1)
            let received = read { $0.liveStatus().hazardFeed?.counters.receivedPSM ?? 0 } ?? 0
            return received > 0 ? true : nil
        }
        guard probed == true else { throw BenchError("mqtt: the node's subscription never took a PSM") }
        // Every probe's report applied before counting: none of them may count toward the flood.
        _ = wait(seconds: 20) { () -> Bool? in
            let applied = read { n in n.projections.hazards.reports >= (n.liveStatus().hazardFeed?.counters.logged ?? 0) } ?? false
            return applied ? true : nil
        }
        let before = read { ($0.projections.hazards.reports, $0.liveStatus().log) }
        guard let (reportsBefore, logBefore) = before else { throw BenchError("mqtt: the node does not answer") }
        let start = monotonicNanoseconds()
        try FeedPublisher.flood(broker: broker, count: count, distinctIDs: Self.pedestrians)
        let target = reportsBefore + UInt64(count)
        let done = wait(seconds: 120) { () -> Bool? in
            guard let reports = read({ $0.projections.hazards.reports }) else { return nil }
            return reports >= target ? true : nil
        }
        let end = monotonicNanoseconds()
        guard done == true, let after = read({ ($0.liveStatus().log, $0.liveStatus().hazardFeed?.counters) }), let counters = after.1 else {
            let counters = read { $0.liveStatus().hazardFeed?.counters }
            throw BenchError("mqtt: the projection did not take all \(count) PSMs: \(String(describing: counters))")
        }
        guard counters.shed == 0 else { throw BenchError("mqtt: \(counters.shed) PSMs shed; the figure is for none shed") }
        if let failure = finished.withLock({ $0 }) ?? nil { throw BenchError("mqtt: the node stopped: \(failure)") }
        return (Double(count) / (Double(end - start) / 1e9), Double(after.0.commits - logBefore.commits), Double(after.0.flushes - logBefore.flushes))
    }

    /// Polls `body` until it returns a value (a benchmark waits on a broker and a node in real
    /// time; 1 ms between polls), or nil after `seconds`.
    private func wait<T>(seconds: Double, _ body: () -> T?) -> T? {
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        while monotonicNanoseconds() < deadline {
            if let value = body() { return value }
            usleep(1_000)
        }
        return nil
    }

    private func monotonicNanoseconds() -> UInt64 { SystemMonotonicClock().nowNanoseconds() }
}
