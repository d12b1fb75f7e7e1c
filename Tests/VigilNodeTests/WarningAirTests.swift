import Foundation
import Testing
import VigilBoard
import VigilCAP
import VigilCore
import VigilEvents
import VigilRadio
@testable import VigilNode

/// Public warnings on the air (docs/signed-frames.md "Public warning frame"): a certified box
/// holding a warning for its site tells the boxes in range, signed; a box with no feed of its
/// own believes it under the network key, sounds it, logs the news once, and lets it go when
/// the frames stop.
@Suite(.serialized) struct WarningAirTests {
    let air = SignedAirTests()

    func warningFrames(_ radio: ScriptedRadio) -> [PublicWarningFrame] {
        air.signedFrames(radio).compactMap { bytes in (try? PublicWarningFrame.parse(bytes)) ?? nil }
    }

    @Test func aBoxTellsItsNeighboursOfAWarningAndABoxWithoutFeedsSoundsItUntilTheFramesStop() async throws {
        let dirA = TemporaryDirectory(), dirB = TemporaryDirectory()
        let radioA = try ScriptedRadio(), radioB = try ScriptedRadio()
        var configA = try air.configuration(dirA)
        configA.projections.warnings = CAPWarningSettings(site: WarningNodeTests.site)
        let aRunning = try await start(try air.makeNode(configA, radio: radioA))
        let now = air.clock.nowMicroseconds()
        let flood = WarningNodeTests.document("F-1", sent: now - 60_000_000, expires: now + 7_200_000_000)
        let test = WarningNodeTests.document("T-1", sent: now - 60_000_000, expires: now + 7_200_000_000, status: "Test")
        #expect(await aRunning.perform(.importWarning(WarningImport(document: flood, source: "test")))?.sequence != nil)
        #expect(await aRunning.perform(.importWarning(WarningImport(document: test, source: "test")))?.sequence != nil)
        await air.pass(aRunning, 200_000)
        let aStopped = try await stop(aRunning)
        let frames = warningFrames(radioA)
        try #require(frames.count == 1, "the flood goes on the air, the Test message does not")
        let frame = frames[0]
        #expect(frame.level == .sounds && frame.signer == UInt32(truncatingIfNeeded: aStopped.nodeID))
        #expect(frame.headline == "Flash flood F-1: move to higher ground", "the direction override dropped")
        #expect(frame.expirySeconds == frame.signedAtSeconds + PublicWarningFrame.lifetimeSeconds)
        #expect(frame.digest == WarningBook.airDigest(CAPReference(sender: "test@example.gov", identifier: "F-1", sent: CAPTime(microseconds: 0))))
        let bytes = try #require(air.signedFrames(radioA).first { $0.first == PublicWarningFrame.firstByte })

        // B: no feeds, no site, only the network key.
        let bRunning = try await start(try air.makeNode(try air.configuration(dirB, certified: false), radio: radioB))
        radioB.inject([try air.report(bytes), try air.report(bytes), try air.report(bytes)])
        await air.pass(bRunning, 300_000)
        #expect(await onLoop(bRunning) { $0.patterns.decisions[.buzzer]?.pattern == OutputPolicy.warningTone }, "B sounds the warning")
        let why = await onLoop(bRunning) { $0.patterns.decisions[.amber]?.reasons.map(\.text) ?? [] }
        #expect(why.first?.hasPrefix("public warning: Flash flood F-1: move to higher ground from box \(String(frame.signer, radix: 16)) nearby (its word, unverified), until") == true, "\(why)")
        #expect(await onLoop(bRunning) { $0.liveStatus().air.warnings } == 3)
        #expect(warningFrames(radioB).isEmpty, "B does not relay a warning it only heard")

        // A's frames stop (it went away): B lets the warning go when the last frame ends.
        await advance(air.clock, bRunning, byMicroseconds: UInt64(PublicWarningFrame.lifetimeSeconds) * 1_000_000, step: 60_000_000)
        #expect(await onLoop(bRunning) { $0.patterns.decisions[.buzzer]?.pattern != OutputPolicy.warningTone })
        _ = try await stop(bRunning)
        let heard = try loggedEvents(dirB).compactMap { if case .warningHeard(let h) = $0 { h } else { nil } }
        #expect(heard.count == 1, "one event for three adverts")
        #expect(heard.first?.sounds == true && heard.first?.signer == frame.signer && heard.first?.digest == frame.digest)
        #expect(try loggedEvents(dirB).contains { if case .warningDeadline = $0 { true } else { false } })
    }

    @Test func aStrangersWarningsAreRefusedAndOneBoxsAreHeldToItsAllowance() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let running = try await start(try air.makeNode(try air.configuration(dir, certified: false), radio: radio))
        let now = UInt32(air.clock.nowMicroseconds() / 1_000_000)
        func warning(_ box: (BoxSigningKey, BoxCertificate), digest: UInt64) throws -> [UInt8] {
            try PublicWarningFrame.sign(level: .sounds, digest: digest, expirySeconds: now + 1_800, signedAtSeconds: now, clockVouched: true,
                                        headline: "Evacuate now", key: box.0, certificate: box.1)
        }
        // Another network's box, then a certified box sending far more warnings than its allowance.
        let outsider = try air.stranger(certifiedBy: NetworkSigningKey())
        let prankster = try air.stranger()
        var reports = [try air.report(try warning(outsider, digest: 1))]
        for digest in 0..<30 { reports.append(try air.report(try warning(prankster, digest: UInt64(digest)))) }
        radio.inject(reports)
        await air.pass(running, 300_000)
        let stopped = try await stop(running)
        let heard = try loggedEvents(dir).compactMap { if case .warningHeard(let h) = $0 { h } else { nil } }
        #expect(heard.allSatisfy { $0.signer == SignedAirTests.strangerBox })
        #expect(heard.count == 10, "the sender's burst of ten, then held back")
        #expect(stopped.liveStatus().air.forgedCertificates == 1 && stopped.liveStatus().air.overRate == 20)
        #expect(stopped.projections.warnings.heard.count == WarningBook.heardPerSigner, "and it keeps at most four")
    }
}
