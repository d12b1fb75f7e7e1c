import Testing
@testable import VigilRadio
import VigilSystem

@Suite("Simulated radio on a manual clock")
struct SimulatedRadioTests {
    let clock = ManualClock()

    func settings(advertisers: Int) -> RadioSimulationSettings {
        var s = RadioSimulationSettings()
        s.advertisers = advertisers
        s.minIntervalMicroseconds = 100_000
        s.maxIntervalMicroseconds = 100_000
        s.meanStayMicroseconds = 600_000_000
        return s
    }

    func wakes(_ radio: SimulatedRadio) throws -> Bool {
        let epoll = try Epoll()
        try epoll.add(radio.descriptor, token: 1)
        return try !epoll.wait(timeoutMilliseconds: 0).isEmpty
    }

    func reports(_ outputs: [RadioOutput]) -> [AdvertisingReport] {
        outputs.compactMap { if case .report(let r) = $0 { r } else { nil } }
    }

    @Test func advertisersAreHeardOnlyWhenTheClockReachesThem() throws {
        let radio = try SimulatedRadio(settings: settings(advertisers: 3), clock: clock, monotonic: clock)
        try radio.start()
        var outputs: [RadioOutput] = []
        // Each first advertisement falls within one interval (100 ms) of the start.
        clock.advance(byMicroseconds: 100_000)
        #expect(try wakes(radio))
        try radio.readReady(into: &outputs)
        #expect(Set(reports(outputs).map(\.address)).count == 3, "every advertiser heard once")
        // Drained: nothing more until the clock moves again.
        #expect(try !wakes(radio))
        outputs.removeAll()
        try radio.readReady(into: &outputs)
        #expect(outputs.isEmpty)
    }

    @Test func reportsAreStampedWhenDueAtTheAdvertisersIntervalPlusAdvDelay() throws {
        let start = clock.nowMicroseconds()
        let radio = try SimulatedRadio(settings: settings(advertisers: 4), clock: clock, monotonic: clock)
        try radio.start()
        var outputs: [RadioOutput] = []
        // Ten seconds in 250 ms steps: the loop is late for most reports, their times are not.
        for _ in 0..<40 {
            clock.advance(byMicroseconds: 250_000)
            try radio.readReady(into: &outputs)
        }
        let heard = Dictionary(grouping: reports(outputs), by: \.address)
        #expect(heard.count == 4)
        for (_, list) in heard {
            let times = list.map(\.timeMicroseconds)
            #expect(times.allSatisfy { $0 >= start && $0 <= clock.nowMicroseconds() })
            // 100 ms interval + 0–10 ms advDelay between consecutive advertisements.
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 100_000 && $1 - $0 <= 110_000 })
            #expect((90...100).contains(list.count), "about 10 s / 105 ms")
        }
    }

    @Test func aStoppedSimulationNeverWakes() throws {
        let radio = try SimulatedRadio(settings: settings(advertisers: 2), clock: clock, monotonic: clock)
        try radio.start()
        radio.stop()
        clock.advance(byMicroseconds: 1_000_000)
        #expect(try !wakes(radio))
    }
}
