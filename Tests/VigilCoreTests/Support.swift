import VigilCore
import VigilEvents

/// Builds events with consecutive sequences, the way the log numbers them.
struct EventStream {
    private(set) var events: [Event] = []
    var nextSequence: UInt64 = 1

    mutating func add(_ body: EventBody, at seconds: Double) {
        events.append(Event(sequence: nextSequence, timeMicroseconds: micros(seconds), body: body))
        nextSequence += 1
    }

    var inputs: [ProjectionInput] { events.map { .event($0) } }
}

/// Event times in these tests are small (seconds since the epoch): if any projection consulted
/// the wall clock instead of event time, everything would look decades old.
func micros(_ seconds: Double) -> UInt64 { UInt64(seconds * 1_000_000) }

func scanHit(address: UInt64, type: AddressType = .addressRandom, rssi: [Int32],
             firstOffset: Double = 0, lastOffset: Double = 0, txPower: Int32? = nil, name: String = "") -> EventBody {
    var hit = ScanHit()
    hit.address = address
    hit.addressType = type
    hit.count = UInt32(rssi.count)
    hit.rssiMin = rssi.min() ?? 0
    hit.rssiMax = rssi.max() ?? 0
    hit.rssiSum = rssi.reduce(0) { $0 + Int64($1) }
    hit.firstOffsetUs = micros(firstOffset)
    hit.lastOffsetUs = micros(lastOffset)
    if let txPower { hit.txPower = txPower }
    if !name.isEmpty { hit.advertisement.name = name }
    return .scanHit(hit)
}

func alert(origin: UInt64, counter: UInt32, kind: AlertKind = .sos, expiresAt: Double = 0, hops: UInt32 = 0,
           location: (Int32, Int32)? = nil, text: String = "") -> Alert {
    var a = Alert()
    a.id = AlertID(origin: origin, counter: counter)
    a.kind = kind
    a.severity = .critical
    a.expiresAtUs = micros(expiresAt)
    a.hops = hops
    if let location {
        a.location.latitudeE7 = location.0
        a.location.longitudeE7 = location.1
    }
    a.text = text
    return a
}

func cancellation(origin: UInt64, counter: UInt32, by: UInt64 = 1) -> EventBody {
    var c = AlertCancelled()
    c.id = AlertID(origin: origin, counter: counter)
    c.by = by
    return .alertCancelled(c)
}

func checkIn(_ resident: String, source: CheckInSource = .checkInButton, value: Double? = nil) -> EventBody {
    var c = CheckIn()
    c.resident = resident
    c.source = source
    if let value { c.value = value }
    return .checkIn(c)
}

func button(line: UInt32 = 4, edge: Edge = .falling) -> EventBody {
    var b = ButtonInput()
    b.line = line
    b.edge = edge
    return .buttonInput(b)
}

func nodeStarted(id: UInt64) -> EventBody {
    var s = NodeStarted()
    s.nodeID = id
    s.version = "0.1.0"
    return .nodeStarted(s)
}

func radio(_ state: RadioState, adapter: String = "hci0") -> EventBody {
    var r = RadioStateChanged()
    r.state = state
    r.adapter = adapter
    return .radioStateChanged(r)
}

extension Projection {
    func applying(all inputs: [ProjectionInput]) -> Self {
        inputs.reduce(self) { $0.applying($1) }
    }
}
