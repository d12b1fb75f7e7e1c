import Foundation
import Testing
import VigilBoard
import VigilCAP
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// Issue 32: a public warning handed to a running box (`vigil warning import`) is judged like a
/// feed's: one for the site that is Extreme, Immediate and Observed lights amber and sounds its
/// tone until silenced, ends by itself on a quiet box, and replays to the same state; a test
/// message is listed and never sounds; a copy and garbage are refused with the reason.
@Suite(.serialized) struct WarningNodeTests {
    static let site = CAPPoint(latitude: -33.8688, longitude: 151.2093)

    static func document(_ id: String, sent: UInt64, expires: UInt64, status: String = "Actual") -> [UInt8] {
        Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>\(id)</identifier><sender>test@example.gov</sender>
            <sent>\(CAPTime(microseconds: Int64(sent), offsetMinutes: 660))</sent><status>\(status)</status><msgType>Alert</msgType><scope>Public</scope>
            <info><category>Met</category><event>Flash flood</event><urgency>Immediate</urgency><severity>Extreme</severity>
            <certainty>Observed</certainty><expires>\(CAPTime(microseconds: Int64(expires), offsetMinutes: 660))</expires>
            <headline>Flash flood \(id): move to \u{202E}higher ground</headline>
            <area><areaDesc>River flats</areaDesc><polygon>-33.80,151.15 -33.80,151.25 -33.90,151.25 -33.90,151.15 -33.80,151.15</polygon></area></info></alert>
            """.utf8)
    }

    /// A node on a simulated board and a manual clock, running and settled.
    static func start(_ config: NodeConfiguration) async throws -> (ManualClock, NodeThread) {
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try NodeThread(node, name: "vigil-test-loop")
        await settled(running)
        return (clock, running)
    }

    @Test func aWarningForTheSiteSoundsIsSilencedEndsOnAQuietBoxAndReplays() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 0)
        config.projections.warnings = CAPWarningSettings(site: Self.site)
        let (clock, running) = try await Self.start(config)
        let now = clock.nowMicroseconds()
        let flood = Self.document("F-1", sent: now - 60_000_000, expires: now + 600_000_000)

        let reply = await running.perform(.importWarning(WarningImport(document: flood, source: "test")))
        #expect(reply?.sequence != nil, "\(String(describing: reply?.error))")
        await advance(clock, running, byMicroseconds: 100_000, step: 50_000)
        #expect(await onLoop(running) { $0.patterns.decisions[.buzzer]?.pattern == OutputPolicy.warningTone }, "the warning's tone sounds")
        #expect(await onLoop(running) { $0.patterns.decisions[.amber]?.pattern == OutputPolicy.warningBlink }, "and amber blinks slowly")
        let why = await onLoop(running) { $0.patterns.decisions[.amber]?.reasons.map(\.text) ?? [] }
        #expect(why.count == 1 && why[0].hasPrefix("public warning: Flash flood F-1: move to higher ground (Extreme, Immediate, Observed)"),
                "vigil why names the warning, its direction override dropped: \(why)")
        #expect(await onLoop(running) { $0.scheduler.isArmed(WarningClock.timer) })

        // The same document again changes nothing, and says so; garbage says why.
        let again = await running.perform(.importWarning(WarningImport(document: flood, source: "test")))
        #expect(again?.refusal == .conflict && again?.error?.contains("has this message already") == true, "\(String(describing: again?.error))")
        let garbage = await running.perform(.importWarning(WarningImport(document: Array("<alert/>".utf8), source: "test")))
        #expect(garbage?.refusal == .invalid && garbage?.error?.contains("not a CAP 1.2 alert") == true, "\(String(describing: garbage?.error))")

        // Silenced: the tone stops, the warning stays on amber.
        _ = await running.perform(.silenceAlarms(SilenceRequest(by: "test")))
        await advance(clock, running, byMicroseconds: 100_000, step: 50_000)
        #expect(await onLoop(running) { $0.patterns.decisions[.buzzer]?.pattern != OutputPolicy.warningTone })
        #expect(await onLoop(running) { $0.patterns.decisions[.amber]?.pattern == OutputPolicy.warningBlink })

        // A test message for the site is listed, never on the LEDs or the buzzer.
        let test = Self.document("T-1", sent: now, expires: now + 3_600_000_000, status: "Test")
        #expect(await running.perform(.importWarning(WarningImport(document: test, source: "test")))?.sequence != nil)
        await advance(clock, running, byMicroseconds: 100_000, step: 50_000)
        #expect(await onLoop(running) { $0.projections.warnings.inForceHere.map(\.level) } == [.sounds, .listed])
        #expect(await onLoop(running) { $0.patterns.decisions[.buzzer]?.pattern != OutputPolicy.warningTone })

        // Ten minutes on, with nothing else heard, the flood warning ends by itself.
        await advance(clock, running, byMicroseconds: 600_000_000, step: 5_000_000)
        #expect(await onLoop(running) { $0.projections.warnings.inForceHere.map(\.key.identifier) } == ["T-1"])
        #expect(await onLoop(running) { $0.patterns.decisions[.amber]?.pattern != OutputPolicy.warningBlink })

        running.requestStop(reason: "test")
        let stopped = try await ended(running)
        let events = try storedEvents(dir)
        #expect(events.count { if case .warningReceived = $0.body { true } else { false } } == 2, "the copy and the garbage were not logged")
        #expect(events.count { if case .warningDeadline = $0.body { true } else { false } } == 1)
        var replayed = Projections(settings: config.projections)
        for e in events { replayed.apply(e) }
        #expect(replayed.warnings == stopped.projections.warnings, "replay gives the same warnings")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(try encoder.encode(replayed.warnings) == encoder.encode(stopped.projections.warnings), "and the same bytes")
    }

    /// The call path (docs/warnings.md): a warning that sounds reaches the staff through the
    /// notifier once, as text anyone may read; its repeat and a test message reach no one.
    @Test func aWarningThatSoundsReachesTheStaffThroughTheNotifierOnce() async throws {
        let dir = TemporaryDirectory()
        var config = try CallsForHelpNodeTests.configuration(dir)
        config.projections.warnings = CAPWarningSettings(site: Self.site)
        let (clock, running) = try await Self.start(config)
        let now = clock.nowMicroseconds()
        func handOver() async {
            for _ in 0..<50 {
                clock.advance(byMicroseconds: 100_000)
                await settled(running)
                _ = await untilChildProcess(running) { !$0.scheduler.isArmed(Deliveries.timeoutTimer) }
                await settled(running)
                if await onLoop(running, { $0.projections.outbox.pending.allSatisfy { !$0.id.hasPrefix("warning/") } }) { return }
            }
        }
        let flood = Self.document("F-1", sent: now - 60_000_000, expires: now + 3_600_000_000)
        #expect(await running.perform(.importWarning(WarningImport(document: flood, source: "test")))?.sequence != nil)
        await handOver()
        // The feed serves it again a minute later, ending later: a repeat, not news.
        let repeated = Self.document("F-1", sent: now, expires: now + 7_200_000_000)
        #expect(await running.perform(.importWarning(WarningImport(document: repeated, source: "test")))?.sequence != nil)
        let test = Self.document("T-1", sent: now, expires: now + 3_600_000_000, status: "Test")
        #expect(await running.perform(.importWarning(WarningImport(document: test, source: "test")))?.sequence != nil)
        await handOver()

        let told = CallsForHelpNodeTests.received(dir)
        #expect(told.count == 1, "\(told)")
        #expect(told.first?["channel"] as? String == "staff")
        #expect(told.first?["recipients"] as? [String] == [CallsForHelpNodeTests.staff])
        let text = told.first?["text"] as? String ?? ""
        #expect(text.hasPrefix("Public warning for Shelter North: Flash flood F-1: move to higher ground (Extreme, Immediate), until "), "\(text)")
        #expect(await onLoop(running) { $0.projections.outbox.entries["warning/test@example.gov/F-1"]?.delivered } == true)
        running.requestStop(reason: "test")
        _ = try await ended(running)
    }
}
