// A known-good key export built without Vigil's code, so it checks the format independently:
//   export.bin = "EK Export v1    " ‖ `protoc --encode=gaen.TemporaryExposureKeyExport` of
//                start 1585785600, end 1585872000, region "310", batch 1 of 1, one signature
//                info (id "310", version "v1", ECDSA-SHA256), and two keys:
//                  75c734c6dd1a782de7a965da5eb93125, risk 3, start 2642976, period 144,
//                    CONFIRMED_TEST, 2 days before symptom onset;
//                  000102030405060708090a0b0c0d0e0f, risk 8, start 2643120, period 72,
//                    CONFIRMED_CLINICAL_DIAGNOSIS;
//   export.sig = `protoc --encode=gaen.TEKSignatureList` around the DER signature made by
//                `openssl dgst -sha256 -sign` with a throwaway P-256 key (private half discarded;
//                `openssl dgst -sha256 -verify` accepted it).
// Its first key is the official test vector's TEK.
enum KnownGoodExport {
    static let exportBinHex =
        "454b204578706f72742076312020202009002b855e0000000011807c865e000000001a0333313020012801321e1a0276" +
        "3122033331302a13312e322e3834302e31303034352e342e332e323a200a1075c734c6dd1a782de7a965da5eb9312510" +
        "0318a0a8a101209001280130033a1d0a10000102030405060708090a0b0c0d0e0f100818b0a9a10120482802"
    static let exportSigHex =
        "0a6d0a1e1a02763122033331302a13312e322e3834302e31303034352e342e332e321001180122473045022100a10e3b" +
        "eebbe7458716807a043796fdeebcc2fcdcf6cb67cd9df769ef689ea9ea022020577cad5fc538290e9bdd9f3a2affa0d6" +
        "e3768180f423e5f25da6818576713e"
    static let publicKeyPEM = """
-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE4e6WPpGWdLcXK1LzJkX/JV43TJ2N
yM3UvvQ47yoLyDKjjwTtnBPat4uo7rZYLD8voroHN1f8MhzrnP2w7UdFYg==
-----END PUBLIC KEY-----
"""
    static let keyID = "310"
    static let keyVersion = "v1"
    static let region = "310"
    static let startTimestamp: UInt64 = 1_585_785_600
    static let endTimestamp: UInt64 = 1_585_872_000
}
