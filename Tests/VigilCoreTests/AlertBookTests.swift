import Foundation
import Testing
import VigilCore
import VigilEvents

@Suite("AlertBook")
struct AlertBookTests {
    @Test func duplicatesAreDroppedAndCounted() throws {
        var stream = EventStream()
        stream.add(.alertRaised(alert(origin: 0xB1A5, counter: 1, kind: .fire, hops: 0, location: (10, -20), text: "Kitchen")), at: 10)
        stream.add(.alertReceived(alert(origin: 0xB1A5, counter: 1, kind: .fire, hops: 3, text: "relayed copy")), at: 11)
        stream.add(.alertReceived(alert(origin: 0xB1A5, counter: 1, kind: .fire, hops: 1)), at: 12)
        stream.add(.alertReceived(alert(origin: 0xC0, counter: 1, kind: .flood, hops: 2)), at: 13)
        let book = AlertBook().applying(all: stream.inputs)

        #expect(book.alerts.count == 2)
        #expect(book.duplicatesDropped == 2)
        let first = try #require(book.alerts["b1a5:1"])
        #expect(first.duplicates == 2)
        #expect(first.raisedHere)
        #expect(first.firstSequence == 1)
        #expect(first.firstMicroseconds == micros(10))
        #expect(first.text == "Kitchen") // the first copy wins
        #expect(first.kind == AlertKind.fire.rawValue)
        #expect(first.latitudeE7 == 10)
        #expect(first.longitudeE7 == -20)
        #expect(first.hops == 0)
        let relayed = try #require(book.alerts["c0:1"])
        #expect(!relayed.raisedHere)
        #expect(relayed.duplicates == 0)
        #expect(relayed.latitudeE7 == nil)
        #expect(relayed.hops == 2)
        #expect(book.active.map(\.idText) == ["b1a5:1", "c0:1"])
    }

    @Test func duplicatesKeepTheFewestHops() throws {
        var stream = EventStream()
        stream.add(.alertReceived(alert(origin: 9, counter: 4, hops: 5)), at: 1)
        stream.add(.alertReceived(alert(origin: 9, counter: 4, hops: 2)), at: 2)
        stream.add(.alertReceived(alert(origin: 9, counter: 4, hops: 3)), at: 3)
        let book = AlertBook().applying(all: stream.inputs)
        #expect(book.alerts["9:4"]?.hops == 2)
    }

    @Test func cancellationMarksTheAlertCancelled() throws {
        var stream = EventStream()
        stream.add(.alertRaised(alert(origin: 1, counter: 1)), at: 10)
        stream.add(.alertRaised(alert(origin: 1, counter: 2)), at: 11)
        stream.add(cancellation(origin: 1, counter: 1), at: 20)
        stream.add(cancellation(origin: 1, counter: 1), at: 30) // again: first time stays
        let book = AlertBook().applying(all: stream.inputs)
        let cancelled = try #require(book.alerts["1:1"])
        #expect(cancelled.cancelled)
        #expect(cancelled.cancelledMicroseconds == micros(20))
        #expect(book.alerts["1:2"]?.cancelled == false)
        #expect(book.active.map(\.idText) == ["1:2"])
        #expect(book.cancellationsForUnknown == 0)
    }

    @Test func cancellationOfAnUnknownAlertIsCountedAndRemembered() {
        var stream = EventStream()
        stream.add(.alertRaised(alert(origin: 1, counter: 1)), at: 10)
        stream.add(cancellation(origin: 1, counter: 99), at: 11)
        stream.add(cancellation(origin: 2, counter: 1), at: 12)
        let book = AlertBook().applying(all: stream.inputs)
        #expect(book.cancellationsForUnknown == 2)
        // The unknown ones are kept as cancelled tombstones, never active.
        #expect(book.alerts.count == 3)
        #expect(book.alerts["1:99"]?.tombstone == true && book.alerts["1:99"]?.cancelled == true)
        #expect(book.active.map(\.idText) == ["1:1"])
    }

    @Test func anAlertArrivingAfterItsCancelStaysCancelled() {
        var stream = EventStream()
        stream.add(cancellation(origin: 2, counter: 5), at: 10)
        stream.add(.alertReceived(alert(origin: 2, counter: 5)), at: 11)
        let book = AlertBook().applying(all: stream.inputs)
        #expect(book.active.isEmpty)
        #expect(book.alerts["2:5"]?.cancelled == true)
    }

