import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
@testable import VigilLog
import VigilRadio
import VigilSystem
@testable import VigilNode

/// A radio for node tests: the test hands it advertising reports (as a controller would deliver
/// them) and reads back what the node asked it to advertise. Real HCI is tested in the VM.
final class ScriptedRadio: RadioAdapter, @unchecked Sendable {
    let name = "scripted"
    let wake: EventFD
    var descriptor: Int32 { wake.fd }
    var reportsState: Bool { false }
    private let queue = LockedValue<[AdvertisingReport]>([])
    private let plans = LockedValue<[AdvertisingPlan]>([])
    private var confirm: [[UInt8]] = []
    private let drainWaiters = LockedValue<[CheckedContinuation<Void, Never>]>([])

    init() throws { wake = try EventFD() }

    func inject(_ reports: [AdvertisingReport]) {
        queue.withLock { $0 += reports }
        wake.signal()
    }

    var lastPlan: AdvertisingPlan? { plans.withLock { $0.last } }
    /// Reports handed over but not yet read by the node.
    var queued: Int { queue.withLock { $0.count } }

    /// Returns once the node has taken every report handed over (its last batch may still be
    /// in the turn that read it: `onLoop` after this sees it handled).
    func drained() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = queue.withLock { q in
                if q.isEmpty { return true }
                drainWaiters.withLock { $0.append(c) }
                return false
            }
            if now { c.resume() }
        }
    }

    func start() throws {}
    func stop() {}

    func readReady(into outputs: inout [RadioOutput]) throws {
        wake.drain()
        // Like the HCI radio's read budget: a bounded batch per wake-up, the rest next turn.
        let batch = queue.withLock { q -> [AdvertisingReport] in
            let n = min(q.count, 512)
            let taken = Array(q.prefix(n))
            q.removeFirst(n)
            if !q.isEmpty { wake.signal() } else { drainWaiters.withLock { $0.forEach { $0.resume() }; $0.removeAll() } }
            return taken
        }
        outputs += batch.map { .report($0) }
        outputs += confirm.map { .onAir($0) }
        confirm.removeAll()
    }

    func advertise(_ plan: AdvertisingPlan) {
        plans.withLock { $0.append(plan) }
        // "The controller confirmed": reported on the next wake-up, as the HCI radio does.
        confirm = plan.payloads
        wake.signal()
    }
}

@Suite struct AirAlertTests {
    static let key = [UInt8](repeating: 0x5A, count: 32)
    static let otherBox: UInt64 = 0xC0_FF_EE_00_11_22
    /// Each test's one clock: the node's wall and monotonic clock, the board's, and the time of
    /// the reports and frames the test makes.
    let clock = ManualClock()

    func configuration(_ dir: TemporaryDirectory) throws -> NodeConfiguration {
        var c = testConfiguration(dir, advertisers: 0)
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        try (NodeSecrets.hex(Self.key) + "\n").write(toFile: dir.path + "/shelter.key", atomically: true, encoding: .utf8)
        c.airAlerts.airtime.relayDelayMinMicroseconds = 10_000
        c.airAlerts.airtime.relayDelayMaxMicroseconds = 20_000
        c.gestures.longPressNanoseconds = 100_000_000
        return c
    }

    func report(_ frame: AlertFrame, key: [UInt8] = key, from address: UInt64 = otherBox,
                time: UInt64? = nil) throws -> AdvertisingReport {
        let bytes = try frame.encode(key: AlertFrameKey(shelterKey: key))
        let payload = try AdvertisingPayload.vigil(frame: bytes)
        return AdvertisingReport(address: address, addressType: .addressRandom, rssi: 127, connectable: false,
                                 data: payload.bytes, timeMicroseconds: time ?? clock.nowMicroseconds())
    }

    func sos(origin: UInt32 = 0x1234, counter: UInt32 = 1, hops: UInt8 = 0) -> AlertFrame {
        AlertFrame(type: .sos, severity: .critical, hops: hops, origin: origin, counter: counter,
                   expirySeconds: UInt32(clock.nowMicroseconds() / 1_000_000 + 3_600))
    }

    func events(_ dir: TemporaryDirectory) throws -> [EventBody] { try loggedEvents(dir) }

    /// Runs the node on its own thread while `body` drives it; stops it afterwards.
    /// The node is the loop's meanwhile: `body` gets it running, and the stopped node comes back.
    @discardableResult
    func withNode(_ node: sending Node, _ body: (NodeThread) async throws -> Void) async throws -> sending Node {
        let running = try await start(node)
        try await body(running)
        return try await stop(running)
    }

