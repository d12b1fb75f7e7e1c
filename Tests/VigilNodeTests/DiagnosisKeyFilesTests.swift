import Crypto
import Foundation
import Testing
import VigilExposure
import VigilNode

/// Reading key exports from disk for the pure importer: a directory with export.bin and
/// export.sig, a .bin's path with its signature beside it, and files that cannot be read.
@Suite struct DiagnosisKeyFilesTests {
    let signer = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "214", keyVersion: "v1")
    var verifier: ExportSignatureVerifier { ExportSignatureVerifier(keys: [signer.verificationKey]) }

    static func sampleKeys() throws -> [DiagnosisKey] {
        try (0..<3).map { (i: UInt32) throws -> DiagnosisKey in
            DiagnosisKey(key: try TemporaryExposureKey(keyData: Bytes16(lo: UInt64(i) + 1, hi: 7), rollingStartIntervalNumber: 2_650_032 + i * 144))
        }
    }

    func signedExport() throws -> (bin: [UInt8], sig: [UInt8]) {
        let bin = try DiagnosisKeyFileWriter(region: "214", signatureInfos: [signer.info]).exportBin(keys: try Self.sampleKeys())
        return (bin, try signer.signatureFile(for: bin))
    }

    func write(_ bytes: [UInt8], _ path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    @Test func aSignedDirectoryImportsWithItsSignerAndSoDoesItsBinPath() throws {
        let dir = TemporaryDirectory()
        let (bin, sig) = try signedExport()
        try write(bin, dir.path("export.bin"))
        try write(sig, dir.path("export.sig"))
        let imported = try DiagnosisKeyFiles.load(path: dir.path, verifier: verifier)
        #expect(imported.signedBy == signer.info)
        #expect(imported.file.keys == (try Self.sampleKeys()))
        #expect(try DiagnosisKeyFiles.load(path: dir.path("export.bin"), verifier: verifier).signedBy == signer.info)
    }

    @Test func fooBinPairsWithFooSigBesideItOtherwiseWithExportSig() throws {
        let dir = TemporaryDirectory()
        let (bin, sig) = try signedExport()
        try write(bin, dir.path("a.bin"))
        try write(Array("not a signature".utf8), dir.path("a.sig"))
        try write(sig, dir.path("export.sig"))
        // a.sig is the one checked (and it is garbage), not the valid export.sig.
        #expect { try DiagnosisKeyFiles.load(path: dir.path("a.bin"), verifier: verifier) } throws: { error in
            guard case .signature(let path, _)? = error as? DiagnosisKeyImportError else { return false }
            return path == dir.path("a.sig")
        }
        try write(bin, dir.path("b.bin"))
        #expect(try DiagnosisKeyFiles.load(path: dir.path("b.bin"), verifier: verifier).signedBy == signer.info)
    }

    @Test func aMissingSignatureFileIsRefusedUnlessUnsignedIsAllowed() throws {
        let dir = TemporaryDirectory()
        try write(try signedExport().bin, dir.path("export.bin"))
        #expect(throws: DiagnosisKeyImportError.signature(path: dir.path("export.sig"), .unsigned)) {
            try DiagnosisKeyFiles.load(path: dir.path, verifier: verifier)
        }
        #expect(try DiagnosisKeyFiles.load(path: dir.path, verifier: verifier, allowUnsigned: true).signedBy == nil)
    }

    @Test func aZipFileIsRefusedWithAHint() throws {
        let dir = TemporaryDirectory()
        try write([0x50, 0x4B, 0x03, 0x04, 0x14, 0x00] + [UInt8](repeating: 0, count: 30), dir.path("export.zip"))
        #expect(throws: DiagnosisKeyImportError.zipArchive(path: dir.path("export.zip"))) {
            try DiagnosisKeyFiles.load(path: dir.path("export.zip"), verifier: verifier)
        }
    }

    @Test func missingPathsEmptyDirectoriesAndOversizedFilesAreUnreadable() throws {
        let dir = TemporaryDirectory()
        #expect(throws: DiagnosisKeyImportError.unreadable(path: dir.path("nope"), detail: "no such file or directory")) {
            try DiagnosisKeyFiles.load(path: dir.path("nope"), verifier: verifier)
        }
        #expect { try DiagnosisKeyFiles.load(path: dir.path, verifier: verifier) } throws: { error in
            guard case .unreadable(let path, _)? = error as? DiagnosisKeyImportError else { return false }
            return path == dir.path("export.bin")
        }
        // Sparse: refused by its size before anything is read.
        let big = dir.path("big.bin")
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: big))
        try handle.truncate(atOffset: UInt64(DiagnosisKeyImport.maximumFileBytes) + 1)
        try handle.close()
        let size = DiagnosisKeyImport.maximumFileBytes + 1
        #expect(throws: DiagnosisKeyImportError.unreadable(path: big, detail: "\(size) bytes, more than an export file can be (64 MiB)")) {
            try DiagnosisKeyFiles.load(path: big, verifier: verifier, allowUnsigned: true)
        }
    }
}
