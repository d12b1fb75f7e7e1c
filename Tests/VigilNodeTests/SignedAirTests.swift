import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilRadio
import VigilSystem
@testable import VigilNode

/// Signed frames in the node (docs/signed-frames.md): a certified box signs its own frames, a box
/// that knows only the network key believes them, relays keep the origin's signature, revocations
/// heard on the air are kept and relayed, and shared-key frames are refused where signatures are
/// required. Real extended advertising between two controllers is tested in the VM.
@Suite struct SignedAirTests {
    let clock = ManualClock()
    let network = NetworkSigningKey()
    static let strangerBox: UInt32 = 0x5157_0001

    /// A node's configuration: the network key, a synchronised clock, quick relays; `certified`
    /// makes and certifies the box's key in its data directory.
    func configuration(_ dir: TemporaryDirectory, certified: Bool = true, shelterKey: Bool = false,
                       requireSigned: Bool = false) throws -> NodeConfiguration {
        var c = testConfiguration(dir, advertisers: 0)
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        c.airAlerts.networkKey = network.publicKey.rawRepresentation
        c.airAlerts.requireSigned = requireSigned
        c.airAlerts.airtime.relayDelayMinMicroseconds = 10_000
        c.airAlerts.airtime.relayDelayMaxMicroseconds = 20_000
        c.airAlerts.clockSynchronisedPath = dir.path + "/clock-synchronised"
        FileManager.default.createFile(atPath: c.airAlerts.clockSynchronisedPath, contents: Data())
        c.gestures.longPressNanoseconds = 100_000_000
        if shelterKey {
            try (NodeSecrets.hex([UInt8](repeating: 0x5A, count: 32)) + "\n").write(toFile: dir.path + "/shelter.key", atomically: true, encoding: .utf8)
        }
        if certified {
            let node = try NodeIdentity.load(dataDirectory: dir.path)
            let key = try BoxKeyFiles.loadOrCreateKey(directory: dir.path)
            let now = UInt32(clock.nowMicroseconds() / 1_000_000)
            try BoxKeyFiles.writeCertificate(try network.certify(node: UInt32(truncatingIfNeeded: node), boxKey: key.publicKey,
                                                                 issued: now, expires: now + 86_400 * 365), directory: dir.path)
        }
        return c
    }

    func makeNode(_ configuration: NodeConfiguration, radio: ScriptedRadio) throws -> Node {
        try Node(configuration: configuration, clock: clock, monotonic: clock, logger: quietLogger, radio: radio,
                 board: try SimulatedBoard(monotonic: clock))
    }

    func pass(_ node: NodeThread, _ microseconds: UInt64) async {
        await advance(clock, node, byMicroseconds: microseconds, step: 10_000)
    }

    func report(_ frame: [UInt8], from address: UInt64 = 0xC0FFEE) throws -> AdvertisingReport {
        AdvertisingReport(address: address, addressType: .addressRandom, rssi: -60, connectable: false,
                          data: try AdvertisingPayload.signedVigil(frame: frame).bytes, timeMicroseconds: clock.nowMicroseconds())
    }

    /// A box that is not a node of the test: its key and the network's certificate for it.
    func stranger(node: UInt32 = strangerBox, certifiedBy signer: NetworkSigningKey? = nil) throws -> (BoxSigningKey, BoxCertificate) {
        let key = BoxSigningKey()
        let now = UInt32(clock.nowMicroseconds() / 1_000_000)
        return (key, try (signer ?? network).certify(node: node, boxKey: key.publicKey, issued: now, expires: now + 86_400))
    }

    func sos(_ box: (BoxSigningKey, BoxCertificate), origin: UInt32? = nil, counter: UInt32 = 1, signedAgo: UInt64 = 0) throws -> [UInt8] {
        let now = clock.nowMicroseconds() / 1_000_000
        return try SignedAlertFrame.sign(type: .sos, severity: 3, origin: origin ?? box.1.node, counter: counter,
                                         expirySeconds: UInt32(now + 3_600), signedAtSeconds: UInt32(now - signedAgo),
                                         clockVouched: true, key: box.0, certificate: box.1)
    }

