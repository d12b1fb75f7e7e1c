import Foundation
import Testing
import VigilBoard
import VigilCAP
import VigilCore
import VigilEvents
import VigilSystem
import VigilTestSupport
@testable import VigilNode

/// Issue 32, item 1: public warnings feeds over HTTPS from a real local server
/// (`scripts/cap-feed-server`, serving the CAP corpus): an Atom index's documents are fetched,
/// read beside the loop and logged only when they change the warnings; the next poll asks
/// "only if changed" and gets 304; a feed serving garbage, one that is gone and one larger
/// than the box reads are failures with the reason, retried with back-off; a feed repeating its
/// alert with a new `sent` each time is logged once.
///
/// The node runs on a `ManualClock` (the polls are its timers); the server and the sockets are
/// real, so the tests wait for them with `untilChildProcess` (bounded, never timing: the bound,
/// two minutes, only stops a stuck test; a poll of the corpus takes about a second alone and
/// tens of seconds beside the whole suite on two cores).
@Suite(.serialized) struct WarningFeedTests {
    static let site = CAPPoint(latitude: -33.8688, longitude: 151.2093)

    /// The server, its certificate and its documents; stopped with the test's directory.
    final class FeedServer: @unchecked Sendable {
        let process = TestProcess()
        let port: Int
        let certificate: String

        init(_ dir: TemporaryDirectory) async throws {
            let documents = dir.path + "/feed"
            try FileManager.default.createDirectory(atPath: documents, withIntermediateDirectories: true)
            let corpus = testsFile("VigilCAPTests/Corpus")
            for name in try FileManager.default.contentsOfDirectory(atPath: corpus) where name.hasSuffix(".xml") {
                try FileManager.default.copyItem(atPath: corpus + "/" + name, toPath: documents + "/" + name)
            }
            try Self.repeatTemplate.write(toFile: documents + "/repeat-template.xml", atomically: true, encoding: .utf8)
            certificate = dir.path + "/feed-cert.pem"
            let made = runProcess("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                       "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                                       "-keyout", dir.path + "/feed-key.pem", "-out", certificate])
            guard made.status == 0 else { throw HarnessFailure("openssl: \(made.output)") }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [testsFile("../scripts/cap-feed-server"), "--directory", documents, "--cert", certificate,
                                 "--key", dir.path + "/feed-key.pem"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let line = await offPool { () -> String in
                var data = Data()
                while !data.contains(UInt8(ascii: "\n")) {
                    let chunk = out.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    data.append(chunk)
                }
                return String(decoding: data, as: UTF8.self)
            }
            guard let range = line.range(of: "listening on port "), let p = Int(line[range.upperBound...].prefix { $0.isNumber }) else {
                process.terminate()
                throw HarnessFailure("cap-feed-server did not start: \(line)")
            }
            port = p
        }

        func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }

        /// How many 200 and 304 answers each path gave.
        func stats() async -> [String: [String: Int]] {
            let certificate = self.certificate, url = self.url("/stats")
            return await offPool {
                let got = runProcess("/usr/bin/curl", ["-sS", "--cacert", certificate, url])
                return (try? JSONDecoder().decode([String: [String: Int]].self, from: Data(got.output.utf8))) ?? [:]
            }
        }

