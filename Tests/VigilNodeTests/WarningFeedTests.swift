import Foundation
import Testing
import VigilBoard
import VigilCAP
import VigilCore
import VigilEvents
import VigilSystem
import VigilTestSupport
@testable import VigilNode
@testable import VigilWarningFeeds

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

    /// The server with the corpus and the repeat template; stopped before the test's directory goes.
    final class FeedServer: @unchecked Sendable {
        let server: CAPFeedServer
        var port: Int { server.port }
        var certificate: String { server.certificate }

        init(_ dir: TemporaryDirectory) async throws {
            server = try await CAPFeedServer(directory: dir.path)
            let corpus = testsFile("VigilCAPTests/Corpus")
            for name in try FileManager.default.contentsOfDirectory(atPath: corpus) where name.hasSuffix(".xml") {
                try FileManager.default.copyItem(atPath: corpus + "/" + name, toPath: server.documents + "/" + name)
            }
            try Self.repeatTemplate.write(toFile: server.documents + "/repeat-template.xml", atomically: true, encoding: .utf8)
        }

        func url(_ path: String) -> String { server.url(path) }
        func stop() { server.stop() }
        func stats() async -> [String: [String: Int]] { await server.stats() }

        static let repeatTemplate = """
            <?xml version="1.0" encoding="UTF-8"?>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>VIGIL-TEST-REPEAT</identifier><sender>repeat@example.gov</sender>
            <sent>{SENT}</sent><status>Actual</status><msgType>Alert</msgType><scope>Public</scope>
            <info><category>Met</category><event>Storm</event><urgency>Expected</urgency><severity>Moderate</severity><certainty>Likely</certainty>
            <expires>2030-01-01T00:00:00+00:00</expires><headline>Storm watch</headline>
            <area><areaDesc>Everywhere near</areaDesc><circle>-33.8688,151.2093 50</circle></area></info></alert>
            """
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

    @Test func aFeedWhoseSignaturesAreRequiredGivesOnlyWhatItsSignersSigned() async throws {
        let dir = TemporaryDirectory()
        let server = try await CAPFeedServer(directory: dir.path + "/server")
        defer { server.stop() }
        let corpus = testsFile("VigilCAPTests/Corpus")
        for name in ["signed/signed-rsa.xml", "signed/tampered.xml", "signed/keyvalue.xml", "signed/stranger.xml", "fire-circle-near.xml"] {
            try FileManager.default.copyItem(atPath: corpus + "/" + name, toPath: server.documents + "/" + name.replacingOccurrences(of: "/", with: "-"))
        }
        try FileManager.default.copyItem(atPath: corpus + "/signed/ca.pem", toPath: dir.path("signers.pem"))
        var config = testConfiguration(dir, advertisers: 0)
        config.projections.warnings = CAPWarningSettings(site: Self.site)
        var feed = Self.feed(server.url("/feed.atom"), ca: server.certificate)
        feed.signersFile = "signers.pem"
        feed.signaturesRequired = true
        config.warningFeeds = [feed]
        let clock = ManualClock()
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)
        #expect(await untilChildProcess(running, seconds: 120) { $0.warningFeeds.status.first?.answered == 1 })
        let status = try #require(await onLoop(running) { $0.warningFeeds.status.first })
        #expect(status.logged == 1 && status.refused == 4, "the signed flood only: \(status)")
        running.requestStop(reason: "test")
        _ = try await ended(running)
        let events = try storedEvents(dir).compactMap { e -> WarningReceived? in
            guard case .warningReceived(let w) = e.body else { return nil }
            return w
        }
        #expect(events.count == 1 && events.first?.signatureVerified == true)
        #expect(events.first.map { (try? CAPReader.read([UInt8]($0.document)))?.identifier } == "VIGIL-TEST-FLOOD-0001")
    }

    @Test func optionalSignaturesTakeTheUnsignedUnverifiedRefuseTheForgedAndSignersMustBeACA() async throws {
        let dir = TemporaryDirectory()
        let server = try await CAPFeedServer(directory: dir.path + "/server")
        defer { server.stop() }
        let corpus = testsFile("VigilCAPTests/Corpus")
        for name in ["signed/signed-rsa.xml", "signed/tampered.xml", "fire-circle-near.xml"] {
            try FileManager.default.copyItem(atPath: corpus + "/" + name, toPath: server.documents + "/" + name.replacingOccurrences(of: "/", with: "-"))
        }
        try FileManager.default.copyItem(atPath: corpus + "/signed/ca.pem", toPath: dir.path("signers.pem"))
        try FileManager.default.copyItem(atPath: corpus + "/signed/signer.pem", toPath: dir.path("leaf.pem"))
        var config = testConfiguration(dir, advertisers: 0)
        config.projections.warnings = CAPWarningSettings(site: Self.site)
        var optional = Self.feed(server.url("/feed.atom"), ca: server.certificate)
        optional.signersFile = "signers.pem"
        var leaf = optional
        leaf.signersFile = "leaf.pem"
        config.warningFeeds = [optional, leaf]
        let clock = ManualClock()
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let running = try await start(node)
        #expect(await untilChildProcess(running, seconds: 120) { $0.warningFeeds.status.first?.answered == 1 })
        let status = await onLoop(running) { $0.warningFeeds.status }
        #expect(status[0].logged == 2 && status[0].refused == 1, "the signed flood and the unsigned fire; not the forgery: \(status[0])")
        #expect(status[1].problem?.contains("not self-signed") == true, "a signer's own certificate cannot anchor: \(String(describing: status[1].problem))")
        #expect(status[1].polls == 0, "a feed whose signers cannot be used is not read")
        running.requestStop(reason: "test")
        _ = try await ended(running)
        let verified = try storedEvents(dir).compactMap { e -> (String, Bool)? in
            guard case .warningReceived(let w) = e.body, let alert = try? CAPReader.read([UInt8](w.document)) else { return nil }
            return (alert.identifier, w.signatureVerified)
        }
        #expect(verified.sorted { $0.0 < $1.0 }.map { "\($0.0) \($0.1)" } == ["VIGIL-TEST-FIRE-0001 false", "VIGIL-TEST-FLOOD-0001 true"])
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
