import VigilHex

/// Why an `export.bin` could not be read. Keys that are individually wrong are not errors:
/// they are skipped and reported in `DiagnosisKeyFile.skipped`.
public enum DiagnosisKeyFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Shorter than the 16-byte header.
    case truncatedHeader(byteCount: Int)
    /// The first 16 bytes are not "EK Export v1" padded with spaces.
    case notAnExportFile(header: [UInt8])
    /// The protobuf after the header ends in the middle of a field.
    case truncated(byteCount: Int)
    /// The bytes after the header are not a TemporaryExposureKeyExport.
    case badProtobuf(detail: String)

    public var description: String {
        switch self {
        case let .truncatedHeader(count):
            return "not a key export file: \(count) bytes, shorter than the 16-byte \"EK Export v1\" header"
        case let .notAnExportFile(header):
            return "not a key export file: it starts with \(Self.printable(header)), not \"EK Export v1\""
        case let .truncated(count):
            return "key export file is truncated: its protobuf ends mid-field after \(count) bytes"
        case let .badProtobuf(detail):
            return "key export file is corrupt: the data after the header is not a TemporaryExposureKeyExport (\(detail))"
        }
    }

    private static func printable(_ bytes: [UInt8]) -> String {
        if bytes.allSatisfy({ (0x20...0x7E).contains($0) }) { return "\"\(String(decoding: bytes, as: UTF8.self))\"" }
        return "0x" + Hex.encode(bytes)
    }
}

/// A key in an export that was left out, and why (the rest of the file is still used).
public struct SkippedDiagnosisKey: Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable, CustomStringConvertible {
        /// `key_data` absent or not 16 bytes.
        case wrongKeyLength(Int)
        case missingRollingStartIntervalNumber
        /// Negative; interval numbers are unsigned.
        case negativeRollingStartIntervalNumber(Int32)
        /// Outside 1...144, or the key would run past the last interval number.
        case invalidRollingPeriod(Int32)

        public var description: String {
            switch self {
            case let .wrongKeyLength(n): return "key_data is \(n) bytes, not 16"
            case .missingRollingStartIntervalNumber: return "no rolling_start_interval_number"
            case let .negativeRollingStartIntervalNumber(n): return "rolling_start_interval_number \(n) is negative"
            case let .invalidRollingPeriod(n): return "rolling_period \(n) is outside 1...144"
            }
        }
    }

    /// Position in `keys` (or in `revised_keys` when `revised`).
    public let index: Int
    public let revised: Bool
    public let reason: Reason

    public var description: String { "\(revised ? "revised key" : "key") #\(index): \(reason)" }
}
