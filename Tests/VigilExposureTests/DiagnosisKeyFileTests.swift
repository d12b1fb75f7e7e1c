import Foundation
import SwiftProtobuf
import Testing
import VigilExposure
import VigilSystem

/// export.bin parsing: structure only (signatures are in ExportSignatureTests).
@Suite struct DiagnosisKeyFileTests {
    static func sampleKeys() throws -> [DiagnosisKey] {
        [
            DiagnosisKey(key: try TemporaryExposureKey(keyData: Bytes16(lo: 1, hi: 2), rollingStartIntervalNumber: 2_655_936),
                         transmissionRiskLevel: 4, reportType: .confirmedTest, daysSinceOnsetOfSymptoms: -3),
            DiagnosisKey(key: try TemporaryExposureKey(keyData: Bytes16(lo: 3, hi: 4), rollingStartIntervalNumber: 2_656_080, rollingPeriod: 60)),
            DiagnosisKey(key: try TemporaryExposureKey(keyData: Bytes16(lo: 5, hi: 6), rollingStartIntervalNumber: 2_656_224),
                         transmissionRiskLevel: 8, reportType: .selfReport, daysSinceOnsetOfSymptoms: 0),
        ]
    }

    static func body(_ message: Gaen_TemporaryExposureKeyExport) throws -> [UInt8] {
        DiagnosisKeyFile.header + (try message.serializedBytes() as [UInt8])
    }

    @Test func aWrittenFileParsesBackWithEveryField() throws {
        let keys = try Self.sampleKeys()
        let revoked = DiagnosisKey(key: keys[0].key, reportType: .revoked)
        let writer = DiagnosisKeyFileWriter(startTimestamp: 1_593_561_600, endTimestamp: 1_593_648_000, region: "214",
                                            signatureInfos: [ExportSignatureInfo(keyID: "214", keyVersion: "v2")])
        let file = try DiagnosisKeyFile(exportBin: try writer.exportBin(keys: keys, revisedKeys: [revoked]))
        #expect(file.keys == keys)
        #expect(file.revisedKeys == [revoked] && file.revisedKeys[0].isRevoked)
        #expect(file.skipped.isEmpty)
        #expect(file.startTimestamp == 1_593_561_600 && file.endTimestamp == 1_593_648_000)
        #expect(file.region == "214" && file.batchNumber == 1 && file.batchSize == 1)
        #expect(file.signatureInfos == [ExportSignatureInfo(keyID: "214", keyVersion: "v2", algorithm: ExportSignatureInfo.ecdsaWithSHA256)])
    }

    @Test func theKnownGoodFixtureParsesAndTheWriterReproducesItByteForByte() throws {
        let bin = try #require(Hex.decode(KnownGoodExport.exportBinHex))
        let file = try DiagnosisKeyFile(exportBin: bin)
        #expect(file.region == KnownGoodExport.region)
        #expect(file.startTimestamp == KnownGoodExport.startTimestamp && file.endTimestamp == KnownGoodExport.endTimestamp)
        #expect(file.signatureInfos == [ExportSignatureInfo(keyID: "310", keyVersion: "v1")])
        #expect(file.keys.count == 2)
        let first = try #require(file.keys.first)
        #expect(first.key.keyData.hex == GAENTestVectors.tek)
        #expect(first.key.rollingStartIntervalNumber == 2_642_976 && first.key.rollingPeriod == 144)
        #expect(first.transmissionRiskLevel == 3 && first.reportType == .confirmedTest && first.daysSinceOnsetOfSymptoms == -2)
        let second = file.keys[1]
        #expect(second.key.keyData.hex == "000102030405060708090a0b0c0d0e0f")
        #expect(second.key.rollingPeriod == 72 && second.reportType == .confirmedClinicalDiagnosis && second.daysSinceOnsetOfSymptoms == nil)
        // protoc and our writer agree on the encoding.
        let writer = DiagnosisKeyFileWriter(startTimestamp: file.startTimestamp, endTimestamp: file.endTimestamp,
                                            region: file.region, signatureInfos: file.signatureInfos)
        #expect(try writer.exportBin(keys: file.keys) == bin)
    }

    @Test func anAbsentRollingPeriodMeans144AndAbsentFieldsStayNil() throws {
        var raw = Gaen_TemporaryExposureKey()
        raw.keyData = Data(repeating: 7, count: 16)
        raw.rollingStartIntervalNumber = 2_655_936
        var message = Gaen_TemporaryExposureKeyExport()
        message.keys = [raw]
        let file = try DiagnosisKeyFile(exportBin: try Self.body(message))
        let key = try #require(file.keys.first)
        #expect(key.key.rollingPeriod == 144)
        #expect(key.transmissionRiskLevel == nil && key.reportType == .unknown && key.daysSinceOnsetOfSymptoms == nil)
        #expect(file.region == nil && file.startTimestamp == nil && file.batchNumber == nil)
    }

