import Foundation
import VigilBoard
import VigilCAP
import VigilCore
import VigilLog
import VigilNode
import VigilSystem
import VigilTestSupport
import VigilWarningFeeds

/// `warning_to_buzzer_ms`: from the feed server finishing its answer with a new Extreme,
/// Immediate, Observed warning for the site until the box first drives the buzzer for it: the
/// box's own share, without the wait for the next poll. It covers reading the answer over TLS,
/// CAPReader beside the loop, the loop judging it, the `warning-received` append and its group
/// commit (deferred-meta sync: the data fdatasync and the meta sync), applying it, and the
/// buzzer's reconcile.
///
/// The server is `scripts/cap-feed-server` (a real HTTPS server on loopback, in Python), which
/// notes CLOCK_MONOTONIC when it has written each 200 answer; the probed board notes the same
/// clock when the buzzer goes on. The box polls `/alert.xml` every 100 ms (with `If-None-Match`:
/// a poll with nothing new is a 304). Each sample replaces the document with a new warning; once
/// it sounds, staff silence it (so the next one starts the tone again).
///
/// Baseline in the same run: the same warnings handed to the box by staff (`vigil warning
/// import`, the control command) until the buzzer: the loop's share alone, without the fetch.
struct WarningLatencyBench {
    static let metric = "warning_to_buzzer_ms"
    static let site = CAPPoint(latitude: -33.8688, longitude: 151.2093)
    static let pollMicroseconds: UInt64 = 100_000
    static let waitTimeoutNanoseconds: UInt64 = 20_000_000_000

    let plan: Plan
    let options: Options
    let reporter: Reporter

    var samplesPerRun: Int { options.quick ? 10 : 20 }

    func run() throws {
        var fromFeed: [UInt64] = []
        var fromStaff: [UInt64] = []
        for run in 1...plan.runs {
            let (feed, staff) = try withTemporaryDirectory("warning") { try measure(directory: $0) }
            fromFeed += feed
            fromStaff += staff
            progress("\(Self.metric) run \(run)/\(plan.runs): feed median \(milliseconds(percentile(feed.sorted(), 50) ?? 0)) ms, "
                     + "staff's import median \(milliseconds(percentile(staff.sorted(), 50) ?? 0)) ms")
        }
        let feed = fromFeed.sorted(), staff = fromStaff.sorted()
        guard let value = percentile(feed, 50), let baseline = percentile(staff, 50) else { throw BenchError("warning: nothing measured") }
        reporter.emit(MetricLine(
            metric: Self.metric, value: milliseconds(value), unit: "ms", baseline: milliseconds(baseline),
            context: [
                ("baseline_is", .string("the same warnings imported by staff (control command sent) until the buzzer, ms median")),
                ("definition", .string("buzzer_on_monotonic - feed server's 200 answer written (CLOCK_MONOTONIC), ms median")),
                ("p90", .optional(percentile(feed, 90).map(milliseconds))),
                ("max", .optional(feed.last.map(milliseconds))),
                ("baseline_p90", .optional(percentile(staff, 90).map(milliseconds))),
                ("count", .int(feed.count)),
                ("runs", .int(plan.runs)),
                ("poll_ms", .double(Double(Self.pollMicroseconds) / 1_000)),
                ("sync", .string(SyncMode.deferredMeta.rawValue)),
                ("server", .string("scripts/cap-feed-server (Python, TLS, HTTP/1.0: a handshake per poll, before the answer)")),
            ]))
    }

    /// One fresh node and server: a warm-up and `samplesPerRun` warnings from the feed, then as
    /// many from staff.
    private func measure(directory: String) throws -> (feed: [UInt64], staff: [UInt64]) {
        let server = try blocking { try await CAPFeedServer(directory: directory + "/server") }
        defer { server.stop() }
        // A quiet warning first: the feed is never empty (an empty one is a failure, backed off).
        try Self.publish(Self.document("BENCH-QUIET", severity: "Minor", urgency: "Future"), in: server.documents)

        var configuration = SOSLatencyBench.pressConfiguration(directory: directory + "/node")
        configuration.simulation.advertisers = 0
        configuration.projections.warnings = CAPWarningSettings(site: Self.site)
        var feed = WarningFeedSettings(url: server.url("/alert.xml"))
        feed.caFile = server.certificate
        feed.intervalMicroseconds = Self.pollMicroseconds
        configuration.warningFeeds = [feed]
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        let probe = SOSProbe()
        let running = try SOSLatencyBench.startProbedNode(configuration, probe: probe, thread: "vigil-bench-warning", watching: .buzzer)
        let node = running.handle
        defer {
            node.requestStop(reason: "benchmark done")
            _ = probe.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds) { $0.finished }
            _ = running.join()
        }

