import Crypto
import Testing
import VigilExposure
import VigilSystem

@Suite struct KeyScheduleTests {
    let tek: TemporaryExposureKey

    init() throws {
        let keyData = try #require(Bytes16(hex: GAENTestVectors.tek))
        tek = try TemporaryExposureKey(keyData: keyData, rollingStartIntervalNumber: GAENTestVectors.keyRollingStart)
    }

    @Test func theVectorKeyStartsAtTheIntervalOfItsGenerationTime() {
        #expect(Exposure.interval(unixSeconds: GAENTestVectors.keyGenerationUnixSeconds) == GAENTestVectors.keyRollingStart)
        #expect(GAENTestVectors.keyRollingStart % Exposure.intervalsPerDay == 0)
    }

    @Test func rpikAndAemkMatchTheOfficialVectors() {
        let schedule = ExposureKeySchedule(tek)
        #expect(schedule.identifierKey.withUnsafeBytes { Hex.encode($0) } == GAENTestVectors.rpik)
        #expect(schedule.metadataKey.withUnsafeBytes { Hex.encode($0) } == GAENTestVectors.aemk)
    }

    @Test func all144IdentifiersMatchTheOfficialVectorsOneCallEach() throws {
        let schedule = ExposureKeySchedule(tek)
        #expect(GAENTestVectors.advertised.count == 144)
        for (i, expected) in GAENTestVectors.advertised.enumerated() {
            let rpi = try schedule.identifier(forInterval: GAENTestVectors.keyRollingStart + UInt32(i))
            #expect(rpi.hex == expected.rpi, "interval +\(i)")
        }
    }

    @Test(arguments: RollingProximityIdentifierDeriver.Engine.available)
    func everyEngineDerivesThe144OfficialIdentifiersInOneBatch(engine: RollingProximityIdentifierDeriver.Engine) throws {
        let deriver = try RollingProximityIdentifierDeriver(engine: engine)
        let identifiers = try deriver.identifiers(of: tek)
        #expect(identifiers.map(\.hex) == GAENTestVectors.advertised.map(\.rpi))
    }

    @Test(arguments: RollingProximityIdentifierDeriver.Engine.available)
    func enginesAgreeWithTheScheduleForRandomKeysPeriodsAndReusedBuffers(engine: RollingProximityIdentifierDeriver.Engine) throws {
        let deriver = try RollingProximityIdentifierDeriver(engine: engine)
        var rng = SplitMix64(seed: 5)
        var buffer: [RollingProximityIdentifier] = []
        for period: UInt32 in [144, 1, 72, 143, 144, 10] {
            let key = try TemporaryExposureKey(keyData: Bytes16(lo: rng.next(), hi: rng.next()),
                                               rollingStartIntervalNumber: UInt32.random(in: 2_600_000...2_900_000, using: &rng),
                                               rollingPeriod: period)
            try deriver.derive(key, into: &buffer)
            let schedule = ExposureKeySchedule(key)
            let expected = try key.intervals.map { (j) throws(ExposureCryptoError) in try schedule.identifier(forInterval: j) }
            #expect(buffer == expected, "period \(period)")
        }
    }

    @Test func metadataEncryptsToTheOfficialAEMsForEveryInterval() throws {
        let schedule = ExposureKeySchedule(tek)
        let metadata = try Fixture.metadata(GAENTestVectors.metadata)
        #expect(metadata.majorVersion == 1 && metadata.minorVersion == 0 && metadata.txPower == 8)
        #expect(metadata == AssociatedMetadata(txPower: 8))
        for (i, expected) in GAENTestVectors.advertised.enumerated() {
            let advertisement = try schedule.advertisement(forInterval: GAENTestVectors.keyRollingStart + UInt32(i), metadata: metadata)
            #expect(advertisement.identifier.hex == expected.rpi)
            #expect(advertisement.encryptedMetadata.hex == expected.aem, "interval +\(i)")
        }
    }

    @Test func officialAEMsDecryptToTheVectorMetadata() throws {
        let schedule = ExposureKeySchedule(tek)
        for expected in GAENTestVectors.advertised {
            let rpi = try Fixture.rpi(expected.rpi)
            let aem = try Fixture.aem(expected.aem)
            #expect(Hex.encode(try schedule.decrypt(aem, for: rpi).bytes) == GAENTestVectors.metadata)
        }
    }

