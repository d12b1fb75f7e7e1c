import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilExposure
import VigilRadio
import VigilSystem
@testable import VigilNode

@Suite struct ExposureAdvertisingTests {
    @Test func withExposureAdvertisingTheBoxSendsTheRPIOfItsOwnKeyForThisInterval() async throws {
        let dir = TemporaryDirectory()
        var c = testConfiguration(dir, advertisers: 0)
        c.exposure.advertise = true
        c.exposure.txPowerDBm = -12
        let radio = try ScriptedRadio()
        let clock = ManualClock()
        let node = try Node(configuration: c, clock: clock, monotonic: clock, logger: quietLogger, radio: radio)
        try await run(node, on: clock, forMicroseconds: 300_000)

        let plan = try #require(radio.lastPlan)
        let advert = try #require(plan.payloads.first.flatMap { ExposureAdvertisement(advertisingData: $0) })
        #expect(plan.payloads.first?.count == 31)
        // The key is the box's own, kept out of the log in DATA/exposure-keys.
        let store = try ExposureKeyStore(directory: dir.path)
        let key = try #require(store.keys.first)
        let interval = Exposure.interval(unixSeconds: clock.nowMicroseconds() / 1_000_000)
        let schedule = ExposureKeySchedule(key)
        let candidates = try [interval - 1, interval].map { try schedule.identifier(forInterval: $0) }
        #expect(candidates.contains(advert.identifier))
        let metadata = try schedule.decrypt(advert.encryptedMetadata, for: advert.identifier)
        #expect(metadata.txPower == -12)
        #expect(FileSystem.permissions(store.path) == 0o600)
        // A random address of the non-resolvable private kind, rotated with the RPI.
        #expect(PresenceIdentity.isNonResolvablePrivateAddress(plan.address))
    }

    @Test func theKeyStoreMakesOneKeyPerDayAndForgetsOldOnes() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        var store = try ExposureKeyStore(directory: dir.path)
        let day: UInt32 = 2_655_936
        let a = try store.key(forInterval: day + 5, retentionDays: 14)
        #expect(try store.key(forInterval: day + 100, retentionDays: 14) == a, "same day, same key")
        let b = try store.key(forInterval: day + 144, retentionDays: 14)
        #expect(a != b && b.rollingStartIntervalNumber == day + 144)
        _ = try store.key(forInterval: day + 144 * 16, retentionDays: 14)
        let reloaded = try ExposureKeyStore(directory: dir.path)
        #expect(reloaded.keys.count == 1, "keys older than 14 days are dropped")
    }
}
