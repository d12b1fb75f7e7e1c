import Crypto
import Testing
import VigilExposure

/// Checking an export's bytes: structure, then signature. (Reading the files is VigilNode's
/// `DiagnosisKeyFiles`, tested there.)
@Suite struct DiagnosisKeyImportTests {
    let signer = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "214", keyVersion: "v1")
    var verifier: ExportSignatureVerifier { ExportSignatureVerifier(keys: [signer.verificationKey]) }

    func signedExport() throws -> (bin: [UInt8], sig: [UInt8]) {
        let bin = try DiagnosisKeyFileWriter(region: "214", signatureInfos: [signer.info]).exportBin(keys: try DiagnosisKeyFileTests.sampleKeys())
        return (bin, try signer.signatureFile(for: bin))
    }

    @Test func aSignedExportImportsWithItsSigner() throws {
        let (bin, sig) = try signedExport()
        let imported = try DiagnosisKeyImport.parse(exportBin: bin, exportSig: sig, verifier: verifier)
        #expect(imported.signedBy == signer.info)
        #expect(imported.file.keys == (try DiagnosisKeyFileTests.sampleKeys()))
    }

    @Test func aMissingSignatureIsRefusedUnlessUnsignedIsAllowed() throws {
        let (bin, _) = try signedExport()
        #expect(throws: DiagnosisKeyImportError.signature(path: "d/export.sig", .unsigned)) {
            try DiagnosisKeyImport.parse(exportBin: bin, exportSig: nil, verifier: verifier, binPath: "d/export.bin", sigPath: "d/export.sig")
        }
        let imported = try DiagnosisKeyImport.parse(exportBin: bin, exportSig: nil, verifier: verifier, allowUnsigned: true)
        #expect(imported.signedBy == nil && imported.file.keys.count == 3)
    }

    @Test func allowingUnsignedStillRejectsABadSignatureFromAConfiguredKey() throws {
        var (bin, sig) = try signedExport()
        bin[bin.count - 1] ^= 1
        #expect(throws: DiagnosisKeyImportError.signature(path: "export.sig", .signatureMismatch(signer.info))) {
            try DiagnosisKeyImport.parse(exportBin: bin, exportSig: sig, verifier: verifier, allowUnsigned: true)
        }
    }

    @Test func aZipArchiveIsRecognisedAndRefusedWithAHint() {
        let zip: [UInt8] = [0x50, 0x4B, 0x03, 0x04, 0x14, 0x00] + [UInt8](repeating: 0, count: 30)
        #expect(throws: DiagnosisKeyImportError.zipArchive(path: "d/export.zip")) {
            try DiagnosisKeyImport.parse(exportBin: zip, exportSig: nil, verifier: verifier, binPath: "d/export.zip")
        }
        #expect(DiagnosisKeyImportError.zipArchive(path: "d/export.zip").description.contains("unzip"))
    }

    @Test func aBadHeaderNamesTheFile() {
        #expect(throws: DiagnosisKeyImportError.file(path: "d/export.bin", .notAnExportFile(header: Array("hello, not an ex".utf8)))) {
            try DiagnosisKeyImport.parse(exportBin: Array("hello, not an export".utf8), exportSig: nil, verifier: verifier, binPath: "d/export.bin")
        }
    }

    @Test func aFileOverTheCapIsRefusedBeforeReadingAndOneAtItIsNot() {
        let cap = DiagnosisKeyImport.maximumFileBytes
        #expect(DiagnosisKeyImport.sizeRefusal(path: "big.bin", size: cap) == nil)
        #expect(DiagnosisKeyImport.sizeRefusal(path: "big.bin", size: cap + 1)
                == .unreadable(path: "big.bin", detail: "\(cap + 1) bytes, more than an export file can be (64 MiB)"))
    }
}
