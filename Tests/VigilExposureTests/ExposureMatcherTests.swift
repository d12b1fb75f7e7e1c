import Foundation
import Testing
import VigilCore
import VigilEvents
@testable import VigilExposure

@Suite("Exposure matching")
struct ExposureMatcherTests {
    /// 2020-07-01T00:00:00Z, a day start (interval 2,655,936).
    static let dayStart: UInt32 = 2_655_936

    func key(_ seed: UInt8, start: UInt32 = dayStart) throws -> TemporaryExposureKey {
        try TemporaryExposureKey(keyData: (0..<16).map { seed &+ UInt8($0) }, rollingStartIntervalNumber: start)
    }

    /// A phone with `tek` heard by the box every minute from interval `from` for `minutes`, at
    /// RSSI `rssi`, advertising TX power `tx` inside its encrypted metadata; `shift` moves the
    /// sightings away from when the key says they were sent.
    func sightings(of tek: TemporaryExposureKey, from: UInt32, minutes: Int, rssi: Int32 = -50, tx: Int8 = -15,
                   shift: Int64 = 0) throws -> [Event] {
        let schedule = ExposureKeySchedule(tek)
        var events: [Event] = []
        for m in 0..<minutes {
            let seconds = Int64(from) * 600 + Int64(m) * 60 + shift
            let interval = UInt32((Int64(from) * 600 + Int64(m) * 60) / 600)
            let rpi = try schedule.identifier(forInterval: interval)
            let aem = try schedule.encrypt(AssociatedMetadata(txPower: tx), for: rpi)
            var hit = ScanHit()
            hit.address = 0x40_00_00_00_00_00 | UInt64(interval)
            hit.count = 4
            hit.rssiMin = rssi - 2
            hit.rssiMax = rssi + 2
            hit.rssiSum = Int64(rssi) * 4
            hit.lastOffsetUs = 0
            hit.firstOffsetUs = 2_000_000
            hit.advertisement.gaenRpi = Data(rpi.bytes)
            hit.advertisement.gaenAem = Data(aem.bytes)
            events.append(Event(sequence: UInt64(events.count + 1), timeMicroseconds: UInt64(seconds) * 1_000_000, body: .scanHit(hit)))
        }
        return events
    }

    func contacts(_ events: [Event]) -> ExposureContacts {
        var c = ExposureContacts()
        for e in events { c.apply(e) }
        return c
    }

    @Test func theIndexFindsEveryStoredIdentifierAndNothingElse() {
        var rng = SystemRandomNumberGenerator()
        let ids = (0..<50_000).map { _ in Bytes16(lo: rng.next(), hi: rng.next()) }
        let index = IdentifierIndex(ids)
        #expect(ids.indices.allSatisfy { index.position(of: ids[$0]) == $0 })
        #expect((0..<50_000).allSatisfy { _ in index.position(of: Bytes16(lo: rng.next(), hi: rng.next())) == nil })
        // Same first half, different second half: not a match.
        #expect(index.position(of: Bytes16(lo: ids[0].lo, hi: ids[0].hi ^ 1)) == nil)
    }

    @Test func aPublishedKeyMatchesTheIdentifiersHeardAndGivesAWindowWithTheDecryptedTxPower() throws {
        let sick = try key(1)
        let healthy = try key(99)
        // 25 minutes from interval +60 (10:00 UTC), RSSI -50 dBm, TX -15 dBm: attenuation 35 dB.
        let heard = try sightings(of: sick, from: Self.dayStart + 60, minutes: 25) + sightings(of: healthy, from: Self.dayStart + 80, minutes: 3)
        let c = contacts(heard)
        let matcher = try ExposureMatcher(contacts: c)
        let published = [DiagnosisKey(key: sick, transmissionRiskLevel: 6, reportType: .confirmedTest), DiagnosisKey(key: try key(50))]
        let matches = try matcher.match(published)
        #expect(Set(matches.map(\.interval)) == Set((Self.dayStart + 60)...(Self.dayStart + 62)))
        #expect(matches.allSatisfy { $0.key.key == sick })
        let detections = ExposureMatcher.detections(matches, contacts: c, source: "export.bin")
        #expect(detections.count == 1)
        let x = try #require(detections.first)
        #expect(x.txPower == -15)
        #expect(x.minAttenuation == -15 - (-48))
        #expect(x.secondsByBucket[0] > 0 && x.secondsByBucket.dropFirst().allSatisfy { $0 == 0 })
        #expect(x.highRisk, "25 minutes close by")
        #expect(x.diagnosisKey == Data(sick.keyData.bytes) && x.transmissionRiskLevel == 6 && x.source == "export.bin")
        #expect(matcher.keysProcessed == 2)
    }

    @Test func sightingsMoreThanTwoHoursFromTheKeysIntervalDoNotMatch() throws {
        let sick = try key(1)
        let onTime = try sightings(of: sick, from: Self.dayStart + 60, minutes: 1, shift: 7_000)     // ~1 h 57 min late
        let late = try sightings(of: sick, from: Self.dayStart + 70, minutes: 1, shift: 8_100)       // 2 h 5 min after the interval ended
        let matcher = try ExposureMatcher(contacts: contacts(onTime + late))
        let matches = try matcher.match([DiagnosisKey(key: sick)])
        #expect(matches.map(\.interval) == [Self.dayStart + 60])
        #expect(matcher.outsideTolerance == 1)
    }

    @Test func revokedKeysAreSkipped() throws {
        let sick = try key(1)
        let matcher = try ExposureMatcher(contacts: contacts(try sightings(of: sick, from: Self.dayStart + 60, minutes: 5)))
        #expect(try matcher.match([DiagnosisKey(key: sick, reportType: .revoked)]).isEmpty)
        #expect(matcher.revokedSkipped == 1)
    }

    @Test func aBriefPassingContactIsMatchedButScoresNoWindow() throws {
        let sick = try key(1)
        let c = contacts(try sightings(of: sick, from: Self.dayStart + 60, minutes: 2))
        let matches = try ExposureMatcher(contacts: c).match([DiagnosisKey(key: sick)])
        #expect(!matches.isEmpty)
        #expect(ExposureMatcher.detections(matches, contacts: c, source: "x").isEmpty, "under the minimum duration")
    }

    @Test func everyEngineMatchesTheSame() throws {
        let sick = try key(7)
        let c = contacts(try sightings(of: sick, from: Self.dayStart + 100, minutes: 12))
        let results = try RollingProximityIdentifierDeriver.Engine.available.map { engine in
            try ExposureMatcher(contacts: c, engine: engine).match([DiagnosisKey(key: sick)]).map(\.interval)
        }
        #expect(results.count >= 1 && results.allSatisfy { $0 == results[0] && !$0.isEmpty })
    }
}
