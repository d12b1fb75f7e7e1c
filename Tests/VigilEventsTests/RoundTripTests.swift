import Testing
import VigilEvents

@Suite("Encoding and decoding event bodies")
struct RoundTripTests {
    @Test(arguments: EventKind.known.map(\.name))
    func everyKindRoundTripsWithAllFieldsSet(kindName: String) throws {
        let body = try #require(Fixtures.fullyPopulated.first { $0.kind.name == kindName })
        let (kind, payload) = EventCodec.encode(body)
        #expect(kind == UInt32(body.kind.rawValue))
        #expect(!payload.isEmpty)
        let decoded = try EventCodec.decode(kind: kind, payload: payload, sequence: 1)
        #expect(decoded == body)
        #expect(decoded.kind == body.kind)
    }

    @Test func fixturesCoverEveryKnownKind() {
        #expect(Fixtures.fullyPopulated.map(\.kind) == EventKind.known)
    }

    @Test func alertRaisedAndReceivedShareAPayloadButKeepTheirKind() throws {
        guard case .alertRaised(let alert) = Fixtures.fullyPopulated[2] else {
            Issue.record("fixture order changed")
            return
        }
        let raised = EventCodec.encode(.alertRaised(alert))
        let received = EventCodec.encode(.alertReceived(alert))
        #expect(raised.payload == received.payload)
        #expect(raised.kind != received.kind)
        #expect(try EventCodec.decode(kind: received.kind, payload: received.payload, sequence: 1) == .alertReceived(alert))
        #expect(try EventCodec.decode(kind: raised.kind, payload: raised.payload, sequence: 1) == .alertRaised(alert))
    }

    @Test func emptyMessagesRoundTripFromAnEmptyPayload() throws {
        let (kind, payload) = EventCodec.encode(.nodeStopped(NodeStopped()))
        #expect(payload.isEmpty)
        #expect(try EventCodec.decode(kind: kind, payload: payload, sequence: 9) == .nodeStopped(NodeStopped()))
    }

    @Test func presenceOfZeroValuedOptionalFieldsSurvives() throws {
        var hit = Fixtures.typicalScanHit
        hit.txPower = 0
        var checkIn = CheckIn()
        checkIn.resident = "R-1"
        checkIn.value = 0
        for body in [EventBody.scanHit(hit), .checkIn(checkIn)] {
            let (kind, payload) = EventCodec.encode(body)
            let decoded = try EventCodec.decode(kind: kind, payload: payload, sequence: 1)
            #expect(decoded == body)
            switch decoded {
            case .scanHit(let h): #expect(h.hasTxPower)
            case .checkIn(let c): #expect(c.hasValue)
            default: Issue.record("decoded to \(decoded.kind.name)")
            }
        }
    }

    @Test func decodingFromABufferViewEqualsDecodingFromAnArray() throws {
        for body in Fixtures.fullyPopulated {
            let (kind, payload) = EventCodec.encode(body)
            let fromView = try payload.withUnsafeBytes { raw in
                try EventCodec.decode(kind: kind, payload: raw, sequence: 5)
            }
            #expect(fromView == body)
        }
    }
}