    @Test func malformedKeysAreCountedAndSkippedNotFatal() throws {
        func key(_ data: Data, start: Int32?, period: Int32?) -> Gaen_TemporaryExposureKey {
            var k = Gaen_TemporaryExposureKey()
            k.keyData = data
            if let start { k.rollingStartIntervalNumber = start }
            if let period { k.rollingPeriod = period }
            return k
        }
        let good = Data(repeating: 1, count: 16)
        var message = Gaen_TemporaryExposureKeyExport()
        message.keys = [
            key(Data(repeating: 1, count: 15), start: 100, period: nil),
            key(good, start: 100, period: nil),
            key(Data(), start: 100, period: nil),
            key(Data(repeating: 1, count: 17), start: 100, period: nil),
            key(good, start: nil, period: nil),
            key(good, start: -5, period: nil),
            key(good, start: 100, period: 0),
            key(good, start: 100, period: 145),
        ]
        message.revisedKeys = [key(Data(repeating: 2, count: 3), start: 1, period: 1)]
        let file = try DiagnosisKeyFile(exportBin: try Self.body(message))
        #expect(file.keys.count == 1)
        #expect(file.skipped.map(\.reason) == [
            .wrongKeyLength(15), .wrongKeyLength(0), .wrongKeyLength(17), .missingRollingStartIntervalNumber,
            .negativeRollingStartIntervalNumber(-5), .invalidRollingPeriod(0), .invalidRollingPeriod(145), .wrongKeyLength(3),
        ])
        #expect(file.skipped.map(\.index) == [0, 2, 3, 4, 5, 6, 7, 0])
        #expect(file.skipped.last?.revised == true)
        #expect(file.skipped[0].description == "key #0: key_data is 15 bytes, not 16")
    }

    @Test func aFileOfAnotherKindIsNotAnExportFile() throws {
        let fake = Array("PK\u{3}\u{4}this is a zip archive".utf8)
        #expect(throws: DiagnosisKeyFileError.notAnExportFile(header: Array(fake.prefix(16)))) { try DiagnosisKeyFile(exportBin: fake) }
        // A different version or padding is not accepted either.
        for header in ["EK Export v2    ", "EK Export v1\0\0\0\0", "ek export v1    "] {
            let bytes = Array(header.utf8)
            #expect(throws: DiagnosisKeyFileError.notAnExportFile(header: bytes)) { try DiagnosisKeyFile(exportBin: bytes) }
        }
        let error = DiagnosisKeyFileError.notAnExportFile(header: Array("EK Export v2    ".utf8))
        #expect(error.description.contains("\"EK Export v2    \""))
    }

    @Test func aFileShorterThanTheHeaderSaysSo() {
        for count in [0, 1, 12, 15] {
            #expect(throws: DiagnosisKeyFileError.truncatedHeader(byteCount: count)) {
                try DiagnosisKeyFile(exportBin: Array(DiagnosisKeyFile.header.prefix(count)))
            }
        }
    }

    @Test func theHeaderAloneIsAnEmptyExport() throws {
        let file = try DiagnosisKeyFile(exportBin: DiagnosisKeyFile.header)
        #expect(file.keys.isEmpty && file.skipped.isEmpty)
    }

    @Test func truncationInsideAFieldIsReportedAsTruncated() throws {
        let bin = try DiagnosisKeyFileWriter(region: "214").exportBin(keys: try Self.sampleKeys())
        // Find cuts that land inside a field: every one must say "truncated", never trap or
        // claim a different cause; cuts at field boundaries parse (fewer keys; the signature
        // catches those — see ExportSignatureTests).
        var truncated = 0
        var parsed = 0
        for cut in (DiagnosisKeyFile.header.count + 1)..<bin.count {
            do {
                let file = try DiagnosisKeyFile(exportBin: Array(bin.prefix(cut)))
                #expect(file.keys.count < 3)
                parsed += 1
            } catch let error {
                #expect(error == .truncated(byteCount: cut), "cut at \(cut)")
                truncated += 1
            }
        }
        #expect(truncated > 0 && parsed > 0)
        // Specific points: mid-header-of-a-key, mid-key-bytes, one byte short of the end.
        for cut in [DiagnosisKeyFile.header.count + 1, bin.count - 1] {
            #expect(throws: DiagnosisKeyFileError.truncated(byteCount: cut)) { try DiagnosisKeyFile(exportBin: Array(bin.prefix(cut))) }
        }
    }

    @Test func garbageAfterTheHeaderIsBadProtobuf() {
        // Field 1 with wire type 7 (does not exist).
        #expect(throws: DiagnosisKeyFileError.self) { try DiagnosisKeyFile(exportBin: DiagnosisKeyFile.header + [0x0F, 0x01]) }
        do {
            _ = try DiagnosisKeyFile(exportBin: DiagnosisKeyFile.header + [0x0F, 0x01])
        } catch let error {
            guard case .badProtobuf = error else { Issue.record("expected badProtobuf, got \(error)"); return }
            #expect(error.description.contains("not a TemporaryExposureKeyExport"))
        }
    }

    @Test func randomBytesAfterTheHeaderNeverTrap() {
        var rng = SplitMix64(seed: 77)
        for _ in 0..<3_000 {
            let count = Int(rng.next() % 64)
            let body = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            _ = try? DiagnosisKeyFile(exportBin: DiagnosisKeyFile.header + body)
        }
    }
}
