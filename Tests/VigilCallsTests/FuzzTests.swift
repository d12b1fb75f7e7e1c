import Foundation
import Testing
import VigilSystem
import VigilCalls

/// SMSFuzz over random and mutated inputs: nothing traps, and every promise the types make
/// holds (SMSFuzz.brokenPromises). Seeded, so a failure names an input that reproduces.
@Suite("Fuzzing the inbox parsers")
struct FuzzTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/sms-inbox")

    @Test func tenThousandRandomInputsBreakNoPromise() {
        var random = SplitMix64(seed: 0x5157_1A11)
        // Bytes drawn from what the parsers look for, so inputs get past the first checks.
        let alphabet = Array("IN_0123456789.txtbin+ X[]=;\"\n\r\tSMSBackup000 NumberUnicode Text00 UDH PDU Deliver Coding TAKE OK T4821".utf8)
            + [0x00, 0xFE, 0xFF, 0xD8, 0xDC, 0xC3, 0xE2, 0x80, 0xAE]
        var failures: [String] = []
        for round in 0..<10_000 {
            let count = Int.random(in: 0...(round % 10 == 0 ? 2_000 : 120), using: &random)
            let bytes: [UInt8] = round % 2 == 0
                ? random.bytes(count)
                : (0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
            let broken = SMSFuzz.brokenPromises(bytes)
            if !broken.isEmpty { failures.append("round \(round) \(bytes): \(broken)") }
            if failures.count > 5 { break }
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test func mutatedCapturedFilesAndNamesBreakNoPromise() {
        var random = SplitMix64(seed: 42)
        var failures: [String] = []
        var inputs = 0
        for file in CapturedInbox.all {
            for seed in [file.bytes, Array(file.name.utf8)] {
                for _ in 0..<100 {
                    var bytes = seed
                    for _ in 0...Int.random(in: 0...4, using: &random) {
                        guard !bytes.isEmpty else { break }
                        let at = Int.random(in: 0..<bytes.count, using: &random)
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0: bytes[at] = UInt8.random(in: 0...255, using: &random)
                        case 1: bytes.removeSubrange(at...)
                        case 2: bytes.insert(UInt8.random(in: 0...255, using: &random), at: at)
                        default: bytes.remove(at: at)
                        }
                    }
                    inputs += 1
                    let broken = SMSFuzz.brokenPromises(bytes)
                    if !broken.isEmpty { failures.append("\(file.name) mutated \(bytes): \(broken)") }
                }
            }
        }
        #expect(inputs >= 10_000)
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    @Test func theSeedCorpusBreaksNoPromise() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        #expect(names.count >= 10)
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: Self.corpus.appendingPathComponent(name)))
            #expect(SMSFuzz.brokenPromises(bytes).isEmpty, "\(name)")
            SMSFuzz.inbox(bytes)
        }
    }

    @Test func everyCapturedFileKeepsEveryPromise() {
        for file in CapturedInbox.all {
            #expect(SMSFuzz.brokenPromises(file.bytes).isEmpty, "\(file.name)")
            #expect(SMSFuzz.brokenPromises(Array(file.name.utf8)).isEmpty, "\(file.name)")
        }
    }
}
