import Testing
import VigilCore
import VigilEvents

@Suite("CheckInBook")
struct CheckInBookTests {
    @Test func keepsTheLatestCheckInPerResidentWithTotals() throws {
        var stream = EventStream()
        stream.add(checkIn("R-1", source: .checkInButton), at: 10)
        stream.add(checkIn("R-2", source: .checkInHeartRate, value: 71), at: 11)
        stream.add(scanHit(address: 1, rssi: [-60]), at: 12) // ignored
        stream.add(checkIn("R-1", source: .checkInHeartRate, value: 64.5), at: 13)
        stream.add(checkIn("R-1", source: .checkInCli), at: 14)
        let book = CheckInBook().applying(all: stream.inputs)

        #expect(book.residents.count == 2)
        let r1 = try #require(book.residents["R-1"])
        #expect(r1.total == 3)
        #expect(r1.sequence == 5)
        #expect(r1.microseconds == micros(14))
        #expect(r1.source == CheckInSource.checkInCli.rawValue)
        #expect(r1.value == nil) // the latest had no value; an older one's is not kept
        let r2 = try #require(book.residents["R-2"])
        #expect(r2.total == 1)
        #expect(r2.sequence == 2)
        #expect(r2.value == 71)
        #expect(r2.source == CheckInSource.checkInHeartRate.rawValue)
    }

    @Test func zeroValueIsKeptAsAValue() {
        var stream = EventStream()
        stream.add(checkIn("R-9", source: .checkInHeartRate, value: 0), at: 1)
        #expect(CheckInBook().applying(all: stream.inputs).residents["R-9"]?.value == 0)
    }
}
