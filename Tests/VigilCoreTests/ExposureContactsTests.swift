import Foundation
import Testing
import VigilCore
import VigilEvents

@Suite("Exposure contacts")
struct ExposureContactsTests {
    typealias Instance = ExposureContacts.Instance

    /// A sighting of `rssi` dBm lasting `span` seconds from `at` seconds.
    func sighting(at: Double, span: Double = 2, rssi: Double? = -60, tx: Int32? = nil) -> Instance {
        Instance(firstMicroseconds: micros(at), lastMicroseconds: micros(at + span), reports: 8,
                 rssiSum: rssi.map { Int64($0 * 8) } ?? 0, rssiUnavailable: rssi == nil ? 8 : 0,
                 rssiMax: rssi.map { Int32($0) + 3 }, advertisedTxPower: tx)
    }

    var settings: ExposureContacts.Settings { ExposureContacts.Settings() }

    @Test func sightingsEveryMinuteMakeOneWindowCreditedWithTheTimeBetweenThem() {
        // 20 minutes of sightings, one a minute, at attenuation -20 - (-60) = 40 dB (closest bucket).
        let instances = (0..<21).map { sighting(at: 1_000 + Double($0) * 60) }
        let windows = ExposureContacts.windows(instances, txPower: -20, settings: settings)
        #expect(windows.count == 1)
        let w = windows[0]
        #expect(w.instances == 21)
        // 2 s for the first, then 58 s gap + 2 s span each: 2 + 20 × 60 = 1202 s, all in bucket 0.
        #expect(w.secondsByBucket == [1_202, 0, 0, 0])
        #expect(w.minAttenuationDB == -20 - (-57))
        let score = ExposureContacts.score(w, transmissionRiskLevel: 4, settings: settings)
        #expect(abs(score.weightedMinutes - 1_202.0 / 60 * 0.8) < 1e-9)
        #expect(score.highRisk, "16 weighted minutes ≥ 15")
    }

    @Test func sightingsEveryTwoSecondsWithJitterAreCreditedInFullNotTruncated() {
        // A 20-minute close contact seen in every 2 s scan window, ±0.1 s of jitter.
        var t = 0.0
        var instances: [Instance] = []
        var i = 0
        while t < 1_200 {
            instances.append(sighting(at: t, span: 1.5))
            t += i % 2 == 0 ? 1.9 : 2.1
            i += 1
        }
        let w = ExposureContacts.windows(instances, txPower: -20, settings: settings)[0]
        #expect(abs(w.totalMinutes - 20) < 0.1, "\(w.totalMinutes) minutes")
        #expect(ExposureContacts.score(w, transmissionRiskLevel: 4, settings: settings).highRisk, "16 weighted minutes")
    }

    @Test func contactDataBeforeARetentionCutoffIsForgottenAndNotTakenAgain() {
        var stream = EventStream()
        var hit = ScanHit()
        hit.count = 2
        hit.rssiMin = -60; hit.rssiMax = -60; hit.rssiSum = -120
        hit.advertisement.gaenRpi = Data(repeating: 3, count: 16)
        stream.add(.scanHit(hit), at: 100)
        var retention = ContactRetention()
        retention.cutoffUs = micros(1_000)
        stream.add(.contactRetention(retention), at: 2_000)
        stream.add(.scanHit(hit), at: 500) // late, and still before the cutoff
        var other = hit
        other.advertisement.gaenRpi = Data(repeating: 4, count: 16)
        stream.add(.scanHit(other), at: 2_001)
        var contacts = ExposureContacts()
        for e in stream.events { contacts.apply(e) }
        #expect(contacts.tracks.keys.map { $0[0] } == [4])
        #expect(contacts.instanceCount == 1)
    }

    @Test func sightingsWithinAMinuteFoldIntoOneInstanceAndAGlobalCapSheds() {
        var contacts = ExposureContacts()
        contacts.maxInstances = 3
        var hit = ScanHit()
        hit.count = 2
        hit.rssiMin = -60; hit.rssiMax = -50; hit.rssiSum = -110
        var seq: UInt64 = 0
        func add(_ id: UInt8, at seconds: Double) {
            hit.advertisement.gaenRpi = Data(repeating: id, count: 16)
            seq += 1
            contacts.apply(Event(sequence: seq, timeMicroseconds: micros(seconds), body: .scanHit(hit)))
        }
        for k in 0..<30 { add(1, at: 120 + Double(k) * 2) } // one UTC minute of 2 s windows
        #expect(contacts.tracks[[UInt8](repeating: 1, count: 16)]?.instances.count == 1)
        let folded = contacts.tracks[[UInt8](repeating: 1, count: 16)]?.instances.first
        #expect(folded?.reports == 60 && folded?.rssiMean == -55 && folded?.rssiMax == -50)
        add(1, at: 200); add(2, at: 200); add(3, at: 200)
        #expect(contacts.instanceCount == 3 && contacts.shedInstances == 1)
    }

