import Testing
import VigilLog
import VigilSystem

@Suite("CRC-32C")
struct ChecksumTests {
    /// The bit-at-a-time definition, to check the eight-byte tables against.
    static func reference(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        }
        return ~c
    }

    @Test func matchesThePublishedCheckValue() {
        // RFC 3720, B.4 and the CRC catalogue: CRC-32C of "123456789" is 0xE3069283.
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([]) == 0)
    }

    @Test func everyLengthAndOffsetMatchesTheBitwiseDefinition() {
        let bytes = (0..<97).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 13) }
        for start in 0..<9 {
            for end in start...bytes.count {
                let slice = Array(bytes[start..<end])
                #expect(CRC32C.checksum(slice) == Self.reference(slice), "bytes \(start)..<\(end)")
            }
        }
    }

    @Test func theProcessorsInstructionGivesTheTablesValuesAtEveryLengthAndAlignment() throws {
        #if arch(x86_64)
        // Every x86-64 processor Debian 12 runs on since 2008 has SSE 4.2; this one must use it.
        let hardware = try #require(HardwareCRC32C.available, "no SSE 4.2 CRC32 on this x86-64 processor")
        #else
        guard let hardware = HardwareCRC32C.available else { return } // the tables are the checksum here
        #endif
        var generator = SplitMix64(seed: 29)
        let bytes = (0..<300).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        bytes.withUnsafeBytes { all in
            for start in 0..<9 {          // unaligned starts
                for end in start...all.count {
                    let part = UnsafeRawBufferPointer(rebasing: all[start..<end])
                    for seed: UInt32 in [0, 0xDEAD_BEEF] {
                        #expect(hardware.checksum(part, continuing: seed) == CRC32C.tableChecksum(part, continuing: seed),
                                "bytes \(start)..<\(end) from \(seed)")
                    }
                }
            }
        }
    }

    @Test func continuingEqualsChecksummingTheWhole() {
        let bytes = (0..<40).map { UInt8($0) }
        let head = bytes[..<13].withUnsafeBytes { CRC32C.checksum($0) }
        let whole = bytes[13...].withUnsafeBytes { CRC32C.checksum($0, continuing: head) }
        #expect(whole == CRC32C.checksum(bytes))
    }
}
