import Testing
@testable import VigilAlarmCentre

/// The DC-09 CRC is CRC-16/ARC; every expected value here was computed three ways in Python
/// (tools/dc09_vectors.py: crcmod's "crc-16", pysiaalarm's `_crc_calc`, a bitwise loop).
@Suite struct CRCTests {
    @Test("the CRC is CRC-16/ARC: catalogue check value and frames pysiaalarm accepts", arguments: [
        ("123456789", UInt16(0xBB3D)),
        ("", 0x0000),
        ("\"ACK\"0042R12L1#1234[]", 0xBAB0),
        ("\"NULL\"0001L0#123[]", 0x90D5),
        ("\"ADM-CID\"0042R12L1#1234[#1234|1120 01 005]_02:38:32,11-28-2026", 0x9751),
    ])
    func crcMatchesIndependentImplementations(text: String, expected: UInt16) {
        #expect(DC09CRC.checksum(Array(text.utf8)) == expected)
    }

    @Test func crcIsWrittenAsFourUpperCaseHexDigits() {
        #expect(String(decoding: ASCII.hex(0x0ab3, width: 4), as: UTF8.self) == "0AB3")
    }
}