    @Test func aGapOverTenMinutesEndsTheEncounter() {
        let instances = [sighting(at: 0), sighting(at: 60), sighting(at: 62 + 601), sighting(at: 62 + 661)] // 601 s of silence
        let windows = ExposureContacts.windows(instances, txPower: -20, settings: settings)
        #expect(windows.count == 2)
        #expect(windows.map(\.instances) == [2, 2])
    }

    @Test func aWindowLastsAtMostThirtyMinutes() {
        let instances = (0..<46).map { sighting(at: Double($0) * 60) } // 45 minutes of sightings
        let windows = ExposureContacts.windows(instances, txPower: -20, settings: settings)
        #expect(windows.count == 2)
        #expect(windows[0].lastMicroseconds - windows[0].firstMicroseconds <= 1_800_000_000)
    }

    @Test func attenuationPicksTheBucketWithTheDecryptedTxPowerFirstThenTheAdvertThenTheDefault() {
        let far = [sighting(at: 0, rssi: -85, tx: -8)]
        // Decrypted metadata says -10 dBm: 75 dB → bucket 2 (73–79).
        #expect(ExposureContacts.windows(far, txPower: -10, settings: settings)[0].secondsByBucket[2] > 0)
        // No metadata: the advert's -8 dBm → 77 dB, still bucket 2.
        #expect(ExposureContacts.windows(far, txPower: nil, settings: settings)[0].secondsByBucket[2] > 0)
        // Neither: the default (-20) → 65 dB, bucket 1.
        let bare = [sighting(at: 0, rssi: -85)]
        #expect(ExposureContacts.windows(bare, txPower: nil, settings: settings)[0].secondsByBucket[1] > 0)
    }

    @Test func shortOrDistantEncountersScoreNothing() {
        let brief = (0..<3).map { sighting(at: Double($0) * 60) } // ~2 minutes
        let w = ExposureContacts.windows(brief, txPower: -20, settings: settings)[0]
        #expect(ExposureContacts.score(w, transmissionRiskLevel: 4, settings: settings).weightedMinutes == 0)
        // 20 minutes, but beyond 79 dB: those minutes do not count towards the minimum either.
        let distant = (0..<21).map { sighting(at: Double($0) * 60, rssi: -105) }
        let d = ExposureContacts.windows(distant, txPower: -20, settings: settings)[0]
        #expect(d.secondsByBucket[3] > 0)
        #expect(ExposureContacts.score(d, transmissionRiskLevel: 4, settings: settings) == (0, false))
    }

    @Test func sightingsWithoutRSSICountAsPresenceButNotAsDistance() {
        let w = ExposureContacts.windows([sighting(at: 0, rssi: nil), sighting(at: 60, rssi: nil)], txPower: -20, settings: settings)[0]
        #expect(w.instances == 2 && w.secondsByBucket.allSatisfy { $0 == 0 })
    }

    @Test func theTransmissionRiskWeightScalesTheScore() {
        var s = settings
        s.transmissionRiskWeights = [0, 0, 0.5, 1, 1, 1, 1, 1, 1]
        let w = ExposureContacts.windows((0..<21).map { sighting(at: Double($0) * 60) }, txPower: -20, settings: s)[0]
        #expect(ExposureContacts.score(w, transmissionRiskLevel: 1, settings: s) == (0, false))
        let half = ExposureContacts.score(w, transmissionRiskLevel: 2, settings: s)
        #expect(abs(half.weightedMinutes - 1_202.0 / 60 * 0.8 * 0.5) < 1e-9 && !half.highRisk)
    }