        var feedLatencies: [UInt64] = []
        for sample in 0...samplesPerRun {
            let before = probe.snapshot().onEdges.count
            try Self.publish(Self.document("BENCH-FEED-\(sample)"), in: server.documents)
            let on = try buzzerOn(after: before, probe, "the feed's warning \(sample)")
            let stats = try blocking { await server.stats() }
            guard let answered = stats["/alert.xml"]?["last_200_ns"], answered > 0, on >= UInt64(answered) else {
                throw BenchError("warning: the server's answer (\(String(describing: stats["/alert.xml"]))) is not before the buzzer (\(on))")
            }
            if sample > 0 { feedLatencies.append(on - UInt64(answered)) }
            try silence(node, probe)
        }

        var staffLatencies: [UInt64] = []
        for sample in 0...samplesPerRun {
            let before = probe.snapshot().onEdges.count
            let document = Array(Self.document("BENCH-STAFF-\(sample)").utf8)
            let sent = monotonicNanoseconds()
            let reply = try blocking { await node.perform(.importWarning(WarningImport(document: document, source: "bench"))) }
            guard reply?.ok == true else { throw BenchError("warning: the import was refused: \(String(describing: reply?.error))") }
            let on = try buzzerOn(after: before, probe, "staff's warning \(sample)")
            if sample > 0 { staffLatencies.append(on - sent) }
            try silence(node, probe)
        }
        return (feedLatencies, staffLatencies)
    }

    /// When the buzzer next went on after the `before`th time.
    private func buzzerOn(after before: Int, _ probe: SOSProbe, _ what: String) throws -> UInt64 {
        guard let state = probe.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds, until: { $0.onEdges.count > before || $0.finished }),
              state.onEdges.count > before else {
            throw BenchError("warning: \(what) did not sound within \(Self.waitTimeoutNanoseconds / 1_000_000_000) s")
        }
        return state.onEdges[before]
    }

    /// Silences the warnings sounding and waits for the buzzer to be off.
    private func silence(_ node: NodeHandle, _ probe: SOSProbe) throws {
        let reply = try blocking { await node.perform(.silenceAlarms(SilenceRequest(by: "bench"))) }
        guard reply?.ok == true else { throw BenchError("warning: silencing failed: \(String(describing: reply?.error))") }
        guard probe.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds, until: { !$0.watchedOn }) != nil else {
            throw BenchError("warning: the buzzer stayed on after silencing")
        }
    }

    /// Replaces the feed's one document (written beside it, then renamed over it: a poll never
    /// reads half of one).
    static func publish(_ document: String, in directory: String) throws {
        let temporary = directory + "/alert.xml.part"
        try document.write(toFile: temporary, atomically: false, encoding: .utf8)
        guard rename(temporary, directory + "/alert.xml") == 0 else { throw BenchError("warning: cannot publish: errno \(errno)") }
    }

    /// A warning for the site, sent a second ago, for an hour.
    static func document(_ identifier: String, severity: String = "Extreme", urgency: String = "Immediate") -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>\(identifier)</identifier><sender>bench@example.gov</sender>
            <sent>\(CAPTime(microseconds: now - 1_000_000, offsetMinutes: 660).capText)</sent><status>Actual</status><msgType>Alert</msgType><scope>Public</scope>
            <info><category>Met</category><event>Flash flood</event><urgency>\(urgency)</urgency><severity>\(severity)</severity>
            <certainty>Observed</certainty><expires>\(CAPTime(microseconds: now + 3_600_000_000, offsetMinutes: 660).capText)</expires>
            <headline>Flash flood \(identifier)</headline>
            <area><areaDesc>River flats</areaDesc><polygon>-33.80,151.15 -33.80,151.25 -33.90,151.25 -33.90,151.15 -33.80,151.15</polygon></area></info></alert>
            """
    }
}
