import Foundation
import Synchronization
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
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
    private let queue = Mutex<[AdvertisingReport]>([])
    private let plans = Mutex<[AdvertisingPlan]>([])
    private var confirm: [[UInt8]] = []

    init() throws { wake = try EventFD() }

    func inject(_ reports: [AdvertisingReport]) {
        queue.withLock { $0 += reports }
        wake.signal()
    }

    var lastPlan: AdvertisingPlan? { plans.withLock { $0.last } }
    /// Reports handed over but not yet read by the node.
    var queued: Int { queue.withLock { $0.count } }

    func start() throws {}
    func stop() {}

    func readReady(into outputs: inout [RadioOutput]) throws {
        wake.drain()
        // Like the HCI radio's read budget: a bounded batch per wake-up, the rest next turn.
        let batch = queue.withLock { q -> [AdvertisingReport] in
            let n = min(q.count, 512)
            let taken = Array(q.prefix(n))
            q.removeFirst(n)
            if !q.isEmpty { wake.signal() }
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
                time: UInt64 = realtimeMicroseconds()) throws -> AdvertisingReport {
        let bytes = try frame.encode(key: AlertFrameKey(shelterKey: key))
        let payload = try AdvertisingPayload.vigil(frame: bytes)
        return AdvertisingReport(address: address, addressType: .addressRandom, rssi: 127, connectable: false,
                                 data: payload.bytes, timeMicroseconds: time)
    }

    func sos(origin: UInt32 = 0x1234, counter: UInt32 = 1, hops: UInt8 = 0) -> AlertFrame {
        AlertFrame(type: .sos, severity: .critical, hops: hops, origin: origin, counter: counter,
                   expirySeconds: UInt32(realtimeMicroseconds() / 1_000_000 + 3_600))
    }

    func events(_ dir: TemporaryDirectory) throws -> [EventBody] {
        let log = try EventLog.openReadOnly(directory: dir.path)
        var bodies: [EventBody] = []
        try log.read { txn in
            try txn.forEach(from: 0) { result in
                if case .event(let e) = Replay.input(result) { bodies.append(e.body) }
                return true
            }
        }
        return bodies
    }

    /// Runs the node on its own thread while `body` drives it; stops it afterwards.
    func withNode(_ node: Node, _ body: () async throws -> Void) async throws {
        let task = Task { try await run(node, forMicroseconds: nil) }
        try await Task.sleep(for: .milliseconds(100))
        try await body()
        node.requestStop(reason: "test")
        try await task.value
    }

    @Test func anAlertHeardManyTimesIsLoggedOnceAndRelayedWithOneMoreHop() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try Node(configuration: configuration(dir), logger: quietLogger, radio: radio)
        let frame = sos()
        try await withNode(node) {
            radio.inject(try (0..<5).map { _ in try report(frame) })
            try await Task.sleep(for: .milliseconds(400))
        }
        let received = try events(dir).compactMap { if case .alertReceived(let a) = $0 { a } else { nil } }
        #expect(received.count == 1)
        #expect(received.first?.id == frame.id && received.first?.hops == 0 && received.first?.heardFrom == Self.otherBox)
        #expect(node.liveStatus().air.accepted == 1 && node.liveStatus().air.duplicates == 4)
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
        let node = try Node(configuration: configuration(dir), logger: quietLogger, radio: radio)
        var stale = sos(counter: 2)
        stale.expirySeconds = UInt32(realtimeMicroseconds() / 1_000_000 - 10)
        var truncated = try report(sos(counter: 3))
        truncated.data[0] -= 3
        truncated.data.removeLast(3)
        try await withNode(node) {
            radio.inject([try report(sos(counter: 1), key: [UInt8](repeating: 1, count: 32)), try report(stale), truncated])
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(try events(dir).allSatisfy { if case .alertReceived = $0 { false } else { true } })
        let air = node.liveStatus().air
        #expect(air.forged == 1 && air.stale == 1 && air.malformed == 1 && air.accepted == 0)
    }

    @Test func aCancelHeardClearsTheAlertAndIsLoggedOnce() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let node = try Node(configuration: configuration(dir), logger: quietLogger, radio: radio)
        let alert = sos(counter: 7)
        var cancel = alert
        cancel.type = .cancel
        cancel.hops = 1
        try await withNode(node) {
            radio.inject([try report(alert)])
            try await Task.sleep(for: .milliseconds(150))
            radio.inject([try report(cancel), try report(cancel)])
            try await Task.sleep(for: .milliseconds(150))
        }
        let cancels = try events(dir).compactMap { if case .alertCancelled(let c) = $0 { c } else { nil } }
        #expect(cancels.count == 1)
        #expect(cancels.first?.hops == 1 && cancels.first?.heardFrom == Self.otherBox)
        #expect(node.projections.alerts.active.isEmpty)
    }

    @Test func theBoxesOwnSOSGoesOnTheAirAndTheRadioSettlesItsBroadcastEntry() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let board = try SimulatedBoard()
        let node = try Node(configuration: configuration(dir), logger: quietLogger, radio: radio, board: board)
        // Its own frame heard back from a relay is not a new alert.
        let echo = AlertFrame(type: .sos, severity: .critical, hops: 1, origin: UInt32(truncatingIfNeeded: node.nodeID), counter: 1,
                              expirySeconds: UInt32(realtimeMicroseconds() / 1_000_000 + 600))
        try await withNode(node) {
            try board.press(holdMicroseconds: 200_000)
            try await Task.sleep(for: .milliseconds(500))
            radio.inject([try report(echo)])
            try await Task.sleep(for: .milliseconds(100))
        }
        let raised = try #require(node.projections.alerts.active.first { $0.raisedHere })
        #expect(raised.idText == echo.id.text)
        let entry = try #require(node.projections.outbox.entries["sos/\(raised.idText)/raised"])
        #expect(entry.delivered)
        #expect(node.liveStatus().air.ownEchoes == 1)
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

    @Test func aShortPressAcknowledgesAHeardSOSOnTheAir() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let board = try SimulatedBoard()
        let node = try Node(configuration: configuration(dir), logger: quietLogger, radio: radio, board: board)
        let frame = sos(counter: 5)
        try await withNode(node) {
            radio.inject([try report(frame)])
            try await Task.sleep(for: .milliseconds(150))
            #expect(node.projections.alerts.awaitingAcknowledgement.map(\.idText) == [frame.id.text])
            try board.press(holdMicroseconds: 70_000) // short: under the 100 ms long press
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(try events(dir).contains { if case .alarmAcknowledged = $0 { true } else { false } })
        let ack = try #require(node.projections.alerts.acknowledgements[frame.id.text])
        #expect(ack.madeHere)
        let onAir = try framesOnTheAir(radio)
        #expect(onAir.contains { $0.type == .acknowledge && $0.id == frame.id && $0.hops == 0 })
        #expect(onAir.contains { $0.type == .sos && $0.id == frame.id && $0.hops == 1 }, "the SOS itself is still relayed")
    }

    @Test func anAcknowledgementOfOurSOSIsLoggedOnceAndNotRelayed() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        let board = try SimulatedBoard()
        let node = try Node(configuration: configuration(dir), logger: quietLogger, radio: radio, board: board)
        try await withNode(node) {
            try board.press(holdMicroseconds: 200_000)
            try await Task.sleep(for: .milliseconds(400))
            let raised = try #require(node.projections.alerts.active.first { $0.raisedHere })
            #expect(OutputPolicy.decide(node.projections, running: true)[.red]?.pattern == .on)
            let ack = AlertFrame(type: .acknowledge, severity: .critical, hops: 1, origin: UInt32(truncatingIfNeeded: node.nodeID),
                                 counter: raised.counter, expirySeconds: UInt32(realtimeMicroseconds() / 1_000_000 + 600))
            radio.inject([try report(ack), try report(ack)])
            try await Task.sleep(for: .milliseconds(200))
        }
        let acks = try events(dir).compactMap { if case .alertAcknowledged(let a) = $0 { a } else { nil } }
        #expect(acks.count == 1)
        #expect(acks.first?.hops == 1 && acks.first?.heardFrom == Self.otherBox)
        let air = node.liveStatus().air
        #expect(air.acknowledgements == 2 && air.accepted == 1 && air.duplicates == 1 && air.ownEchoes == 0)
        #expect(OutputPolicy.decide(node.projections, running: true)[.red]?.pattern == OutputPolicy.acknowledgedPulse)
        // This box is where the acknowledgement was going: it does not pass it on.
        #expect(try framesOnTheAir(radio).allSatisfy { $0.type != .acknowledge })
    }

    @Test func underAFloodOfReportsScanHitsAreShedButEveryAlertIsLogged() async throws {
        let dir = TemporaryDirectory()
        let radio = try ScriptedRadio()
        var c = try configuration(dir)
        c.scanWindowMicroseconds = 0 // one ScanHit per report: the log is the bottleneck
        c.queueLimit = 256
        c.commitWindowMicroseconds = 20_000
        let node = try Node(configuration: c, logger: quietLogger, radio: radio)
        var reports: [AdvertisingReport] = []
        let now = realtimeMicroseconds()
        for i in 0..<60_000 {
            if i % 1_000 == 500 {
                reports.append(try report(sos(origin: 0x9000 + UInt32(i), counter: 1)))
            } else {
                reports.append(AdvertisingReport(address: UInt64(i % 5_000), addressType: .addressRandom, rssi: -60,
                                                 connectable: true, data: [0x02, 0x01, 0x06], timeMicroseconds: now))
            }
        }
        try await withNode(node) {
            radio.inject(reports)
            // However busy the machine: until the node has read every report, then a moment for
            // the last appends to become durable.
            for _ in 0..<600 where radio.queued > 0 { try await Task.sleep(for: .milliseconds(50)) }
            try await Task.sleep(for: .milliseconds(500))
        }
        let received = try events(dir).filter { if case .alertReceived = $0 { true } else { false } }
        #expect(received.count == 60, "no alert is ever shed")
        #expect(node.counters.shed > 0, "scan hits were shed under the flood")
        #expect(node.counters.reports == 60_000)
    }
}