    @Test func scanHitsWithIdentifiersBecomeTracksAndOthersAreIgnored() {
        var stream = EventStream()
        var gaen = ScanHit()
        gaen.address = 0x11
        gaen.count = 4
        gaen.rssiMin = -70; gaen.rssiMax = -60; gaen.rssiSum = -260
        gaen.advertisement.gaenRpi = Data(repeating: 7, count: 16)
        gaen.advertisement.gaenAem = Data([1, 2, 3, 4])
        stream.add(.scanHit(gaen), at: 100)
        stream.add(.scanHit(gaen), at: 102)
        var peer = ScanHit()
        peer.address = 0x22
        peer.count = 1
        peer.advertisement.vigilPresence = Data(repeating: 9, count: 16)
        stream.add(.scanHit(peer), at: 101)
        var tag = ScanHit()
        tag.address = 0x0A_0B_0C_0D_0E_0F
        tag.count = 2
        stream.add(.scanHit(tag), at: 101)
        var plain = ScanHit()
        plain.address = 0x33
        stream.add(.scanHit(plain), at: 101)
        var s = settings
        s.tags = [0x0A_0B_0C_0D_0E_0F]
        var contacts = ExposureContacts(settings: s)
        for e in stream.events { contacts.apply(e) }
        #expect(contacts.tracks.count == 3)
        let g = contacts.tracks[[UInt8](repeating: 7, count: 16)]
        // The two sightings 2 s apart are folded into one instance.
        #expect(g?.kind == .gaen && g?.instances.count == 1 && g?.instances.first?.reports == 8 && g?.metadata == [1, 2, 3, 4])
        #expect(g?.instances.first?.rssiMean == -65)
        #expect(contacts.identifiers(of: .vigilPeer) == [[UInt8](repeating: 9, count: 16)])
        #expect(contacts.identifiers(of: .tag) == [[0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F]])
    }

    @Test func theExposureBookKeepsEachWindowOnceAndForgetsItAtRetention() {
        var x = ExposureDetected()
        x.identifier = Data(repeating: 1, count: 16)
        x.firstSeenUs = micros(100)
        x.lastSeenUs = micros(1_300)
        x.weightedMinutesMilli = 16_000
        x.highRisk = true
        x.source = "export.bin"
        var stream = EventStream()
        stream.add(.exposureDetected(x), at: 2_000)
        stream.add(.exposureDetected(x), at: 2_001) // the same file imported again
        var book = ExposureBook().applying(all: stream.inputs)
        #expect(book.entries.count == 1 && book.highRisk.count == 1)
        var retention = ContactRetention()
        retention.cutoffUs = micros(1_500)
        book.apply(.event(Event(sequence: 9, timeMicroseconds: micros(3_000), body: .contactRetention(retention))))
        #expect(book.entries.isEmpty)
    }

    /// A feed item offering key file `id`, at feed position `position`.
    /// A made-up SHA-256 for file number `file`.
    static func sha(_ file: UInt64) -> Data {
        Data(repeating: UInt8(truncatingIfNeeded: file), count: 30) + [UInt8(truncatingIfNeeded: file >> 8), UInt8(truncatingIfNeeded: file)]
    }

    /// A feed item offering file number `file`, under the hub's `id`.
    static func offer(_ file: UInt64, position: UInt64, id: UInt64? = nil) -> EventBody {
        var o = ExposureKeysOffered()
        o.fileID = id ?? file
        o.sha256 = Self.sha(file)
        o.keys = 10
        o.name = "file \(file)"
        let (kind, payload) = EventCodec.encode(.exposureKeysOffered(o))
        var r = HubReceived()
        r.hub = "hub"
        r.position = position
        r.kind = kind
        r.payload = Data(payload)
        return .hubReceived(r)
    }

    static func matched(_ id: UInt64, refused: String = "") -> EventBody {
        var m = ExposureKeysMatched()
        m.fileID = id
        m.sha256 = Self.sha(id)
        m.name = "file \(id)"
        m.keys = 10
        m.exposures = refused.isEmpty ? 2 : 0
        m.refused = refused
        return .exposureKeysMatched(m)
    }

    @Test func keyFilesOfferedByTheHubWaitInOrderUntilSettledAndAreNeverOfferedTwice() {
        var stream = EventStream()
        stream.add(Self.offer(7, position: 3), at: 10)
        stream.add(Self.offer(5, position: 4), at: 11)
        stream.add(Self.offer(7, position: 5), at: 12) // the same file offered again: held once
        var state = Projections().applying(all: stream.inputs)
        #expect(state.exposures.keyFileOffers.count == 2 && state.exposures.nextKeyFileOffer?.fileID == 7)
        #expect(state.exposures.nextKeyFileOffer?.sha256Hex == String(repeating: "07", count: 30) + "0007")

        stream.add(Self.matched(7), at: 13)
        stream.add(Self.matched(7), at: 13.5) // an outcome appended twice counts once
        stream.add(Self.matched(5, refused: "bad signature"), at: 14)
        // The feed read again (after a rewind) offers file 7 under the same id: settled here.
        stream.add(Self.offer(7, position: 9), at: 15)
        state = Projections().applying(all: stream.inputs)
        #expect(state.exposures.keyFileOffers.isEmpty && state.exposures.nextKeyFileOffer == nil)
        #expect(state.exposures.keyFilesMatched == 1 && state.exposures.keyFilesRefused == 1)
        #expect(state.exposures.lastKeyFile?.fileID == 5 && state.exposures.lastKeyFile?.refused == "bad signature")

        // The same stream replayed gives the same book, and the checkpoint holds all of it.
        #expect(Projections().applying(all: stream.inputs).exposures == state.exposures)
        let restored = try? JSONDecoder().decode(Projections.self, from: JSONEncoder().encode(state))
        #expect(restored?.exposures == state.exposures)
        stream.add(Self.offer(7, position: 10), at: 16)
        #expect(restored.map { $0.applying(.event(stream.events[stream.events.count - 1])).exposures.keyFileOffers.isEmpty } == true,
                "a checkpoint remembers what was settled")

