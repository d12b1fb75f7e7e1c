import VigilEvents
import VigilSystem

/// A node's log as replay sees it: ~90% ScanHits over ~2,000 devices, plus check-ins, button
/// edges, alerts heard over the air (with relayed duplicates), alerts raised here, cancellations,
/// radio state changes, and a node start (with a stop/start pair every 100k events).
struct MixedWorkload {
    private var rng = SplitMix64(seed: 7)
    private var alertCounter: [UInt32] = Array(repeating: 0, count: 16)
    private var recentAlerts: [AlertID] = []
    private var index = 0

    /// The next event as (kind, time, payload).
    mutating func next() -> (kind: UInt32, time: UInt64, payload: [UInt8]) {
        defer { index += 1 }
        let time = Workload.startMicroseconds + UInt64(index) * Workload.microsecondsPerEvent
        let encoded = EventCodec.encode(body(at: index))
        return (encoded.kind, time, encoded.payload)
    }

    private mutating func body(at i: Int) -> EventBody {
        if i % 100_000 == 0 { return .nodeStarted(started()) }
        if i % 100_000 == 99_999 {
            var stopped = NodeStopped()
            stopped.reason = "maintenance restart"
            return .nodeStopped(stopped)
        }
        let roll = rng.next() % 1_000
        switch roll {
        case 0..<900:
            return .scanHit(Workload.scanHit(device: Int(rng.next() % UInt64(Workload.deviceCount)), using: &rng))
        case 900..<940: return .checkIn(checkIn())
        case 940..<970:
            var button = ButtonInput()
            button.line = 17
            button.edge = rng.next() % 2 == 0 ? .rising : .falling
            button.kernelTimestampNs = UInt64(i) * 500_000
            return .buttonInput(button)
        case 970..<985: return .alertReceived(alert(raisedHere: false))
        case 985..<990: return .alertRaised(alert(raisedHere: true))
        case 990..<994:
            var cancel = AlertCancelled()
            cancel.id = recentAlerts.isEmpty ? AlertID(origin: 1, counter: 0)
                                             : recentAlerts[Int(rng.next() % UInt64(recentAlerts.count))]
            cancel.by = 0xA11CE
            cancel.reason = "resolved on site"
            return .alertCancelled(cancel)
        case 994..<997:
            var change = RadioStateChanged()
            change.state = rng.next() % 4 == 0 ? .off : .on
            change.adapter = "hci0"
            change.reason = "rfkill"
            return .radioStateChanged(change)
        default:
            return .checkIn(checkIn())
        }
    }

    private func started() -> NodeStarted {
        var started = NodeStarted()
        started.nodeID = 0xA11CE
        started.version = "0.1.0"
        started.board = "raspberry-pi-4"
        started.radio = "hci0"
        return started
    }

    private mutating func checkIn() -> CheckIn {
        var checkIn = CheckIn()
        let resident = Int(rng.next() % 300)
        checkIn.resident = "resident-\(resident)"
        switch rng.next() % 3 {
        case 0: checkIn.source = .checkInButton
        case 1: checkIn.source = .checkInBleTag
        default:
            checkIn.source = .checkInHeartRate
            checkIn.value = Double(55 + rng.next() % 60)
        }
        return checkIn
    }

    private mutating func alert(raisedHere: Bool) -> Alert {
        // A third of received alerts are relayed duplicates of one already heard.
        if !raisedHere, !recentAlerts.isEmpty, rng.next() % 3 == 0 {
            var duplicate = makeAlert(id: recentAlerts[Int(rng.next() % UInt64(recentAlerts.count))])
            duplicate.hops = 2
            return duplicate
        }
        let origin = raisedHere ? 0 : 1 + Int(rng.next() % 15)
        alertCounter[origin] += 1
        let id = AlertID(origin: raisedHere ? 0xA11CE : 0xB0B0 + UInt64(origin), counter: alertCounter[origin])
        recentAlerts.append(id)
        if recentAlerts.count > 64 { recentAlerts.removeFirst() }
        return makeAlert(id: id)
    }

    private mutating func makeAlert(id: AlertID) -> Alert {
        var alert = Alert()
        alert.id = id
        alert.kind = [.sos, .medical, .fire, .flood, .evacuate][Int(rng.next() % 5)]
        alert.severity = .warning
        var location = Location()
        location.latitudeE7 = 481_234_567 + Int32(rng.next() % 10_000)
        location.longitudeE7 = 116_543_210 + Int32(rng.next() % 10_000)
        alert.location = location
        alert.expiresAtUs = Workload.startMicroseconds + UInt64(index) * Workload.microsecondsPerEvent + 3_600_000_000
        alert.hops = 1
        alert.heardFrom = 0xB0B0
        alert.text = "Water rising at north entrance, move to level 2"
        return alert
    }
}
