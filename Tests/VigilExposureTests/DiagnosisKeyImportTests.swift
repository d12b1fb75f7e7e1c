import Crypto
import Foundation
import Testing
import VigilExposure

/// Importing an unzipped export: a directory with export.bin + export.sig, or the .bin's path.
@Suite struct DiagnosisKeyImportTests {
    let signer = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "214", keyVersion: "v1")
    var verifier: ExportSignatureVerifier { ExportSignatureVerifier(keys: [signer.verificationKey]) }

    func directory(bin: [UInt8]?, sig: [UInt8]?) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vigil-gaen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        if let bin { try Data(bin).write(to: dir.appendingPathComponent("export.bin")) }
        if let sig { try Data(sig).write(to: dir.appendingPathComponent("export.sig")) }
        return dir.path
    }

    func signedExport() throws -> (bin: [UInt8], sig: [UInt8]) {
        let bin = try DiagnosisKeyFileWriter(region: "214", signatureInfos: [signer.info]).exportBin(keys: try DiagnosisKeyFileTests.sampleKeys())
        return (bin, try signer.signatureFile(for: bin))
    }

    @Test func aSignedDirectoryImportsWithItsSigner() throws {
        let (bin, sig) = try signedExport()
        let dir = try directory(bin: bin, sig: sig)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let imported = try DiagnosisKeyImport.load(path: dir, verifier: verifier)
        #expect(imported.signedBy == signer.info)
        #expect(imported.file.keys == (try DiagnosisKeyFileTests.sampleKeys()))
        // The export.bin path works too, finding export.sig beside it.
        #expect(try DiagnosisKeyImport.load(path: dir + "/export.bin", verifier: verifier).signedBy == signer.info)
    }

    @Test func aMissingSignatureIsRefusedUnlessUnsignedIsAllowed() throws {
        let (bin, _) = try signedExport()
        let dir = try directory(bin: bin, sig: nil)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(throws: DiagnosisKeyImportError.signature(path: dir + "/export.sig", .unsigned)) {
            try DiagnosisKeyImport.load(path: dir, verifier: verifier)
        }
        let imported = try DiagnosisKeyImport.load(path: dir, verifier: verifier, allowUnsigned: true)
        #expect(imported.signedBy == nil && imported.file.keys.count == 3)
    }

    @Test func allowingUnsignedStillRejectsABadSignatureFromAConfiguredKey() throws {
        var (bin, sig) = try signedExport()
        bin[bin.count - 1] ^= 1
        #expect(throws: DiagnosisKeyImportError.signature(path: "export.sig", .signatureMismatch(signer.info))) {
            try DiagnosisKeyImport.parse(exportBin: bin, exportSig: sig, verifier: verifier, allowUnsigned: true)
        }
    }

    @Test func aZipArchiveIsRecognisedAndRefusedWithAHint() throws {
        let dir = try directory(bin: nil, sig: nil)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let zip = dir + "/export.zip"
        try Data([0x50, 0x4B, 0x03, 0x04, 0x14, 0x00] + [UInt8](repeating: 0, count: 30)).write(to: URL(fileURLWithPath: zip))
        #expect(throws: DiagnosisKeyImportError.zipArchive(path: zip)) { try DiagnosisKeyImport.load(path: zip, verifier: verifier) }
        #expect(DiagnosisKeyImportError.zipArchive(path: zip).description.contains("unzip"))
    }

    @Test func missingFilesAndBadHeadersNameThePath() throws {
        let dir = try directory(bin: Array("hello, not an export".utf8), sig: nil)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(throws: DiagnosisKeyImportError.unreadable(path: dir + "/nope", detail: "no such file or directory")) {
            try DiagnosisKeyImport.load(path: dir + "/nope", verifier: verifier)
        }
        #expect(throws: DiagnosisKeyImportError.file(path: dir + "/export.bin", .notAnExportFile(header: Array("hello, not an ex".utf8)))) {
            try DiagnosisKeyImport.load(path: dir, verifier: verifier)
        }
        let empty = try directory(bin: nil, sig: nil)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        #expect(throws: DiagnosisKeyImportError.self) { try DiagnosisKeyImport.load(path: empty, verifier: verifier) }
    }
}
