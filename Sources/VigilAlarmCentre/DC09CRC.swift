/// The DC-09 CRC (§5.5.1.2): CRC-16 with polynomial 0x8005 processed reflected (0xA001), initial
/// value 0, no final XOR — the catalogue's CRC-16/ARC (check value 0xBB3D for "123456789"). It
/// covers the bytes from the ID token's opening `"` to the last byte before the CR, and is sent
/// as four upper-case hex digits. A transmission check only: anyone can compute it, so it proves
/// nothing about who sent a frame (encryption does that).
public enum DC09CRC {
    /// The CRC of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc >> 8) ^ table[Int((crc ^ UInt16(byte)) & 0xFF)]
        }
        return crc
    }

    /// One entry per low byte of `crc ^ input`: that byte pushed through eight reflected steps.
    private static let table: [UInt16] = (0...255).map { (index: Int) -> UInt16 in
        var value = UInt16(index)
        for _ in 0..<8 {
            value = value & 1 == 1 ? (value >> 1) ^ 0xA001 : value >> 1
        }
        return value
    }
}