        // A hub restored from a backup offers file 5 under a new id (its old id may name another
        // file now): it is fetched again, by the new id.
        stream.add(Self.offer(5, position: 11, id: 40), at: 17)
        state = Projections().applying(all: stream.inputs)
        #expect(state.exposures.nextKeyFileOffer?.fileID == 40)
    }

    @Test func aWaitingFileOfferedAgainUnderANewIdIsFetchedByTheNewId() {
        var stream = EventStream()
        stream.add(Self.offer(9, position: 1, id: 3), at: 1)
        stream.add(Self.offer(9, position: 2, id: 12), at: 2)
        var state = Projections().applying(all: stream.inputs)
        #expect(state.exposures.keyFileOffers.count == 1 && state.exposures.nextKeyFileOffer?.fileID == 12)
        // The old id's refusal (the restored hub had another file there) leaves the new offer waiting.
        var refused = ExposureKeysMatched()
        refused.fileID = 3
        refused.sha256 = Self.sha(9)
        refused.refused = "export.bin is not the file the hub offered"
        stream.add(.exposureKeysMatched(refused), at: 3)
        state = Projections().applying(all: stream.inputs)
        #expect(state.exposures.nextKeyFileOffer?.fileID == 12)
    }

    @Test func aHubOfferingMoreFilesThanABoxHoldsLosesTheOldestNotTheNewest() {
        var stream = EventStream()
        let limit = ExposureBook.maximumKeyFileOffers
        for i in 1...(limit + 3) { stream.add(Self.offer(UInt64(i), position: UInt64(i)), at: Double(i)) }
        let state = Projections().applying(all: stream.inputs)
        #expect(state.exposures.keyFileOffers.count == limit && state.exposures.keyFileOffersDropped == 3)
        #expect(state.exposures.nextKeyFileOffer?.fileID == 4, "files 1-3 went")
        #expect(state.exposures.keyFileOffers.values.contains { $0.fileID == UInt64(limit + 3) })
    }

    @Test func aNameFromTheHubLosesItsControlCharacters() {
        var stream = EventStream()
        var o = ExposureKeysOffered()
        o.fileID = 1
        o.sha256 = Data(repeating: 1, count: 32)
        o.name = "daily\u{1B}[2J\u{85}batch" + String(repeating: "x", count: 300)
        let (kind, payload) = EventCodec.encode(.exposureKeysOffered(o))
        var r = HubReceived()
        r.position = 1
        r.kind = kind
        r.payload = Data(payload)
        stream.add(.hubReceived(r), at: 1)
        let name = Projections().applying(all: stream.inputs).exposures.nextKeyFileOffer?.name
        #expect(name?.hasPrefix("daily[2Jbatch") == true && name?.count == 120, "\(String(describing: name))")
    }

    @Test func aCancelReadAgainAfterARewindForAnAlertNoLongerHeldIsHistoryOnly() {
        func item(_ body: EventBody, position: UInt64, replayed: Bool) -> EventBody {
            let (kind, payload) = EventCodec.encode(body)
            var r = HubReceived()
            r.position = position
            r.originNode = 7
            r.kind = kind
            r.payload = Data(payload)
            r.replayed = replayed
            return .hubReceived(r)
        }
        var cancel = AlertCancelled()
        cancel.id = AlertID(origin: 7, counter: 1)
        var stream = EventStream()
        stream.add(item(.alertCancelled(cancel), position: 1, replayed: true), at: 1)
        var state = Projections().applying(all: stream.inputs)
        #expect(state.alerts.alerts.isEmpty, "a replayed cancel of an unknown alert changes nothing")
        // The same cancel as a new item (not replayed) is taken, as before.
        stream.add(item(.alertCancelled(cancel), position: 2, replayed: false), at: 2)
        state = Projections().applying(all: stream.inputs)
        #expect(state.alerts.alerts[cancel.id.text]?.cancelled == true)
    }
}
