import Testing
import VigilCore
import VigilEvents

/// An acknowledgement ("we know; help is on the way") travels back to the box that raised a call
/// for help: made by a short press (or `vigil alert ack`) at a box that received it, relayed like
/// a cancel, and shown at the origin on the SOS light.
@Suite("Acknowledgements over the air")
struct AcknowledgementTests {
    let me: UInt64 = 0xAAAA
    var settings: AlertAirtime.Settings {
        var s = AlertAirtime.Settings()
        s.relayDelayMinMicroseconds = 1_000_000
        s.relayDelayMaxMicroseconds = 1_000_000
        s.acknowledgementLingerMicroseconds = 60_000_000
        return s
    }

    private func book(_ build: (inout EventStream) -> Void) -> AlertBook {
        var stream = EventStream()
        build(&stream)
        return AlertBook().applying(all: stream.inputs)
    }

    private func heardAcknowledgement(origin: UInt64, counter: UInt32, hops: UInt32 = 0, expiresAt: Double = 1_000) -> EventBody {
        var a = AlertAcknowledged()
        a.id = AlertID(origin: origin, counter: counter)
        a.hops = hops
        a.heardFrom = 0x1234
        a.expiresAtUs = micros(expiresAt)
        a.severity = .critical
        return .alertAcknowledged(a)
    }

    /// An acknowledgement made at this box (heard_from 0), as the node logs it.
    private func madeHere(origin: UInt64, counter: UInt32, expiresAt: Double = 1_000) -> EventBody {
        var a = AlertAcknowledged()
        a.id = AlertID(origin: origin, counter: counter)
        a.expiresAtUs = micros(expiresAt)
        a.severity = .critical
        return .alertAcknowledged(a)
    }

    private func acks(_ b: AlertBook, at seconds: Double, node: UInt64? = nil,
                      heard: [String: [AlertAirtime.RelayHeard]] = [:]) -> [AlertAirtime.Broadcast] {
        AlertAirtime.broadcasts(b, now: micros(seconds), node: node ?? me, settings: settings, heard: heard)
            .filter(\.isAcknowledgement)
    }

    // MARK: The book

