import Testing
import VigilExposure
import VigilSystem

@Suite struct AdvertisementTests {
    func vectorAdvertisement(_ i: Int) throws -> ExposureAdvertisement {
        let entry = GAENTestVectors.advertised[i]
        return ExposureAdvertisement(
            identifier: try Fixture.rpi(entry.rpi),
            encryptedMetadata: try Fixture.aem(entry.aem)
        )
    }

    @Test func theBuiltAdvertisementIsFlagsUUIDListAndServiceDataIn31Bytes() throws {
        let ad = try vectorAdvertisement(0).advertisingData()
        let expected = "02011a" + "03036ffd" + "17166ffd" + GAENTestVectors.advertised[0].rpi + GAENTestVectors.advertised[0].aem
        #expect(Hex.encode(ad) == expected)
        #expect(ad.count == 31)
        #expect(try vectorAdvertisement(0).advertisingData(includeFlags: false).count == 28)
    }

    @Test func serviceDataIsTheRPIThenTheAEM() throws {
        let advertisement = try vectorAdvertisement(5)
        #expect(Hex.encode(advertisement.serviceData) == GAENTestVectors.advertised[5].rpi + GAENTestVectors.advertised[5].aem)
        #expect(ExposureAdvertisement(serviceData: advertisement.serviceData) == advertisement)
        #expect(ExposureAdvertisement(serviceData: advertisement.serviceData.dropLast()) == nil)
    }

    @Test func parsingRecognisesTheBuiltAdvertisementWithAndWithoutFlags() throws {
        let advertisement = try vectorAdvertisement(143)
        #expect(ExposureAdvertisement(advertisingData: advertisement.advertisingData()) == advertisement)
        #expect(ExposureAdvertisement(advertisingData: advertisement.advertisingData(includeFlags: false)) == advertisement)
    }

    @Test func parsingFindsTheServiceDataAmongOtherStructuresAndZeroPadding() throws {
        let advertisement = try vectorAdvertisement(1)
        let name: [UInt8] = [5, 0x09] + Array("node".utf8)
        let otherServiceData: [UInt8] = [5, 0x16, 0xAA, 0xFE, 0x10, 0x20] // Eddystone, not EN
        let en: [UInt8] = [23, 0x16, 0x6F, 0xFD] + advertisement.serviceData
        #expect(ExposureAdvertisement(advertisingData: name + otherServiceData + en + [0, 0, 0]) == advertisement)
    }

    @Test func parsingIgnoresOtherUUIDsWrongLengthsAndMalformedStructures() throws {
        let advertisement = try vectorAdvertisement(2)
        let good = advertisement.advertisingData()
        #expect(ExposureAdvertisement(advertisingData: [UInt8]()) == nil)
        #expect(ExposureAdvertisement(advertisingData: [0x02, 0x01, 0x1A]) == nil)
        // Another 16-bit UUID with a 20-byte body.
        #expect(ExposureAdvertisement(advertisingData: [23, 0x16, 0x70, 0xFD] + advertisement.serviceData) == nil)
        // The EN UUID with 19 or 21 bytes.
        #expect(ExposureAdvertisement(advertisingData: [22, 0x16, 0x6F, 0xFD] + advertisement.serviceData.dropLast()) == nil)
        #expect(ExposureAdvertisement(advertisingData: [24, 0x16, 0x6F, 0xFD] + advertisement.serviceData + [0]) == nil)
        // A length running past the end, and a service-data structure too short for a UUID.
        #expect(ExposureAdvertisement(advertisingData: [0x1F, 0x16, 0x6F, 0xFD]) == nil)
        #expect(ExposureAdvertisement(advertisingData: [0x02, 0x16, 0x6F]) == nil)
        // Every truncation of a good advertisement.
        for cut in 0..<good.count {
            #expect(ExposureAdvertisement(advertisingData: good.prefix(cut)) == nil, "cut at \(cut)")
        }
    }

    @Test func parsingArbitraryBytesNeverTraps() {
        var rng = SplitMix64(seed: 42)
        var recognised = 0
        for _ in 0..<20_000 {
            let count = Int(rng.next() % 40)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            // Bias some inputs towards the EN shape so the interesting branches run.
            if count > 4, rng.next() % 2 == 0 { bytes[0] = UInt8(count - 1); bytes[1] = 0x16; bytes[2] = 0x6F; bytes[3] = 0xFD }
            if ExposureAdvertisement(advertisingData: bytes) != nil { recognised += 1 }
        }
        #expect(recognised > 0) // 24-byte inputs of the biased shape parse
    }
}
