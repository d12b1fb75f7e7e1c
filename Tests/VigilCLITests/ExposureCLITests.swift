import Crypto
import Foundation
import Testing
import VigilEvents
import VigilExposure
import VigilLog
import VigilSystem

@Suite("vigil exposure")
struct ExposureCLITests {
    static let dayStart: UInt32 = 2_655_936 // 2020-07-01T00:00:00Z

    /// A log in which a phone with `tek` was heard every minute for 25 minutes from 10:00 UTC.
    func writeLog(_ dir: String, tek: TemporaryExposureKey) async throws {
        let log = try EventLog.open(LogConfiguration(directory: dir))
        let schedule = ExposureKeySchedule(tek)
        for m in 0..<25 {
            let seconds = UInt64(Self.dayStart + 60) * 600 + UInt64(m) * 60
            let rpi = try schedule.identifier(forInterval: UInt32(seconds / 600))
            let aem = try schedule.encrypt(AssociatedMetadata(txPower: -12), for: rpi)
            var hit = ScanHit()
            hit.address = 0x40_00_00_00_00_00 | (seconds / 600)
            hit.count = 3
            hit.rssiMin = -55; hit.rssiMax = -51; hit.rssiSum = -159
            hit.firstOffsetUs = 2_000_000
            hit.advertisement.gaenRpi = Data(rpi.bytes)
            hit.advertisement.gaenAem = Data(aem.bytes)
            let (kind, payload) = EventCodec.encode(.scanHit(hit))
            _ = try await log.appendDurably(LogRecord(kind: kind, timeMicroseconds: seconds * 1_000_000, payload: payload), priority: .critical)
        }
        log.close()
    }

    @Test func importingASignedKeyFileFindsTheExposureOnceAndListsIt() async throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let sick = try TemporaryExposureKey(keyData: (0..<16).map { UInt8($0 * 3) }, rollingStartIntervalNumber: Self.dayStart)
        try await writeLog(dir.path + "/data", tek: sick)

        // The health authority's export: the sick key among others, signed.
        let signer = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "310", keyVersion: "v1")
        let others = try (1...50).map { i in
            DiagnosisKey(key: try TemporaryExposureKey(keyData: (0..<16).map { UInt8(truncatingIfNeeded: $0 + i * 7) }, rollingStartIntervalNumber: Self.dayStart))
        }
        let writer = DiagnosisKeyFileWriter(signatureInfos: [signer.info])
        let bin = try writer.exportBin(keys: others + [DiagnosisKey(key: sick, transmissionRiskLevel: 5, reportType: .confirmedTest)])
        let export = dir.path + "/export"
        try FileManager.default.createDirectory(atPath: export, withIntermediateDirectories: true)
        try Data(bin).write(to: URL(fileURLWithPath: export + "/export.bin"))
        try Data(try signer.signatureFile(for: bin)).write(to: URL(fileURLWithPath: export + "/export.sig"))
        let pem = dir.path + "/authority.pem"
        try signer.privateKey.publicKey.pemRepresentation.write(toFile: pem, atomically: true, encoding: .utf8)

        // Signed, but not by a key we trust: refused, exit 65, the reason on stderr.
        let stranger = dir.path + "/stranger.pem"
        try P256.Signing.PrivateKey().publicKey.pemRepresentation.write(toFile: stranger, atomically: true, encoding: .utf8)
        let refused = try CLI.run(["exposure", "import", export, "--data", dir.path + "/data", "--key", stranger])
        #expect(refused.status == 65 && refused.stderr.contains("refused"), "\(refused.stderr)")

        let first = try CLI.run(["exposure", "import", export, "--data", dir.path + "/data", "--key", pem])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("51 keys"), "\(first.stdout)")
        #expect(first.stdout.contains("1 new exposure windows, 1 high risk"), "\(first.stdout)")
        let again = try CLI.run(["exposure", "import", export, "--data", dir.path + "/data", "--key", pem])
        #expect(again.stdout.contains("0 new exposure windows"), "importing again adds nothing: \(again.stdout)")

        let list = try CLI.run(["exposure", "list", "--data", dir.path + "/data"])
        #expect(list.status == 0)
        #expect(list.lines.count == 1 && list.stdout.contains("HIGH RISK"), "\(list.stdout)")

        // The authority revokes the key: the exposure it produced is withdrawn.
        let revocation = dir.path + "/revocation"
        try FileManager.default.createDirectory(atPath: revocation, withIntermediateDirectories: true)
        let revokedBin = try writer.exportBin(keys: [], revisedKeys: [DiagnosisKey(key: sick, reportType: .revoked)])
        try Data(revokedBin).write(to: URL(fileURLWithPath: revocation + "/export.bin"))
        try Data(try signer.signatureFile(for: revokedBin)).write(to: URL(fileURLWithPath: revocation + "/export.sig"))
        let revoked = try CLI.run(["exposure", "import", revocation, "--data", dir.path + "/data", "--key", pem])
        #expect(revoked.status == 0 && revoked.stdout.contains("1 revoked keys withdrew"), "\(revoked.stdout) \(revoked.stderr)")
        #expect(try CLI.run(["exposure", "list", "--data", dir.path + "/data"]).stdout == "no exposures found\n")

        // A tampered file is refused with the signature named.
        var tampered = bin
        tampered[tampered.count - 1] ^= 1
        try Data(tampered).write(to: URL(fileURLWithPath: export + "/export.bin"))
        let bad = try CLI.run(["exposure", "import", export, "--data", dir.path + "/data", "--key", pem])
        #expect(bad.status == 65 && bad.stderr.contains("signature"), "\(bad.stdout) \(bad.stderr)")
    }

    @Test func rpisPrintsTheIdentifiersOfAKey() throws {
        // The official test vectors (TestVectors.java): TEK 75c734c6..., rolling start 2642976.
        let result = try CLI.run(["exposure", "rpis", "--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "2642976", "--count", "3"])
        #expect(result.status == 0)
        #expect(result.lines == ["8be6cd371c5c891604bfbe49df845096", "3c9a1de5dd6b02afa7fded7b570b3e56", "243ffe9a3b08bded3094bac8630bb8ad"])
        let bad = try CLI.run(["exposure", "rpis", "--tek", "zz", "--interval", "1"])
        #expect(bad.status == 64)
    }
}