    /// The signed frames in a plan's payloads.
    func signedFrames(_ radio: ScriptedRadio) -> [[UInt8]] {
        (radio.lastPlan?.payloads ?? []).compactMap { payload in
            guard payload.count > AdvertisingPayload.legacyMaximumLength,
                  let bytes = AdvertisingPayload.serviceData(uuid: AlertFrame.defaultServiceUUID, in: payload) else { return nil }
            return bytes
        }
    }

    @Test func aCertifiedBoxSignsItsSOSAndABoxKnowingOnlyTheNetworkKeyBelievesAndRelaysIt() async throws {
        let dirA = TemporaryDirectory(), dirB = TemporaryDirectory()
        let radioA = try ScriptedRadio(), radioB = try ScriptedRadio()
        let a = try makeNode(configuration(dirA), radio: radioA)
        let b = try makeNode(configuration(dirB, certified: false), radio: radioB)
        var sent: [UInt8] = []
        let aRunning = try await start(a)
        aRunning.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 200_000, afterMicroseconds: 0) }
        await pass(aRunning, 500_000)
        let aStopped = try await stop(aRunning)
        sent = try #require(signedFrames(radioA).first, "A's SOS is on the air signed")
        let frame = try SignedAlertFrame.parse(sent)
        #expect(frame.signer == UInt32(truncatingIfNeeded: aStopped.nodeID) && frame.origin == frame.signer && frame.type == .sos)
        #expect(frame.signerClockVouched, "A's clock is synchronised")
        #expect(aStopped.liveStatus().signing?.signing == true)

        let bRunning = try await start(b)
        radioB.inject([try report(sent), try report(sent)])
        await pass(bRunning, 300_000)
        let bStopped = try await stop(bRunning)
        let received = try loggedEvents(dirB).compactMap { if case .alertReceived(let r) = $0 { r } else { nil } }
        #expect(received.count == 1 && received.first?.id.origin == aStopped.nodeID)
        #expect(bStopped.liveStatus().air.accepted == 1 && bStopped.liveStatus().air.duplicates == 1)
        #expect(bStopped.liveStatus().signing?.signing == false, "B is not certified: it checks, it does not sign")
        // B relays A's bytes: one more hop, A's signature kept (B holds no key it could sign with).
        let relayed = try #require(signedFrames(radioB).first)
        #expect(relayed == (try SignedAlertFrame.relayed(sent)))
    }

    @Test func framesInAnotherBoxsNameWithAForgedCertificateOrTooOldAreCountedAndNeverLogged() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir, certified: false), radio: radio)
        let box = try stranger()
        let forger = try stranger(node: 0x5157_0002, certifiedBy: NetworkSigningKey())
        var stripped = try sos(box, counter: 9)
        stripped.removeLast(64)
        let running = try await start(node)
        radio.inject([
            try report(try sos(box, origin: 0x0B0B_0B0B)),            // raising an alert in another box's name
            try report(try sos(forger)),                             // a certificate the network never signed
            try report(try sos(box, counter: 2, signedAgo: 86_400)), // a day-old frame (its expiry still ahead)
            try report(stripped),                                    // the signature cut off
        ])
        await pass(running, 200_000)
        let stopped = try await stop(running)
        #expect(try loggedEvents(dir).allSatisfy { if case .alertReceived = $0 { false } else { true } })
        let air = stopped.liveStatus().air
        #expect(air.impersonations == 1 && air.forgedCertificates == 1 && air.tooOld == 1 && air.malformed == 1 && air.accepted == 0)
    }

    @Test func aBoxBringingNewAlertsFasterThanItsAllowanceIsHeldBackUntilItRefillsAndOthersAreNotStarved() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        var c = try configuration(dir, certified: false)
        c.airAlerts.newPerSenderBurst = 3
        c.airAlerts.newPerSenderIntervalMicroseconds = 1_000_000
        let node = try makeNode(c, radio: radio)
        let stolen = try stranger(), honest = try stranger(node: 0x5157_0003)
        let running = try await start(node)
        // A stolen (still certified) box floods five new SOS ids at once; an honest box raises one.
        radio.inject(try (1...5).map { try report(try sos(stolen, counter: $0)) } + [try report(try sos(honest))])
        await pass(running, 100_000)
        func logged() throws -> [UInt32] {
            try loggedEvents(dir).compactMap { if case .alertReceived(let r) = $0 { UInt32(truncatingIfNeeded: r.id.counter) + (r.id.origin == UInt64(honest.1.node) ? 100 : 0) } else { nil } }
        }
        #expect(try logged() == [1, 2, 3, 101], "the burst, and the honest box's own allowance")
        let air = await onLoop(running) { $0.liveStatus().air }
        #expect(air.overRate == 2 && air.accepted == 4)
        // Heard again (adverts repeat) after one interval: one more is taken, then the last.
        radio.inject(try [4, 5].map { try report(try sos(stolen, counter: $0)) })
        await pass(running, 100_000)
        #expect(try logged() == [1, 2, 3, 101], "an interval has not passed")
        await pass(running, 1_000_000)
        radio.inject(try [4, 5].map { try report(try sos(stolen, counter: $0)) })
        await pass(running, 100_000)
        #expect(try logged() == [1, 2, 3, 101, 4])
        await pass(running, 1_000_000)
        radio.inject([try report(try sos(stolen, counter: 5)), try report(try sos(stolen, counter: 1))])
        await pass(running, 100_000)
        let stopped = try await stop(running)
        #expect(try logged() == [1, 2, 3, 101, 4, 5], "held back, not lost")
        #expect(stopped.liveStatus().air.overRate == 5 && stopped.liveStatus().air.duplicates == 1, "a known alert costs no allowance")
    }

    @Test func newAlertAdmissionForgetsFullAllowancesAndPutsNewcomersBeyondItsLimitInOneSharedAllowance() {
        let second: UInt64 = 1_000_000_000
        var admission = NewAlertAdmission(burst: 2, intervalMicroseconds: 1_000_000, senderLimit: 2)
        // (signer, time, whether a new alert is admitted), in order.
        let script: [(UInt32, UInt64, Bool)] = [
            (1, 0, true), (2, 0, true),
            // Two senders tracked, both partly spent: newcomers share one allowance of the burst.
            (3, 0, true), (4, 0, true), (5, 0, false), (3, 0, false),
            // The known senders keep their own allowance meanwhile.
            (1, 0, true), (1, 0, false),
            // Once refilled, full allowances are forgotten and a newcomer gets one of its own.
            (6, 3 * second, true), (6, 3 * second, true), (6, 3 * second, false),
        ]
        var admitted: [Bool] = []
        var tracked: [Int] = []
        for (sender, time, _) in script {
            admitted.append(admission.admit(.signer(sender), nowNanoseconds: time))
            tracked.append(admission.senders)
        }
        #expect(admitted == script.map(\.2))
        #expect(tracked == [1, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1], "never more than the limit; refilled ones forgotten")
    }

    @Test func sharedKeyFramesAreHeldToSixteenSendersWorthTogetherAndNeverSpendACertifiedBoxsAllowance() {
        var admission = NewAlertAdmission(burst: 2, intervalMicroseconds: 1_600_000)
        // A shelter-key holder invents origins: two each, 32 in all, then none.
        var forged: [Bool] = []
        for origin in UInt32(100)..<120 { for _ in 0..<2 { forged.append(admission.admit(.sharedKeyOrigin(origin), nowNanoseconds: 0)) } }
        #expect(forged.filter { $0 }.count == 32 && forged.suffix(8) == [Bool](repeating: false, count: 8))
        // A refused origin got back what it took: once the shared allowance refills a little, it is taken.
        let refilled = admission.admit(.sharedKeyOrigin(119), nowNanoseconds: 100_000_000)
        #expect(refilled)
        // A certified box with the same number as a forged origin keeps its own allowance.
        let signed = [admission.admit(.signer(100), nowNanoseconds: 0), admission.admit(.signer(100), nowNanoseconds: 0)]
        #expect(signed == [true, true])
    }

    @Test func aRevocationHeardOnTheAirIsKeptRelayedAndTheRevokedBoxIsRefused() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir), radio: radio)
        let box = try stranger()
        let revocation = try network.revoke(node: box.1.node, boxKey: box.1.boxKey, at: UInt32(clock.nowMicroseconds() / 1_000_000))
        let running = try await start(node)
        radio.inject([try report(try sos(box, counter: 1))])
        await pass(running, 100_000)
        radio.inject([try report(RevocationFrame.encode(revocation)), try report(try sos(box, counter: 2))])
        await pass(running, 100_000)
        let stopped = try await stop(running)
        let received = try loggedEvents(dir).compactMap { if case .alertReceived(let r) = $0 { r.id.counter } else { nil } }
        #expect(received == [1], "the alert before the revocation stands; the one after is refused")
        #expect(stopped.liveStatus().air.revoked == 1 && stopped.liveStatus().air.revocationsHeard == 1)
        #expect(BoxKeyFiles.revocations(directory: dir.path).revocations == [revocation], "kept on the card")
        #expect(signedFrames(radio).contains(RevocationFrame.encode(revocation)), "and advertised in turn with what else it knows")
        // After a restart the box still refuses it.
        let again = try makeNode(configuration(dir), radio: try ScriptedRadio())
        #expect(again.liveStatus().signing?.revoked == 1)
    }

    @Test func aLegacyBoxAndASignedBoxShareAShelterUnlessSignaturesAreRequired() async throws {
        let legacyFrame = AlertFrame(type: .sos, severity: .critical, origin: 0x1234, counter: 1,
                                     expirySeconds: UInt32(clock.nowMicroseconds() / 1_000_000 + 3_600))
        let legacyReport = AdvertisingReport(
            address: 0xBEEF, addressType: .addressRandom, rssi: -60, connectable: false,
            data: try AdvertisingPayload.vigil(frame: try legacyFrame.encode(key: AlertFrameKey(shelterKey: [UInt8](repeating: 0x5A, count: 32)))).bytes,
            timeMicroseconds: clock.nowMicroseconds())
        // A signed box that also holds the shelter key: hears the legacy box, and sends both kinds.
        let mixedDir = TemporaryDirectory()
        let mixedRadio = try ScriptedRadio()
        let mixed = try makeNode(configuration(mixedDir, shelterKey: true), radio: mixedRadio)
        let mixedRunning = try await start(mixed)
        mixedRadio.inject([legacyReport])
        await pass(mixedRunning, 100_000)
        mixedRunning.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 200_000, afterMicroseconds: 0) }
        await pass(mixedRunning, 500_000)
        let mixedStopped = try await stop(mixedRunning)
        #expect(mixedStopped.liveStatus().air.accepted == 1)
        let payloads = mixedRadio.lastPlan?.payloads ?? []
        let ownSigned = signedFrames(mixedRadio).compactMap { try? SignedAlertFrame.parse($0) }.filter { $0.origin == UInt32(truncatingIfNeeded: mixedStopped.nodeID) }
        #expect(ownSigned.count == 1, "its SOS signed, for boxes that check signatures")
        #expect(payloads.contains { $0.count <= AdvertisingPayload.legacyMaximumLength && $0.count > 21 }, "and tagged with the shelter key, for legacy boxes")

        // With radio.require_signed the same legacy frame is refused and counted.
        let strictDir = TemporaryDirectory()
        let strictRadio = try ScriptedRadio()
        let strict = try makeNode(configuration(strictDir, shelterKey: true, requireSigned: true), radio: strictRadio)
        let strictRunning = try await start(strict)
        strictRadio.inject([legacyReport])
        await pass(strictRunning, 100_000)
        let strictStopped = try await stop(strictRunning)
        #expect(strictStopped.liveStatus().air.unsigned == 1 && strictStopped.liveStatus().air.accepted == 0)
        #expect(try loggedEvents(strictDir).allSatisfy { if case .alertReceived = $0 { false } else { true } })
    }

    @Test func aBoxWithoutASynchronisedClockSaysSoAndSignsItsFramesAsNotVouched() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        var c = try configuration(dir)
        c.airAlerts.clockSynchronisedPath = dir.path + "/no-such-file"
        let node = try makeNode(c, radio: radio)
        let running = try await start(node)
        running.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 200_000, afterMicroseconds: 0) }
        await pass(running, 500_000)
        let stopped = try await stop(running)
        #expect(stopped.liveStatus().signing?.clock == "none")
        let frame = try SignedAlertFrame.parse(try #require(signedFrames(radio).first))
        #expect(!frame.signerClockVouched)
    }
}
