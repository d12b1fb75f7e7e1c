import Testing
import VigilCore
import VigilEvents

@Suite("NodeHealth")
struct NodeHealthTests {
    @Test func countsEventsByKind() {
        var stream = EventStream()
        stream.add(nodeStarted(id: 0xB1A5), at: 10)
        stream.add(radio(.on), at: 11)
        for i in 0..<5 { stream.add(scanHit(address: UInt64(i), rssi: [-60]), at: 12 + Double(i)) }
        stream.add(button(), at: 20)
        stream.add(button(edge: .rising), at: 20.1)
        stream.add(checkIn("R-1"), at: 21)
        stream.add(.alertRaised(alert(origin: 1, counter: 1)), at: 22)
        stream.add(.nodeStopped(NodeStopped()), at: 30)

        let health = NodeHealth().applying(all: stream.inputs)
        #expect(health.eventsByKind[Int(EventKind.scanHit.rawValue)] == 5)
        #expect(health.eventsByKind[Int(EventKind.buttonInput.rawValue)] == 2)
        #expect(health.eventsByKind[Int(EventKind.checkIn.rawValue)] == 1)
        #expect(health.eventsByKind[Int(EventKind.alertRaised.rawValue)] == 1)
        #expect(health.eventsByKind[Int(EventKind.alertReceived.rawValue)] == 0)
        #expect(health.eventsByKind[Int(EventKind.nodeStarted.rawValue)] == 1)
        #expect(health.eventsByKind[Int(EventKind.radioStateChanged.rawValue)] == 1)
        #expect(health.totalEvents == 12)
        #expect(health.starts == 1)
        #expect(health.stops == 1)
        #expect(health.nodeID == 0xB1A5)
        #expect(health.lastStartMicroseconds == micros(10))
        #expect(health.radioState == RadioState.on.rawValue)
        #expect(health.radioAdapter == "hci0")
        #expect(health.buttonEdges == 2)
        #expect(health.firstEventMicroseconds == micros(10))
        #expect(health.lastEventMicroseconds == micros(30))
        #expect(health.undecodable == 0)
    }

    @Test func countsUndecodableEventsAndUnknownKindsSeparately() {
        var health = NodeHealth()
        health.apply(.undecodable(EventDecodingError(sequence: 3, reason: .unknownKind(200))))
        health.apply(.undecodable(EventDecodingError(sequence: 5, reason: .malformed(kind: 1, detail: "truncated"))))
        health.apply(.undecodable(EventDecodingError(sequence: 9, reason: .envelope("unreadable kind"))))
        health.apply(.undecodable(EventDecodingError(sequence: 12, reason: .unknownKind(201))))
        #expect(health.undecodable == 4)
        #expect(health.unknownKinds == 2)
        #expect(health.lastUndecodableSequence == 12)
        // Undecodable events are not counted as events of any kind.
        #expect(health.totalEvents == 0)
    }

    @Test func laterStartsAndRadioChangesWin() {
        var stream = EventStream()
        stream.add(nodeStarted(id: 1), at: 10)
        stream.add(radio(.on, adapter: "hci0"), at: 11)
        stream.add(nodeStarted(id: 2), at: 50)
        stream.add(radio(.off, adapter: "hci1"), at: 51)
        let health = NodeHealth().applying(all: stream.inputs)
        #expect(health.starts == 2)
        #expect(health.nodeID == 2)
        #expect(health.lastStartMicroseconds == micros(50))
        #expect(health.radioState == RadioState.off.rawValue)
        #expect(health.radioAdapter == "hci1")
    }
}
