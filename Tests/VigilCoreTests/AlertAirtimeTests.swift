import Testing
import VigilCore
import VigilEvents

@Suite("Alert airtime")
struct AlertAirtimeTests {
    let me: UInt64 = 0xAAAA
    var settings: AlertAirtime.Settings {
        var s = AlertAirtime.Settings()
        s.hopLimit = 3
        s.relayDelayMinMicroseconds = 1_000_000
        s.relayDelayMaxMicroseconds = 1_000_000 // fixed 1 s, so tests know when relaying starts
        s.cancelLingerMicroseconds = 60_000_000
        return s
    }

    private func book(_ build: (inout EventStream) -> Void) -> AlertBook {
        var stream = EventStream()
        build(&stream)
        return AlertBook().applying(all: stream.inputs)
    }

    @Test func anAlertRaisedHereIsAdvertisedAtOnceWithNoHops() {
        let b = book { $0.add(.alertRaised(alert(origin: me, counter: 1, expiresAt: 1_000)), at: 10) }
        let out = AlertAirtime.broadcasts(b, now: micros(10), node: me, settings: settings)
        #expect(out.map(\.hops) == [0])
        #expect(out.first?.isCancel == false && out.first?.because == 1)
    }

    @Test func aReceivedAlertIsRelayedAfterItsDelayWithOneMoreHop() {
        let b = book { $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 1_000, hops: 1)), at: 10) }
        #expect(AlertAirtime.broadcasts(b, now: micros(10.5), node: me, settings: settings).isEmpty)
        let out = AlertAirtime.broadcasts(b, now: micros(11), node: me, settings: settings)
        #expect(out.map(\.hops) == [2])
        #expect(AlertAirtime.nextChange(b, now: micros(10.5), node: me, settings: settings) == micros(11))
    }

    @Test func anAlertAtTheHopLimitIsNotRelayed() {
        let b = book { $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 1_000, hops: 3)), at: 10) }
        #expect(AlertAirtime.broadcasts(b, now: micros(20), node: me, settings: settings).isEmpty)
    }

    @Test func aRelayHeardBeforeOurDelaySuppressesOurs() {
        let b = book { $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 1_000, hops: 0)), at: 10) }
        let key = AlertAirtime.heardKey("7:1", cancel: false)
        let early = [key: [AlertAirtime.RelayHeard(hops: 1, timeMicroseconds: micros(10.4), isCancel: false)]]
        #expect(AlertAirtime.broadcasts(b, now: micros(12), node: me, settings: settings, heard: early).isEmpty)
        // Heard only after we started relaying: we keep going.
        let late = [key: [AlertAirtime.RelayHeard(hops: 1, timeMicroseconds: micros(11.5), isCancel: false)]]
        #expect(AlertAirtime.broadcasts(b, now: micros(12), node: me, settings: settings, heard: late).count == 1)
        // A relay closer to the origin than ours would be does not cover our ring.
        let closer = [key: [AlertAirtime.RelayHeard(hops: 0, timeMicroseconds: micros(10.4), isCancel: false)]]
        #expect(AlertAirtime.broadcasts(b, now: micros(12), node: me, settings: settings, heard: closer).count == 1)
    }

    @Test func aFurtherRingHeardAfterACloserOneStillSuppresses() {
        // Heard first at hop 1 (our relay would be hop 2); then another hop-1 relay, then a hop-2
        // relay before our delay ran out: the hop-2 one covers our ring.
        let b = book { $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 1_000, hops: 1)), at: 10) }
        let key = AlertAirtime.heardKey("7:1", cancel: false)
        let heard = [key: [AlertAirtime.RelayHeard(hops: 1, timeMicroseconds: micros(10.2), isCancel: false),
                           AlertAirtime.RelayHeard(hops: 2, timeMicroseconds: micros(10.6), isCancel: false)]]
        #expect(AlertAirtime.broadcasts(b, now: micros(12), node: me, settings: settings, heard: heard).isEmpty)
    }

    @Test func aRenewalExtendsAnAlertButNotACancelledOne() {
        let renewed = book {
            $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 100)), at: 10)
            $0.add(.alertReceived(alert(origin: 7, counter: 1, expiresAt: 5_000)), at: 50)
        }
        #expect(AlertAirtime.broadcasts(renewed, now: micros(200), node: me, settings: settings).count == 1)
        let cancelled = book {
            $0.add(.alertReceived(alert(origin: 7, counter: 2, expiresAt: 100)), at: 10)
            $0.add(cancellation(origin: 7, counter: 2), at: 20)
            $0.add(.alertReceived(alert(origin: 7, counter: 2, expiresAt: 5_000)), at: 50)
        }
        #expect(cancelled.alerts["7:2"]?.expiresAtMicroseconds == micros(100))
    }

    @Test func expiredAlertsLeaveTheAir() {
        let b = book {
            $0.add(.alertRaised(alert(origin: me, counter: 1, expiresAt: 100)), at: 10)
            $0.add(.alertRaised(alert(origin: me, counter: 2, expiresAt: 0)), at: 11)
        }
        let out = AlertAirtime.broadcasts(b, now: micros(100), node: me, settings: settings)
        #expect(out.map(\.counter) == [2])
    }

    @Test func aCancelReplacesTheAlertAndLingersThenStops() {
        let b = book {
            $0.add(.alertRaised(alert(origin: me, counter: 1, expiresAt: 1_000)), at: 10)
            $0.add(cancellation(origin: me, counter: 1, by: me), at: 20)
        }
        let during = AlertAirtime.broadcasts(b, now: micros(30), node: me, settings: settings)
        #expect(during.count == 1 && during[0].isCancel && during[0].hops == 0)
        #expect(AlertAirtime.broadcasts(b, now: micros(80), node: me, settings: settings).isEmpty)
    }

    @Test func aCancelHeardForAnUnknownAlertIsStillRelayed() {
        var cancel = AlertCancelled()
        cancel.id = AlertID(origin: 7, counter: 3)
        cancel.hops = 1
        cancel.heardFrom = 0x1234
        cancel.expiresAtUs = micros(1_000)
        cancel.severity = .critical
        let b = book { $0.add(.alertCancelled(cancel), at: 10) }
        let out = AlertAirtime.broadcasts(b, now: micros(12), node: me, settings: settings)
        #expect(out.count == 1 && out[0].isCancel && out[0].hops == 2 && out[0].severity == AlertSeverity.critical.rawValue)
    }

    @Test func relayDelaysDifferBetweenBoxesButNotBetweenReplays() {
        var s = AlertAirtime.Settings()
        s.relayDelayMinMicroseconds = 200_000
        s.relayDelayMaxMicroseconds = 2_000_000
        let delays = (1...50).map { AlertAirtime.relayDelay(node: UInt64($0), origin: 7, counter: 1, settings: s) }
        #expect(delays.allSatisfy { (200_000...2_000_000).contains($0) })
        #expect(Set(delays).count > 40)
        #expect(delays == (1...50).map { AlertAirtime.relayDelay(node: UInt64($0), origin: 7, counter: 1, settings: s) })
    }

    @Test func criticalAlertsComeFirstAndCancelsLast() {
        var info = alert(origin: 9, counter: 1, kind: .info, expiresAt: 1_000)
        info.severity = .info
        let b = book {
            $0.add(.alertRaised(info), at: 10)
            $0.add(.alertRaised(alert(origin: me, counter: 2, expiresAt: 1_000)), at: 11)
            $0.add(.alertRaised(alert(origin: me, counter: 3, expiresAt: 1_000)), at: 12)
            $0.add(cancellation(origin: me, counter: 3, by: me), at: 13)
        }
        let out = AlertAirtime.broadcasts(b, now: micros(14), node: me, settings: settings)
        #expect(out.map(\.counter) == [2, 1, 3])
        #expect(out.map(\.isCancel) == [false, false, true])
    }
}
