import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilLog
import VigilNode
import VigilSystem

/// Builds a realistic mixed log: scan hits over many devices (with time moving far enough for
/// pruning), alerts with duplicates and cancellations, check-ins, button presses, restarts.
struct MixedLogGenerator {
    var random = SystemRandomNumberGenerator()
    var time: UInt64 = 1_790_000_000_000_000

    mutating func next(_ i: Int) -> EventBody {
        time += UInt64.random(in: 500...20_000, using: &random)
        switch i % 100 {
        case 0:
            var s = NodeStarted()
            s.nodeID = 0xABCD
            s.version = "test"
            return .nodeStarted(s)
        case 1, 2:
            var a = Alert()
            // Events 1 and 2 of each hundred share an id: the second is a duplicate.
            a.id = AlertID(origin: UInt64((i / 100) % 7), counter: UInt32(i / 100))
            a.kind = .sos
            a.severity = .critical
            a.expiresAtUs = i % 3 == 0 ? 0 : time + 60_000_000
            a.hops = UInt32(i % 4)
            return i % 2 == 0 ? .alertReceived(a) : .alertRaised(a)
        case 3:
            var c = AlertCancelled()
            if i % 300 == 3 { c.id = AlertID(origin: UInt64((i / 100) % 7), counter: UInt32(i / 100)) }
            else { c.id = AlertID(origin: 99, counter: UInt32(i)) } // unknown: counted
            return .alertCancelled(c)
        case 4, 5:
            var c = CheckIn()
            c.resident = "resident-\(i % 37)"
            c.source = .checkInButton
            if i % 2 == 0 { c.value = Double(i % 90) + 50 }
            return .checkIn(c)
        case 6:
            var b = ButtonInput()
            b.line = 0
            b.edge = i % 2 == 0 ? .falling : .rising
            b.kernelTimestampNs = time * 1_000
            return .buttonInput(b)
        default:
            var h = ScanHit()
            // The population turns over every 5,000 events, so earlier devices get pruned.
            h.address = 0xC000_0000_0000 | UInt64(i / 5_000) << 16 | UInt64(i * 7919 % 300)
            h.addressType = .addressRandom
            h.count = UInt32.random(in: 1...8, using: &random)
            h.rssiMin = Int32.random(in: -95 ... -70, using: &random)
            h.rssiMax = h.rssiMin + Int32.random(in: 0...10, using: &random)
            h.rssiSum = Int64(h.rssiMin) * Int64(h.count)
            h.firstOffsetUs = 1_900_000
            if i % 5 == 0 { h.txPower = -8 }
            return .scanHit(h)
        }
    }
}

@Suite struct ReplayEquivalenceTests {
    @Test func replayFromZeroEqualsTheIncrementalStateOnA100kEventLog() async throws {
        let dir = TemporaryDirectory()
        var config = LogConfiguration(directory: dir.path)
        config.sync = .none // a fixture: durability is tested elsewhere
        config.initialMapSize = 64 << 20
        let acked = LockedValue<UInt64>(0)
        let log = try EventLog.open(config) { report in acked.withLock { $0 = report.durableThrough } }

        var settings = ProjectionSettings()
        settings.devicePruneAfterMicroseconds = 30_000_000 // prune often over the log's ~17 minutes
        var incremental = Projections(settings: settings)
        var generator = MixedLogGenerator()
        let total = 100_000
        var checkpointAt: UInt64 = 0
        for i in 0..<total {
            let body = generator.next(i)
            let (kind, payload) = EventCodec.encode(body)
            let seq = try log.append(LogRecord(kind: kind, timeMicroseconds: generator.time, payload: payload), priority: .critical)
            // The node applies events as they become durable; in order, that is the same fold.
            incremental.apply(.event(Event(sequence: seq, timeMicroseconds: generator.time, body: body)))
            if i == 60_000 {
                try log.writeCheckpoint(name: Projections.checkpointName, throughSequence: incremental.appliedThrough,
                                        state: try incremental.encoded())
                checkpointAt = incremental.appliedThrough
            }
        }
        log.close()
        #expect(acked.withLock { $0 } == UInt64(total))
        #expect(incremental.devices.pruned > 0, "the generated log exercises pruning")
        #expect(incremental.alerts.duplicatesDropped > 0)

        let reader = try EventLog.openReadOnly(directory: dir.path)
        let report = try Replay.verify(reader, settings: settings)
        #expect(report.replayedEvents == total)
        #expect(report.checkpointSequence == checkpointAt)
        #expect(report.tailEvents == total - Int(checkpointAt))
        #expect(report.matches, "checkpoint + tail equals a replay from 0, byte for byte")
        #expect(report.rebuiltBytes == (try incremental.encoded()), "and equals the state maintained incrementally")
    }
}
