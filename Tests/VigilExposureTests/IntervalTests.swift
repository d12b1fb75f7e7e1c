import Testing
import VigilExposure

@Suite struct IntervalTests {
    @Test func intervalsAreTenMinutesSinceTheEpoch() {
        #expect(Exposure.interval(unixSeconds: 0) == 0)
        #expect(Exposure.interval(unixSeconds: 599) == 0)
        #expect(Exposure.interval(unixSeconds: 600) == 1)
        // 2020-07-01T00:00:00Z = 1593561600 s → interval 2655936 (a multiple of 144: a day start).
        #expect(Exposure.interval(unixSeconds: 1_593_561_600) == 2_655_936)
        #expect(2_655_936 % Exposure.intervalsPerDay == 0)
    }
}
