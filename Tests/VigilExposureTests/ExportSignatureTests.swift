import Crypto
import Foundation
import SwiftProtobuf
import Testing
import VigilExposure
import VigilSystem

/// export.sig: ECDSA P-256 over SHA-256 of export.bin, checked against configured keys.
@Suite struct ExportSignatureTests {
    let signer = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "214", keyVersion: "v1")
    let bin: [UInt8]
    let sig: [UInt8]

    init() throws {
        let writer = DiagnosisKeyFileWriter(region: "214", signatureInfos: [signer.info])
        bin = try writer.exportBin(keys: try DiagnosisKeyFileTests.sampleKeys())
        sig = try signer.signatureFile(for: bin)
    }

    var verifier: ExportSignatureVerifier { ExportSignatureVerifier(keys: [signer.verificationKey]) }

    @Test func aFreshlySignedExportVerifies() throws {
        #expect(try verifier.verify(exportBin: bin, exportSig: sig) == signer.info)
        // A second signature differs (ECDSA is randomised) and verifies too.
        let again = try signer.signatureFile(for: bin)
        #expect(again != sig)
        #expect(throws: Never.self) { try verifier.verify(exportBin: bin, exportSig: again) }
    }

    @Test func theKnownGoodFixtureVerifiesWithItsPEMKey() throws {
        let key = try ExportVerificationKey(pem: KnownGoodExport.publicKeyPEM, keyID: KnownGoodExport.keyID, keyVersion: KnownGoodExport.keyVersion)
        let fixtureBin = try #require(Hex.decode(KnownGoodExport.exportBinHex))
        let fixtureSig = try #require(Hex.decode(KnownGoodExport.exportSigHex))
        let info = try ExportSignatureVerifier(keys: [key]).verify(exportBin: fixtureBin, exportSig: fixtureSig)
        #expect(info == ExportSignatureInfo(keyID: "310", keyVersion: "v1"))
        // One flipped bit anywhere in the file, header included, breaks it.
        for position in [0, 20, fixtureBin.count - 1] {
            var tampered = fixtureBin
            tampered[position] ^= 0x01
            #expect(throws: ExportSignatureError.signatureMismatch(info)) {
                try ExportSignatureVerifier(keys: [key]).verify(exportBin: tampered, exportSig: fixtureSig)
            }
        }
    }

    @Test func aTamperedExportIsASignatureMismatch() throws {
        var tampered = bin
        // Change one byte of the first key's data: still a well-formed file.
        let keyStart = try #require(Self.find(Bytes16(lo: 1, hi: 2).bytes, in: bin))
        tampered[keyStart] ^= 0xFF
        #expect(throws: Never.self) { try DiagnosisKeyFile(exportBin: tampered) }
        #expect(throws: ExportSignatureError.signatureMismatch(signer.info)) { try verifier.verify(exportBin: tampered, exportSig: sig) }
    }

    @Test func anotherKeyUnderTheSameIdIsASignatureMismatch() throws {
        let impostor = ExportVerificationKey(publicKey: P256.Signing.PrivateKey().publicKey, keyID: "214", keyVersion: "v1")
        #expect(throws: ExportSignatureError.signatureMismatch(signer.info)) {
            try ExportSignatureVerifier(keys: [impostor]).verify(exportBin: bin, exportSig: sig)
        }
    }

    @Test func aKeyForAnotherIdOrVersionIsNotTried() throws {
        for (id, version) in [("310", "v1"), ("214", "v2")] {
            let other = ExportVerificationKey(publicKey: signer.privateKey.publicKey, keyID: id, keyVersion: version)
            #expect(throws: ExportSignatureError.noSignatureFromConfiguredKey(found: [signer.info])) {
                try ExportSignatureVerifier(keys: [other]).verify(exportBin: bin, exportSig: sig)
            }
        }
        // Without id and version the configured key matches any signature.
        let anyID = ExportVerificationKey(publicKey: signer.privateKey.publicKey)
        #expect(throws: Never.self) { try ExportSignatureVerifier(keys: [anyID]).verify(exportBin: bin, exportSig: sig) }
    }

    @Test func oneGoodSignatureFromAConfiguredKeyAmongOthersSuffices() throws {
        let foreign = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "999", keyVersion: "v1")
        var list = try Gaen_TEKSignatureList(serializedBytes: try foreign.signatureFile(for: bin))
        list.signatures += try Gaen_TEKSignatureList(serializedBytes: sig).signatures
        let both: [UInt8] = try list.serializedBytes()
        #expect(try verifier.verify(exportBin: bin, exportSig: both) == signer.info)
    }

    @Test func aTruncatedExportWithAValidSignatureFailsClearly() throws {
        for cut in [DiagnosisKeyFile.header.count, DiagnosisKeyFile.header.count + 7, bin.count / 2, bin.count - 1] {
            let short = Array(bin.prefix(cut))
            // Whatever the structure says, the signature never accepts it...
            #expect(throws: ExportSignatureError.signatureMismatch(signer.info)) { try verifier.verify(exportBin: short, exportSig: sig) }
            // ...and the import reports the structural problem first when there is one.
            do {
                _ = try DiagnosisKeyImport.parse(exportBin: short, exportSig: sig, verifier: verifier)
                Issue.record("cut at \(cut) was accepted")
            } catch let error {
                switch error {
                case .file(_, .truncated), .signature(_, .signatureMismatch): break
                default: Issue.record("cut at \(cut): unexpected \(error)")
                }
            }
        }
    }

    @Test func aTruncatedSignatureFileFailsClearlyAtEveryCut() throws {
        for cut in 1..<sig.count {
            do {
                try verifier.verify(exportBin: bin, exportSig: Array(sig.prefix(cut)))
                Issue.record("cut at \(cut) verified")
            } catch let error {
                switch error {
                case .truncatedSignatureFile(byteCount: cut), .malformedSignature, .noSignatureFromConfiguredKey, .signatureMismatch: break
                default: Issue.record("cut at \(cut): unexpected \(error)")
                }
            }
        }
        // The signature is the last field: cutting inside it is "truncated".
        #expect(throws: ExportSignatureError.truncatedSignatureFile(byteCount: sig.count - 1)) {
            try verifier.verify(exportBin: bin, exportSig: Array(sig.prefix(sig.count - 1)))
        }
        #expect(throws: ExportSignatureError.noSignatures) { try verifier.verify(exportBin: bin, exportSig: []) }
    }

    @Test func garbageSignatureFilesAndSignaturesAreReportedAsSuch() throws {
        #expect(throws: ExportSignatureError.self) { try verifier.verify(exportBin: bin, exportSig: [0x0F, 0x00]) }
        do { try verifier.verify(exportBin: bin, exportSig: [0x0F, 0x00]) } catch let error {
            guard case .badSignatureFile = error else { Issue.record("got \(error)"); return }
        }
        var list = try Gaen_TEKSignatureList(serializedBytes: sig)
        list.signatures[0].signature = Data([0x30, 0x03, 0x02, 0x01, 0x01])
        #expect(throws: ExportSignatureError.malformedSignature(signer.info)) {
            try verifier.verify(exportBin: bin, exportSig: try list.serializedBytes())
        }
    }

    @Test func sha512SignaturesVerifyAndUnknownAlgorithmsAreRefused() throws {
        var list = Gaen_TEKSignatureList()
        var entry = Gaen_TEKSignature()
        entry.signatureInfo.verificationKeyID = "214"
        entry.signatureInfo.verificationKeyVersion = "v1"
        entry.signatureInfo.signatureAlgorithm = ExportSignatureInfo.ecdsaWithSHA512
        entry.signature = try signer.privateKey.signature(for: SHA512.hash(data: bin)).derRepresentation
        list.signatures = [entry]
        #expect(throws: Never.self) { try verifier.verify(exportBin: bin, exportSig: try list.serializedBytes()) }
        list.signatures[0].signatureInfo.signatureAlgorithm = "1.2.840.113549.1.1.11"
        #expect(throws: ExportSignatureError.unsupportedAlgorithm("1.2.840.113549.1.1.11")) {
            try verifier.verify(exportBin: bin, exportSig: try list.serializedBytes())
        }
    }

    @Test func publicKeysAreReadFromPEMDERX963AndCompressedForms() throws {
        let publicKey = signer.privateKey.publicKey
        let forms: [[UInt8]] = [
            Array(publicKey.pemRepresentation.utf8),
            Array(publicKey.derRepresentation),
            Array(publicKey.x963Representation),
            Array(publicKey.compressedRepresentation),
        ]
        for form in forms {
            let key = try ExportVerificationKey(bytes: form, keyID: "214", keyVersion: "v1")
            #expect(throws: Never.self) { try ExportSignatureVerifier(keys: [key]).verify(exportBin: bin, exportSig: sig) }
        }
        for bad: [UInt8] in [[], [0x04, 1, 2, 3], [0x30, 0x00], Array("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n".utf8)] {
            #expect(throws: ExportSignatureError.self) { try ExportVerificationKey(bytes: bad) }
        }
        #expect(throws: ExportSignatureError.noVerificationKeys) { try ExportSignatureVerifier(keys: []).verify(exportBin: bin, exportSig: sig) }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
