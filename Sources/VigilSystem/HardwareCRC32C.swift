internal import CVigilLinux

/// CRC-32C computed by the processor's own instruction (SSE 4.2 on x86-64, ARMv8's CRC32 on a
/// Raspberry Pi 4), for VigilLog's checksum of every record. Nil where the processor has none:
/// VigilLog then uses its tables. Same convention as the tables: continue from `crc` (0 to start).
public struct HardwareCRC32C: Sendable {
    /// This processor's, asked once.
    public static let available: HardwareCRC32C? = cvigil_crc32c_hardware() != 0 ? HardwareCRC32C() : nil

    private init() {}

    public func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress else { return crc }
        return cvigil_crc32c(crc, base, bytes.count)
    }
}