        static let repeatTemplate = """
            <?xml version="1.0" encoding="UTF-8"?>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>VIGIL-TEST-REPEAT</identifier><sender>repeat@example.gov</sender>
            <sent>{SENT}</sent><status>Actual</status><msgType>Alert</msgType><scope>Public</scope>
            <info><category>Met</category><event>Storm</event><urgency>Expected</urgency><severity>Moderate</severity><certainty>Likely</certainty>
            <expires>2030-01-01T00:00:00+00:00</expires><headline>Storm watch</headline>
            <area><areaDesc>Everywhere near</areaDesc><circle>-33.8688,151.2093 50</circle></area></info></alert>
            """
    }

    struct HarnessFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func feed(_ url: String, ca: String) -> WarningFeedSettings {
        var f = WarningFeedSettings(url: url)
        f.caFile = ca
        f.intervalMicroseconds = 10_000_000
        return f
    }

    static func received(_ dir: TemporaryDirectory) throws -> [CAPAlert] {
        try storedEvents(dir).compactMap { e -> CAPAlert? in
            guard case .warningReceived(let w) = e.body else { return nil }
            return try? CAPReader.read([UInt8](w.document))
        }
    }

    @Test func anAtomFeedsDocumentsAreLoggedWhenTheyChangeTheWarningsAndAskedForAgainOnlyIfChanged() async throws {
        let dir = TemporaryDirectory()
        let server = try await FeedServer(dir)
        defer { server.stop() }
        var config = testConfiguration(dir, advertisers: 0)
        config.projections.warnings = CAPWarningSettings(site: Self.site)
        config.warningFeeds = [Self.feed(server.url("/feed.atom"), ca: server.certificate)]
        let clock = ManualClock()
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)

        // Judged in the order they were sent: the flood warning, its update, then the cancel that
        // ends the update; every document of the corpus changes the warnings in turn.
        #expect(await untilChildProcess(running, seconds: 120) { $0.warningFeeds.status.first?.answered == 1 })
        #expect(await untilChildProcess(running, seconds: 120) { $0.projections.warnings.warnings.current.count == 7 })
        let status = try #require(await onLoop(running) { $0.warningFeeds.status.first })
        #expect(status.logged == 10 && status.unchanged == 0 && status.refused == 0 && status.problem == nil, "\(status)")
        #expect(await onLoop(running) { !$0.projections.warnings.warnings.current.keys.contains { $0.identifier.hasPrefix("VIGIL-TEST-FLOOD") } })
        #expect(await onLoop(running) { $0.projections.warnings.loudest } == .sounds, "the fire around the site sounds")
        #expect(await onLoop(running) { $0.patterns.decisions[.buzzer]?.pattern } == OutputPolicy.warningTone)

        // Ten seconds on, the index is asked for only if changed: 304, nothing fetched or logged.
        clock.advance(byMicroseconds: 10_000_000)
        #expect(await untilChildProcess(running, seconds: 120) { $0.warningFeeds.status.first?.answered == 2 })
        let stats = await server.stats()
        #expect(stats["/feed.atom"]?["304"] == 1 && stats["/feed.atom"]?["200"] == 1, "\(stats)")
        #expect(stats["/docs/flood-warning.xml"]?["200"] == 1, "each document fetched once: \(stats)")
        running.requestStop(reason: "test")
        _ = try await ended(running)
        #expect(try Self.received(dir).count == 10)
    }

    @Test func garbageAGoneFeedAndAnOversizeAnswerAreFailuresWithTheReasonRetriedWithBackOff() async throws {
        let dir = TemporaryDirectory()
        let server = try await FeedServer(dir)
        defer { server.stop() }
        var config = testConfiguration(dir, advertisers: 0)
        config.projections.warnings = CAPWarningSettings(site: Self.site)
        config.warningFeeds = ["/garbage", "/gone", "/huge"].map { Self.feed(server.url($0), ca: server.certificate) }
            + [Self.feed("https://127.0.0.1:\(freeLoopbackPort())/feed.atom", ca: server.certificate)]
        let clock = ManualClock()
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)
        #expect(await untilChildProcess(running, seconds: 120) { $0.warningFeeds.status.allSatisfy { $0.failures == 1 } })
        let status = await onLoop(running) { $0.warningFeeds.status }
        #expect(status[0].problem?.contains("not a CAP 1.2 document, Atom feed or RSS channel") == true, "\(String(describing: status[0].problem))")
        #expect(status[1].problem?.contains("HTTP 410") == true, "\(String(describing: status[1].problem))")
        #expect(status[2].problem?.contains("longer than") == true, "\(String(describing: status[2].problem))")
        #expect(status[3].problem != nil, "nothing listens there")
        // Back-off: not again after the interval (10 s) but after twice it.
        clock.advance(byMicroseconds: 10_000_000)
        #expect(!(await untilChildProcess(running, seconds: 1) { $0.warningFeeds.status.contains { $0.polls > 1 } }))
        clock.advance(byMicroseconds: 10_000_000)
        #expect(await untilChildProcess(running, seconds: 120) { $0.warningFeeds.status.allSatisfy { $0.failures == 2 } })
        #expect(await onLoop(running) { $0.projections.warnings.warnings.current.isEmpty })
        running.requestStop(reason: "test")
        _ = try await ended(running)
        #expect(try Self.received(dir).isEmpty)
    }

    @Test func aFeedRepeatingItsAlertWithNewSentTimesIsLoggedOnce() async throws {
        let dir = TemporaryDirectory()
        let server = try await FeedServer(dir)
        defer { server.stop() }
        var config = testConfiguration(dir, advertisers: 0)
        config.projections.warnings = CAPWarningSettings(site: Self.site)
        config.warningFeeds = [Self.feed(server.url("/repeat.xml"), ca: server.certificate)]
        let clock = ManualClock()
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)
        #expect(await untilChildProcess(running, seconds: 120) { $0.warningFeeds.status.first?.logged == 1 })
        for poll in 2...3 {
            // Each answer's `sent` is a second later than the one before (the server counts).
            clock.advance(byMicroseconds: 10_000_000)
            #expect(await untilChildProcess(running, seconds: 120) { $0.warningFeeds.status.first?.answered == UInt64(poll) })
        }
        let status = try #require(await onLoop(running) { $0.warningFeeds.status.first })
        #expect(status.logged == 1 && status.unchanged == 2, "\(status)")
        #expect(await onLoop(running) { $0.projections.warnings.inForceHere.map(\.level) } == [.shown], "Moderate: shown, never sounding")
        running.requestStop(reason: "test")
        _ = try await ended(running)
        #expect(try Self.received(dir).count == 1)
    }
}