    @Test func metadataRoundTripsThroughEncryptionForAnyKeyAndPower() throws {
        var rng = SplitMix64(seed: 9)
        for power in [Int8.min, -30, -1, 0, 7, 12, Int8.max] {
            let key = TemporaryExposureKey.generate(forDayContaining: 2_700_000, using: &rng)
            let schedule = ExposureKeySchedule(key)
            let rpi = try schedule.identifier(forInterval: key.rollingStartIntervalNumber + 17)
            let metadata = AssociatedMetadata(txPower: power)
            let aem = try schedule.encrypt(metadata, for: rpi)
            #expect(try schedule.decrypt(aem, for: rpi) == metadata)
            #expect(try schedule.decrypt(aem, for: rpi).txPower == power)
        }
    }

    @Test func reservedMetadataBitsSurviveARoundTrip() throws {
        let schedule = ExposureKeySchedule(tek)
        let rpi = try schedule.identifier(forInterval: GAENTestVectors.keyRollingStart)
        let metadata = try #require(AssociatedMetadata(bytes: [0x5F, 0xF6, 0xAB, 0xCD]))
        #expect(metadata.majorVersion == 1 && metadata.minorVersion == 1 && metadata.txPower == -10)
        #expect(try schedule.decrypt(try schedule.encrypt(metadata, for: rpi), for: rpi) == metadata)
    }

    @Test func aKeyRejectsWrongLengthsAndRollingPeriods() {
        #expect(throws: ExposureCryptoError.wrongLength(what: "Temporary Exposure Key", expected: 16, actual: 15)) {
            try TemporaryExposureKey(keyData: [UInt8](repeating: 1, count: 15), rollingStartIntervalNumber: 0)
        }
        for bad: UInt32 in [0, 145, 1000] {
            #expect(throws: ExposureCryptoError.invalidRollingPeriod(bad)) {
                try TemporaryExposureKey(keyData: Bytes16(lo: 1, hi: 2), rollingStartIntervalNumber: 0, rollingPeriod: bad)
            }
        }
        #expect(throws: ExposureCryptoError.invalidRollingPeriod(144)) {
            try TemporaryExposureKey(keyData: Bytes16(lo: 1, hi: 2), rollingStartIntervalNumber: UInt32.max - 100)
        }
    }

    @Test func generatedKeysStartAtTheirDayAndTakeTheirBytesFromTheCallersGenerator() {
        var rng = SplitMix64(seed: 9)
        let a = TemporaryExposureKey.generate(forDayContaining: GAENTestVectors.keyRollingStart + 77, using: &rng)
        let b = TemporaryExposureKey.generate(forDayContaining: GAENTestVectors.keyRollingStart + 77, using: &rng)
        var replay = SplitMix64(seed: 9)
        #expect(a.keyData == Bytes16(lo: replay.next(), hi: replay.next()), "the key is the generator's next 16 bytes")
        #expect(a.rollingStartIntervalNumber == GAENTestVectors.keyRollingStart)
        #expect(a.rollingPeriod == 144)
        #expect(a.covers(interval: GAENTestVectors.keyRollingStart + 143) && !a.covers(interval: GAENTestVectors.keyRollingStart + 144))
        #expect(a.keyData != b.keyData)
        let last = TemporaryExposureKey.generate(forDayContaining: UInt32.max, using: &rng)
        #expect(last.intervals.upperBound == UInt32.max)
    }

    @Test func bytes16KeepsByteOrderForHexAndSorting() throws {
        let value = try #require(Bytes16(hex: "000102030405060708090a0b0c0d0e0f"))
        #expect(value.bytes == Array(0..<16))
        #expect(value.hex == "000102030405060708090a0b0c0d0e0f")
        #expect(Bytes16(hex: "00") == nil && Bytes16(hex: "zz0102030405060708090a0b0c0d0e0f") == nil)
        let small = try #require(Bytes16(hex: "00ff0000000000000000000000000000"))
        let large = try #require(Bytes16(hex: "01000000000000000000000000000000"))
        #expect(small < large)
        #expect(MemoryLayout<RollingProximityIdentifier>.stride == 16)
    }

    @Test func theOpenSSLEngineIsRefusedClearlyWhenNotLinked() throws {
        guard !RollingProximityIdentifierDeriver.Engine.available.contains(.openSSLBatch) else { return }
        #expect(throws: ExposureCryptoError.self) { try RollingProximityIdentifierDeriver(engine: .openSSLBatch) }
        #expect(RollingProximityIdentifierDeriver.Engine.fastest == .perIdentifier)
    }
}