    /// A node on the test's clock.
    func makeNode(_ configuration: NodeConfiguration, radio: ScriptedRadio, board: SimulatedBoard? = nil) throws -> Node {
        try Node(configuration: configuration, clock: clock, monotonic: clock, logger: quietLogger, radio: radio, board: board)
    }

    /// A simulated board on the test's clock.
    func makeBoard() throws -> SimulatedBoard { try SimulatedBoard(monotonic: clock) }

    /// Lets `microseconds` of the test's clock pass, the node settling every 10 ms.
    func pass(_ node: NodeThread, _ microseconds: UInt64) async {
        await advance(clock, node, byMicroseconds: microseconds, step: 10_000)
    }

    @Test func anAlertHeardManyTimesIsLoggedOnceAndRelayedWithOneMoreHop() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir), radio: radio)
        let frame = sos()
        let stopped = try await withNode(node) { node in
            radio.inject(try (0..<5).map { _ in try report(frame) })
            await pass(node, 400_000)
        }
        let received = try events(dir).compactMap { if case .alertReceived(let a) = $0 { a } else { nil } }
        #expect(received.count == 1)
        #expect(received.first?.id == frame.id && received.first?.hops == 0 && received.first?.heardFrom == Self.otherBox)
        #expect(stopped.liveStatus().air.accepted == 1 && stopped.liveStatus().air.duplicates == 4)
        // The relay went on the air after its delay, re-tagged with hops 1.
        let key = try AlertFrameKey(shelterKey: Self.key)
        let relayed = (radio.lastPlan?.payloads ?? []).compactMap { payload -> AlertFrame? in
            guard let bytes = AdvertisingPayload.serviceData(uuid: AlertFrame.defaultServiceUUID, in: payload) else { return nil }
            return try? AlertFrame.decode(bytes, key: key)
        }
        #expect(relayed.map(\.hops) == [1])
        #expect(relayed.first?.id == frame.id)
    }

    @Test func forgedStaleAndMalformedFramesAreCountedAndNeverLogged() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir), radio: radio)
        var stale = sos(counter: 2)
        stale.expirySeconds = UInt32(clock.nowMicroseconds() / 1_000_000 - 10)
        var truncated = try report(sos(counter: 3))
        truncated.data[0] -= 3
        truncated.data.removeLast(3)
        let stopped = try await withNode(node) { node in
            radio.inject([try report(sos(counter: 1), key: [UInt8](repeating: 1, count: 32)), try report(stale), truncated])
            await pass(node, 200_000)
        }
        #expect(try events(dir).allSatisfy { if case .alertReceived = $0 { false } else { true } })
        let air = stopped.liveStatus().air
        #expect(air.forged == 1 && air.stale == 1 && air.malformed == 1 && air.accepted == 0)
    }

    @Test func aCancelHeardClearsTheAlertAndIsLoggedOnce() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir), radio: radio)
        let alert = sos(counter: 7)
        var cancel = alert
        cancel.type = .cancel
        cancel.hops = 1
        let stopped = try await withNode(node) { node in
            radio.inject([try report(alert)])
            await pass(node, 150_000)
            radio.inject([try report(cancel), try report(cancel)])
            await pass(node, 150_000)
        }
        let cancels = try events(dir).compactMap { if case .alertCancelled(let c) = $0 { c } else { nil } }
        #expect(cancels.count == 1)
        #expect(cancels.first?.hops == 1 && cancels.first?.heardFrom == Self.otherBox)
        #expect(stopped.projections.alerts.active.isEmpty)
    }

    @Test func theBoxesOwnSOSGoesOnTheAirAndTheRadioSettlesItsBroadcastEntry() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let board = try makeBoard()
        let node = try makeNode(configuration(dir), radio: radio, board: board)
        // Its own frame heard back from a relay is not a new alert.
        let echo = AlertFrame(type: .sos, severity: .critical, hops: 1, origin: UInt32(truncatingIfNeeded: node.nodeID), counter: 1,
                              expirySeconds: UInt32(clock.nowMicroseconds() / 1_000_000 + 600))
        let stopped = try await withNode(node) { node in
            press(node, holdMicroseconds: 200_000)
            await pass(node, 500_000)
            radio.inject([try report(echo)])
            await pass(node, 100_000)
        }
        let raised = try #require(stopped.projections.alerts.active.first { $0.raisedHere })
        #expect(raised.idText == echo.id.text)
        let entry = try #require(stopped.projections.outbox.entries["sos/\(raised.idText)/raised"])
        #expect(entry.delivered)
        #expect(stopped.liveStatus().air.ownEchoes == 1)
        #expect(try events(dir).allSatisfy { if case .alertReceived = $0 { false } else { true } })
    }

    /// The frames in the node's latest advertising plan.
    func framesOnTheAir(_ radio: ScriptedRadio) throws -> [AlertFrame] {
        let key = try AlertFrameKey(shelterKey: Self.key)
        return (radio.lastPlan?.payloads ?? []).compactMap { payload -> AlertFrame? in
            guard let bytes = AdvertisingPayload.serviceData(uuid: AlertFrame.defaultServiceUUID, in: payload) else { return nil }
            return try? AlertFrame.decode(bytes, key: key)
        }
    }

    /// Lets the test's clock run in 10 ms steps, the node settling after each, until `condition`
    /// holds on the loop (false if it has not after `seconds` of that clock). No real waiting:
    /// the node's timers, button edges and relays come as the clock reaches them.
    func until(_ node: NodeThread, seconds: UInt64 = 20, _ condition: @escaping @Sendable (Node) -> Bool) async -> Bool {
        var passed: UInt64 = 0
        while true {
            await settled(node)
            if await onLoop(node, condition) { return true }
            guard passed < seconds * 1_000_000 else { return false }
            clock.advance(byMicroseconds: 10_000)
            passed += 10_000
        }
    }

    func press(_ node: NodeThread, holdMicroseconds: UInt64, after: UInt64 = 0) {
        node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: holdMicroseconds, afterMicroseconds: after) }
    }

    @Test func aShortPressAnswersAHeardSOSOnTheAir() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir), radio: radio, board: makeBoard())
        let frame = sos(counter: 5)
        let id = frame.id.text
        try await withNode(node) { node in
            radio.inject([try report(frame)])
            #expect(await until(node) { $0.projections.alerts.awaitingAcknowledgement.map(\.idText) == [id] })
            press(node, holdMicroseconds: 70_000) // short: under the 100 ms long press
            #expect(await until(node) { $0.projections.alerts.acknowledgements[id]?.madeHere == true })
            #expect(await until(node) { _ in
                ((try? framesOnTheAir(radio)) ?? []).contains { $0.type == .acknowledge && $0.id == frame.id && $0.hops == 0 }
            })
        }
        let events = try events(dir)
        let acks = events.compactMap { if case .alertAcknowledged(let a) = $0 { a } else { nil } }
        #expect(acks.count == 1 && acks.first?.id == frame.id && acks.first?.heardFrom == 0)
        #expect(!events.contains { if case .alarmAcknowledged = $0 { true } else { false } }, "nothing sounded to silence")
        #expect(try framesOnTheAir(radio).contains { $0.type == .sos && $0.id == frame.id && $0.hops == 1 }, "the SOS is still relayed")
    }

    @Test func aPressWhileOurSOSSoundsSilencesItAndOnlyTheNextAnswers() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir), radio: radio, board: makeBoard())
        let frame = sos(counter: 6)
        let id = frame.id.text
        try await withNode(node) { node in
            press(node, holdMicroseconds: 200_000) // our own SOS: its buzzer sounds
            #expect(await until(node) { !OutputPolicy.soundingAlarms($0.projections).isEmpty })
            radio.inject([try report(frame)])
            #expect(await until(node) { $0.projections.alerts.awaitingAcknowledgement.count == 1 })
            #expect(await until(node) { !$0.projections.alarms.buttonHeld }, "the long press is over")
            press(node, holdMicroseconds: 70_000, after: 100_000) // past the release's 30 ms debounce
            #expect(await until(node) { $0.projections.alarms.acknowledgements == 1 })
            #expect(await onLoop(node) { $0.projections.alerts.acknowledgements.isEmpty }, "silencing answers nothing")
            press(node, holdMicroseconds: 70_000, after: 100_000)
            #expect(await until(node) { $0.projections.alerts.acknowledgements[id]?.madeHere == true })
        }
    }

    @Test func anAcknowledgementOfOurSOSIsLoggedOnceAndNotRelayed() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir), radio: radio, board: makeBoard())
        let stopped = try await withNode(node) { node in
            press(node, holdMicroseconds: 200_000)
            #expect(await until(node) { n in n.projections.alerts.active.contains { $0.raisedHere } })
            let counter = await onLoop(node) { n in n.projections.alerts.active.first { $0.raisedHere }?.counter ?? 0 }
            #expect(await onLoop(node) { OutputPolicy.decide($0.projections, running: true)[.red]?.pattern == .on })
            let ack = AlertFrame(type: .acknowledge, severity: .critical, hops: 1, origin: UInt32(truncatingIfNeeded: node.nodeID),
                                 counter: counter, expirySeconds: UInt32(clock.nowMicroseconds() / 1_000_000 + 600))
            radio.inject([try report(ack), try report(ack)])
            #expect(await until(node) { $0.liveStatus().air.acknowledgements == 2 && $0.projections.alerts.acknowledgements.count == 1 })
            #expect(await onLoop(node) {
                OutputPolicy.decide($0.projections, running: true)[.red]?.pattern == OutputPolicy.acknowledgedPulse
            })
        }
        let acks = try events(dir).compactMap { if case .alertAcknowledged(let a) = $0 { a } else { nil } }
        #expect(acks.count == 1)
        #expect(acks.first?.hops == 1 && acks.first?.heardFrom == Self.otherBox)
        let air = stopped.liveStatus().air
        #expect(air.accepted == 1 && air.duplicates == 1 && air.ownEchoes == 0)
        // This box is where the acknowledgement was going: it does not pass it on.
        #expect(try framesOnTheAir(radio).allSatisfy { $0.type != .acknowledge })
    }

    /// The alert counter's floor is never lowered to the log's highest: a counter written for an
    /// alert that never became durable (a crash after the start's check had passed and cleared
    /// its mark, so the next start looks clean) is in no log, and must not be given out again.
    @Test func aStartThatLooksCleanNeverGivesOutACounterTheFloorCovers() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        try "100\n".write(toFile: dir.path + "/" + AlertCounterFloor.fileName, atomically: true, encoding: .utf8)
        let node = try makeNode(configuration(dir), radio: try ScriptedRadio(), board: makeBoard())
        guard case .event(.alertRaised(let raised), _) = node.control.interpreter.interpret(
            .raiseAlert(AlertRequest(kind: "sos", lifetimeMicroseconds: 3_600_000_000))) else {
            Issue.record("an SOS was refused")
            return
        }
        #expect(raised.id.counter > 100, "counter \(raised.id.counter)")
    }

    /// A missing floor file (a write that failed removes it) with alerts in the log: the next
    /// start counts above the log, never from it again.
    @Test func aStartWithoutTheFloorFileButAlertsInTheLogCountsAboveThem() async throws {
        let dir = TemporaryDirectory()
        let first = try makeNode(configuration(dir), radio: try ScriptedRadio(), board: makeBoard())
        try await withNode(first) { first in
            let raised = await onLoop(first) { node -> AlertID? in
                guard case .event(let body, _) = node.control.interpreter.interpret(.raiseAlert(AlertRequest(kind: "sos", lifetimeMicroseconds: 3_600_000_000))),
                      case .alertRaised(let a) = body, node.append(body) != nil else { return nil }
                return a.id
            }
            #expect(raised?.counter == 1, "a fresh box counts from 1")
            #expect(await until(first) { $0.projections.alerts.highestCounterRaisedHere == 1 })
        }
        FileSystem.remove(dir.path + "/" + AlertCounterFloor.fileName)
        let second = try makeNode(configuration(dir), radio: try ScriptedRadio(), board: makeBoard())
        guard case .event(.alertRaised(let next), _) = second.control.interpreter.interpret(
            .raiseAlert(AlertRequest(kind: "sos", lifetimeMicroseconds: 3_600_000_000))) else {
            Issue.record("an SOS was refused")
            return
        }
        // Counter 2 may have gone on the air from memory without reaching the log (the card
        // failed: that is when the file goes missing): the next is above a whole block.
        #expect(next.id.counter > 1 + AlertCounterFloor.block, "counter \(next.id.counter)")
    }

    @Test func alertsFromTheCLIAreCheckedAgainstWhatTheNodeKnows() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try makeNode(configuration(dir), radio: radio, board: makeBoard())
        let heard = sos(counter: 9)
        var flood = heard
        flood.type = .flood
        flood.counter = 10
        let stopped = try await withNode(node) { node in
            radio.inject([try report(heard), try report(flood)])
            #expect(await until(node) { $0.projections.alerts.active.count == 2 })
        }
        // The loop has stopped: its state can be read and checked here.
        func outcome(_ node: Node, _ command: NodeCommand) -> CommandInterpreter.Outcome {
            node.control.interpreter.interpret(command)
        }
        func refusal(_ command: NodeCommand) -> String? {
            if case .refused(_, let message) = outcome(stopped, command) { message } else { nil }
        }
        func raised(_ kind: String, lifetime: UInt64 = 3_600_000_000, lat: Double? = nil, text: String = "") -> NodeCommand {
            .raiseAlert(AlertRequest(kind: kind, lifetimeMicroseconds: lifetime, latitude: lat, longitude: lat.map { _ in 0 }, text: text))
        }
        #expect(refusal(raised("unspecified"))?.contains("kind") == true)
        #expect(refusal(raised("flood", lifetime: 0))?.contains("expiry") == true)
        #expect(refusal(raised("flood", lifetime: 25 * 3_600_000_000))?.contains("max_lifetime") == true)
        #expect(refusal(raised("flood", lat: 90.0000001))?.contains("latitude") == true)
        #expect(refusal(raised("flood", text: String(repeating: "x", count: 501)))?.contains("500") == true)
        guard case .event(.alertRaised(let ok), let okID) = outcome(stopped, raised("road-hazard")) else {
            Issue.record("a valid hazard was refused")
            return
        }
        #expect(ok.id == AlertID(origin: stopped.nodeID, counter: 1) && ok.hops == 0 && ok.severity == .warning)
        #expect(okID == ok.id.text)

        #expect(refusal(.cancelAlert(AlertCancelRequest(id: heard.id.text)))?.contains("raised at this box") == true,
                "a received alert is not ours to cancel")
        #expect(refusal(.acknowledgeAlert(AlertReference(id: flood.id.text)))?.contains("call for help") == true, "a warning is not answered")
        guard case .event(.alertAcknowledged(let answer), _) = outcome(stopped, .acknowledgeAlert(AlertReference(id: heard.id.text))) else {
            Issue.record("answering a heard SOS was refused")
            return
        }
        #expect(answer.heardFrom == 0 && answer.hops == 0 && answer.expiresAtUs == UInt64(heard.expirySeconds) * 1_000_000)

        // Without a shelter key nothing would go on the air: all refused.
        let keyless = TemporaryDirectory()
        let plain = try makeNode(testConfiguration(keyless, advertisers: 0), radio: try ScriptedRadio())
        if case .refused(let why, let message) = outcome(plain, raised("flood")) {
            #expect(message.contains("shelter key") && why == .unavailable)
        } else {
            Issue.record("a node without a shelter key accepted an alert")
        }
    }

    @Test func suppressionNotesOfAlertsTheBookDoesNotHoldAreForgottenAfterTenMinutes() throws {
        var air = AirLink(key: try AlertFrameKey(shelterKey: Self.key), settings: AirAlertSettings(), presence: nil, nodeID: 0xAAAA)
        let t: UInt64 = 1_000_000_000_000
        air.heardRelay(sos(counter: 1, hops: 1), now: t)
        air.heardRelay(sos(counter: 2, hops: 2), now: t + 300_000_000)
        air.prune(AlertBook(), now: t + 599_000_000)
        #expect(air.heard.count == 2)
        air.prune(AlertBook(), now: t + 601_000_000)
        #expect(Array(air.heard.keys) == [sos(counter: 2).id.text], "the older note is gone, the newer one stays")
        air.prune(AlertBook(), now: t + 901_000_000)
        #expect(air.heard.isEmpty)
    }

    @Test func underAFloodOfReportsScanHitsAreShedButEveryAlertIsLogged() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        var c = try configuration(dir)
        c.scanWindowMicroseconds = 0 // one ScanHit per report: the log is the bottleneck
        c.queueLimit = 256
        c.commitWindowMicroseconds = 20_000
        let node = try makeNode(c, radio: radio)
        var reports: [AdvertisingReport] = []
        let now = clock.nowMicroseconds()
        for i in 0..<60_000 {
            if i % 1_000 == 500 {
                reports.append(try report(sos(origin: 0x9000 + UInt32(i), counter: 1)))
            } else {
                reports.append(AdvertisingReport(address: UInt64(i % 5_000), addressType: .addressRandom, rssi: -60,
                                                 connectable: true, data: [0x02, 0x01, 0x06], timeMicroseconds: now))
            }
        }
        let stopped = try await withNode(node) { node in
            // A card that cannot keep up, however fast this machine's is: the writer takes
            // nothing until every report has been read, so the queue's limit is what decides.
            await onLoop(node) { $0.log.holdWriter(true) }
            radio.inject(reports)
            await radio.drained()
            let whileHeld = await onLoop(node) { $0.counters }
            #expect(whileHeld.reports == 60_000)
            #expect(whileHeld.shed >= 59_940 - 256, "scan hits past the queue's limit are shed")
            await onLoop(node) { $0.log.holdWriter(false) }
            await settled(node)
        }
        let received = try events(dir).filter { if case .alertReceived = $0 { true } else { false } }
        #expect(received.count == 60, "no alert is ever shed")
        #expect(stopped.counters.reports == 60_000)
    }
}