    @Test func expiryIsJudgedAgainstTheLatestEventTime() {
        var stream = EventStream()
        stream.add(.alertRaised(alert(origin: 1, counter: 1, expiresAt: 100)), at: 10)
        stream.add(.alertRaised(alert(origin: 1, counter: 2, expiresAt: 0)), at: 11) // never expires
        var book = AlertBook().applying(all: stream.inputs)
        // Event times are seconds after 1970, so a wall clock would expire it at once.
        #expect(book.active.count == 2)

        var more = EventStream()
        more.nextSequence = 3
        more.add(button(), at: 99.5)
        more.add(button(), at: 100) // not before expiry any more
        more.add(button(), at: 50)  // the wall clock was stepped back (e.g. NTP on an RTC-less Pi)
        more.add(.alertRaised(alert(origin: 1, counter: 3, expiresAt: 60)), at: 51)
        book.apply(more.inputs[0])
        #expect(book.active.map(\.idText) == ["1:1", "1:2"])
        book.apply(more.inputs[1])
        #expect(book.active.map(\.idText) == ["1:2"])
        // After a backward step the latest time is "now": an SOS raised then is active (judged
        // against the highest time ever seen it would be born expired — no red, no buzzer), at
        // the price of an old alert showing again until time catches up. Err towards alarming.
        book.apply(more.inputs[2])
        book.apply(more.inputs[3])
        #expect(book.active.map(\.idText) == ["1:1", "1:2", "1:3"])
        #expect(book.newestMicroseconds == micros(51))
        // Expired alerts are still on record.
        #expect(book.alerts.count == 3)
    }

    @Test func activeAlertsAreOldestFirst() {
        var stream = EventStream()
        stream.add(.alertReceived(alert(origin: 0xFF, counter: 1)), at: 1)
        stream.add(.alertRaised(alert(origin: 0x01, counter: 9)), at: 2)
        stream.add(.alertReceived(alert(origin: 0x80, counter: 3)), at: 3)
        let book = AlertBook().applying(all: stream.inputs)
        #expect(book.active.map(\.idText) == ["ff:1", "1:9", "80:3"])
        #expect(book.active.map(\.firstSequence) == [1, 2, 3])
    }
}

@Suite("The alert book stays bounded")
struct AlertBookPruningTests {
    private let hour = 3_600.0

    @Test func alertsLongEndedAreForgottenButActiveOnesAndTheCounterStay() throws {
        var stream = EventStream()
        stream.add(.alertRaised(alert(origin: 1, counter: 41, expiresAt: 100)), at: 10)     // ends at 100
        stream.add(.alertReceived(alert(origin: 2, counter: 1, expiresAt: 200)), at: 20)    // ends at 200
        stream.add(.alertReceived(alert(origin: 3, counter: 1, expiresAt: 0)), at: 30)      // no expiry, active
        stream.add(.alertReceived(alert(origin: 4, counter: 1, expiresAt: 0)), at: 40)
        stream.add(cancellation(origin: 4, counter: 1), at: 50)                              // no expiry, cancelled
        var ack = AlertAcknowledged()
        ack.id = AlertID(origin: 2, counter: 1)
        ack.expiresAtUs = micros(200)
        stream.add(.alertAcknowledged(ack), at: 60)
        // Still within an hour of their end: everything is remembered.
        stream.add(.checkIn(CheckIn()), at: 100 + hour - 1)
        var book = AlertBook().applying(all: stream.inputs)
        #expect(book.alerts.count == 4 && book.acknowledgements.count == 1)
        // Two hours later the ended ones are gone, with the acknowledgement of one.
        stream.add(.checkIn(CheckIn()), at: 200 + 2 * hour)
        book = AlertBook().applying(all: stream.inputs)
        #expect(Set(book.alerts.keys) == ["3:1", "4:1"])
        #expect(book.acknowledgements.isEmpty)
        #expect(book.forgotten == 3)
        #expect(book.highestCounterRaisedHere == 41, "the counter outlives the alert")
        // The cancelled alert without expiry is kept for a week after its cancel, then forgotten;
        // the active one without expiry stays.
        stream.add(.checkIn(CheckIn()), at: 50 + 7 * 24 * hour + hour)
        book = AlertBook().applying(all: stream.inputs)
        #expect(Set(book.alerts.keys) == ["3:1"])
        #expect(book.active.map(\.idText) == ["3:1"])
    }

    @Test func aCheckpointAndItsTailForgetTheSameAsAFullReplay() throws {
        var stream = EventStream()
        for i in 0..<200 {
            stream.add(.alertReceived(alert(origin: UInt64(i % 7 + 1), counter: UInt32(i), expiresAt: Double(i) * 600 + 900)),
                       at: Double(i) * 600)
        }
        let inputs = stream.inputs
        let full = AlertBook().applying(all: inputs)
        for cut in [1, 57, 123, 199] {
            let head = AlertBook().applying(all: Array(inputs.prefix(cut)))
            let restored = try JSONDecoder().decode(AlertBook.self, from: JSONEncoder().encode(head))
            #expect(restored.applying(all: Array(inputs.dropFirst(cut))) == full, "cut at \(cut)")
        }
        #expect(full.alerts.count < 20, "\(full.alerts.count) alerts remembered of 200")
        #expect(full.forgotten > 180)
    }
}
