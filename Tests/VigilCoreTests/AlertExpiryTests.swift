import Testing
import VigilCore
import VigilEvents

private func expired(origin: UInt64, counter: UInt32, at seconds: Double) -> EventBody {
    var x = AlertExpired()
    x.id = AlertID(origin: origin, counter: counter)
    x.expiresAtUs = micros(seconds)
    return .alertExpired(x)
}

private func reaffirmed(origin: UInt64, counter: UInt32, until seconds: Double) -> EventBody {
    var r = AlertReaffirmed()
    r.id = AlertID(origin: origin, counter: counter)
    r.expiresAtUs = micros(seconds)
    r.by = "button"
    return .alertReaffirmed(r)
}

private func running(_ s: inout EventStream) {
    s.add(nodeStarted(id: 0xB0C5), at: 1)
    s.add(radio(.on), at: 1)
}

private func state(_ s: EventStream) -> Projections {
    var p = Projections()
    for e in s.events { p.apply(e) }
    return p
}

/// Issue 10 item 1: AlertExpired ends an alert for good, as if judged by time, and replay agrees.
@Suite("Alert expiry")
struct AlertExpiryTests {
    @Test func theEarliestExpiryAmongActiveAlerts() {
        var s = EventStream()
        s.add(.alertRaised(alert(origin: 0xB0C5, counter: 1, expiresAt: 400)), at: 100)
        s.add(.alertReceived(alert(origin: 0xFACE, counter: 2, expiresAt: 300)), at: 110)
        s.add(.alertReceived(alert(origin: 0xFACE, counter: 3)), at: 120) // no expiry: never due
        s.add(.alertReceived(alert(origin: 0xFACE, counter: 4, expiresAt: 200)), at: 130)
        s.add(cancellation(origin: 0xFACE, counter: 4), at: 140) // cancelled: not due either
        var book = AlertBook().applying(all: s.inputs)
        #expect(book.earliestExpiry?.id == AlertID(origin: 0xFACE, counter: 2))
        #expect(book.earliestExpiry?.expiresAtMicroseconds == micros(300))
        book.apply(.event(Event(sequence: 9, timeMicroseconds: micros(300), body: expired(origin: 0xFACE, counter: 2, at: 300))))
        #expect(book.earliestExpiry?.id == AlertID(origin: 0xB0C5, counter: 1))
        #expect(book.active.map(\.idText) == [AlertID(origin: 0xB0C5, counter: 1).text, AlertID(origin: 0xFACE, counter: 3).text])
    }

    /// Fails before issue 10: an expired SOS came back (red and buzzer on again) when a later
    /// event carried an earlier time, because expiry was judged only against the newest time.
    @Test func anExpiredSOSStaysEndedWhenTheClockIsSteppedBack() {
        var s = EventStream()
        running(&s)
        s.add(.alertRaised(alert(origin: 0xB0C5, counter: 1, expiresAt: 400)), at: 100)
        s.add(.alertReceived(alert(origin: 0xFACE, counter: 9, expiresAt: 400)), at: 101)
        #expect(OutputPolicy.decide(state(s), running: true)[.red]?.pattern == .on)
        s.add(expired(origin: 0xB0C5, counter: 1, at: 400), at: 400)
        s.add(expired(origin: 0xFACE, counter: 9, at: 400), at: 400)
        s.add(radio(.on), at: 200) // NTP stepped the wall clock back
        let p = state(s)
        #expect(p.alerts.active.isEmpty)
        let out = OutputPolicy.decide(p, running: true)
        #expect(out[.red]?.pattern == .off)
        #expect(out[.buzzer]?.pattern == .off)
        #expect(out[.blue]?.pattern == .off)
        #expect(OutputPolicy.soundingAlarms(p).isEmpty)
        // Checkpoint + tail = replay.
        let restored = try? Projections.decoded(p.encoded())
        #expect(restored.map { try? $0.encoded() } == (try? p.encoded()))
    }

    @Test func aStaleExpiryDoesNotEndARenewedAlert() {
        var s = EventStream()
        s.add(.alertReceived(alert(origin: 0xFACE, counter: 1, expiresAt: 400)), at: 100)
        s.add(.alertReceived(alert(origin: 0xFACE, counter: 1, expiresAt: 800)), at: 300) // renewed
        s.add(expired(origin: 0xFACE, counter: 1, at: 400), at: 401) // appended before the renewal was durable
        let book = AlertBook().applying(all: s.inputs)
        #expect(book.active.count == 1)
        #expect(book.earliestExpiry?.expiresAtMicroseconds == micros(800))
    }

    @Test func aReaffirmationMovesTheExpiryOnAndRevivesAnExpiredSOS() {
        var s = EventStream()
        s.add(.alertRaised(alert(origin: 0xB0C5, counter: 1, expiresAt: 400)), at: 100)
        s.add(reaffirmed(origin: 0xB0C5, counter: 1, until: 900), at: 300)
        var book = AlertBook().applying(all: s.inputs)
        #expect(book.alerts[AlertID(origin: 0xB0C5, counter: 1).text]?.expiresAtMicroseconds == micros(900))
        book.apply(.event(Event(sequence: 3, timeMicroseconds: micros(250), body: reaffirmed(origin: 0xB0C5, counter: 1, until: 500))))
        #expect(book.alerts[AlertID(origin: 0xB0C5, counter: 1).text]?.expiresAtMicroseconds == micros(900), "never back")
        book.apply(.event(Event(sequence: 4, timeMicroseconds: micros(900), body: expired(origin: 0xB0C5, counter: 1, at: 900))))
        #expect(book.active.isEmpty)
        book.apply(.event(Event(sequence: 5, timeMicroseconds: micros(950), body: reaffirmed(origin: 0xB0C5, counter: 1, until: 1_500))))
        #expect(book.active.count == 1)
    }
}