    @Test func onlyActiveCallsForHelpFromOtherBoxesAwaitAnAnswer() throws {
        var stream = EventStream()
        stream.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 1_000)), at: 10)
        stream.add(.alertReceived(alert(origin: 7, counter: 2, kind: .medical, expiresAt: 1_000)), at: 10)
        stream.add(.alertReceived(alert(origin: 7, counter: 3, kind: .flood, expiresAt: 1_000)), at: 10) // a warning, not a call
        stream.add(.alertReceived(alert(origin: 8, counter: 1, expiresAt: 1_000)), at: 11)
        stream.add(cancellation(origin: 8, counter: 1), at: 12)
        stream.add(.alertReceived(alert(origin: 9, counter: 1, expiresAt: 15)), at: 13) // expired by now
        stream.add(.alertRaised(alert(origin: me, counter: 1, expiresAt: 1_000)), at: 14) // our own
        stream.add(.checkIn(CheckIn()), at: 20)
        var b = AlertBook().applying(all: stream.inputs)
        #expect(b.awaitingAcknowledgement.map(\.idText) == ["7:1", "7:2"])
        // Silencing the alarms here answers nothing.
        stream.add(LadderEvents.acknowledged(), at: 21)
        b = AlertBook().applying(all: stream.inputs)
        #expect(b.acknowledgements.isEmpty)
        // The node's acknowledgement names the alert.
        stream.add(madeHere(origin: 7, counter: 1), at: 22)
        b = AlertBook().applying(all: stream.inputs)
        let ack = try #require(b.acknowledgements["7:1"])
        #expect(ack.madeHere && ack.hops == 0 && ack.sequence == 10 && ack.timeMicroseconds == micros(22))
        #expect(ack.expiresAtMicroseconds == micros(1_000))
        #expect(b.awaitingAcknowledgement.map(\.idText) == ["7:2"])
    }

    @Test func anAcknowledgementHeardIsKeptOnceEvenForAnAlertNeverHeard() throws {
        let b = book {
            $0.add(heardAcknowledgement(origin: 7, counter: 1, hops: 2), at: 10)
            $0.add(heardAcknowledgement(origin: 7, counter: 1, hops: 0), at: 11)
        }
        let ack = try #require(b.acknowledgements["7:1"])
        #expect(!ack.madeHere && ack.hops == 2 && ack.sequence == 1)
        #expect(b.alerts.isEmpty)
    }

    // MARK: On the air

    @Test func anAcknowledgementMadeHereGoesOnTheAirAtHopZeroUntilItsLingerEnds() {
        let b = book {
            $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 1_000)), at: 10)
            $0.add(madeHere(origin: 7, counter: 1), at: 20)
        }
        let during = acks(b, at: 20)
        #expect(during.map(\.hops) == [0])
        #expect(during.first?.because == 2 && during.first?.origin == 7 && during.first?.kind == AlertKind.sos.rawValue)
        #expect(acks(b, at: 79.9).count == 1)
        #expect(acks(b, at: 80).isEmpty)
        #expect(AlertAirtime.nextChange(b, now: micros(21), node: me, settings: settings) == micros(80))
    }

    @Test func aHeardAcknowledgementIsRelayedWithOneMoreHopButNotByTheAlertsOrigin() {
        let b = book { $0.add(heardAcknowledgement(origin: 7, counter: 1, hops: 1), at: 10) }
        #expect(acks(b, at: 10.5).isEmpty)
        #expect(AlertAirtime.nextChange(b, now: micros(10.5), node: me, settings: settings) == micros(11))
        #expect(acks(b, at: 11).map(\.hops) == [2])
        // The box that raised alert 7:1 is where the acknowledgement was going.
        #expect(acks(b, at: 11, node: 7).isEmpty)
        // At the hop limit it goes no further.
        let far = book { $0.add(heardAcknowledgement(origin: 7, counter: 1, hops: 3), at: 10) }
        #expect(acks(far, at: 20).isEmpty)
    }

    @Test func aRelayOfTheAcknowledgementHeardFirstSuppressesOurs() {
        let b = book { $0.add(heardAcknowledgement(origin: 7, counter: 1, hops: 0), at: 10) }
        let key = AlertAirtime.heardKey("7:1", cancel: false, acknowledgement: true)
        let early = [key: [AlertAirtime.RelayHeard(hops: 1, timeMicroseconds: micros(10.4), isCancel: false)]]
        #expect(acks(b, at: 12, heard: early).isEmpty)
        // A relay of the alert itself says nothing about its acknowledgement.
        let alertRelay = [AlertAirtime.heardKey("7:1", cancel: false):
                          [AlertAirtime.RelayHeard(hops: 1, timeMicroseconds: micros(10.4), isCancel: false)]]
        #expect(acks(b, at: 12, heard: alertRelay).count == 1)
    }

    @Test func aCancelledOrExpiredAlertsAcknowledgementLeavesTheAir() {
        let cancelled = book {
            $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 1_000)), at: 10)
            $0.add(madeHere(origin: 7, counter: 1), at: 20)
            $0.add(cancellation(origin: 7, counter: 1), at: 30)
        }
        #expect(acks(cancelled, at: 31).isEmpty)
        let expired = book {
            $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 40)), at: 10)
            $0.add(madeHere(origin: 7, counter: 1, expiresAt: 40), at: 20)
        }
        #expect(acks(expired, at: 39).count == 1)
        #expect(acks(expired, at: 40).isEmpty)
    }

    @Test func alertsGoFirstThenAcknowledgementsThenCancels() {
        let b = book {
            $0.add(.alertRaised(alert(origin: me, counter: 1, expiresAt: 1_000)), at: 10)
            $0.add(cancellation(origin: me, counter: 1, by: me), at: 11)
            $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 1_000)), at: 12)
            $0.add(madeHere(origin: 7, counter: 1), at: 13)
            $0.add(.alertRaised(alert(origin: me, counter: 2, expiresAt: 1_000)), at: 14)
        }
        let out = AlertAirtime.broadcasts(b, now: micros(14), node: me, settings: settings)
        // Alert 7:1 is relayed too (its delay has run out); alerts are ordered by id.
        #expect(out.map { $0.isCancel ? "cancel \($0.idText)" : $0.isAcknowledgement ? "ack \($0.idText)" : "alert \($0.idText)" }
            == ["alert 7:1", "alert aaaa:2", "ack 7:1", "cancel aaaa:1"])
    }

    // MARK: What the lights say

    @Test func ourSOSLightDipsOnceAnotherBoxAcknowledgedIt() {
        var h = LadderHarness()
        h.append(nodeStarted(id: 0xB0C5))
        h.append(radio(.on))
        let sos = h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1)))
        #expect(OutputPolicy.decide(h.state, running: true)[.red]?.pattern == .on)
        let ack = h.append(heardAcknowledgement(origin: 0xB0C5, counter: 1, hops: 1, expiresAt: 0))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.red]?.pattern == OutputPolicy.acknowledgedPulse)
        #expect(out[.red]?.reasons.map(\.sequences) == [[sos.sequence], [ack.sequence]])
        // The buzzer is this box's to silence: someone answering far away does not.
        #expect(out[.buzzer]?.pattern == OutputPolicy.sosTone)
    }

    @Test func theBlueLightDipsOnlyWhenEveryReceivedAlertIsAcknowledged() {
        var h = LadderHarness()
        h.append(nodeStarted(id: 0xB0C5))
        h.append(radio(.on))
        h.append(.alertReceived(alert(origin: 7, counter: 1)))
        h.append(.alertReceived(alert(origin: 8, counter: 1)))
        let heard = h.append(heardAcknowledgement(origin: 7, counter: 1, expiresAt: 0))
        #expect(OutputPolicy.decide(h.state, running: true)[.blue]?.pattern == .on)
        #expect(h.state.alerts.awaitingAcknowledgement.map(\.idText) == ["8:1"])
        let here = h.append(madeHere(origin: 8, counter: 1, expiresAt: 0))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.blue]?.pattern == OutputPolicy.acknowledgedPulse)
        #expect(out[.blue]?.reasons.flatMap(\.sequences).contains(heard.sequence) == true)
        #expect(out[.blue]?.reasons.flatMap(\.sequences).contains(here.sequence) == true)
        #expect(h.state.alerts.acknowledgements["8:1"]?.madeHere == true)
        #expect(h.state.alerts.acknowledgements["7:1"]?.madeHere == false)
    }
}
