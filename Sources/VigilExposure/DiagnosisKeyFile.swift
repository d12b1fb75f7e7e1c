#if canImport(FoundationEssentials)
import FoundationEssentials // Data, of the protobuf messages: a value type, no I/O
#else
import Foundation
#endif
import SwiftProtobuf

/// The contents of a GAEN key export (`export.bin`): the 16-byte header "EK Export v1" padded
/// with spaces, then a `TemporaryExposureKeyExport` protobuf (Protos/gaen/export.proto).
///
/// Parsing checks structure only; authenticity is `ExportSignatureVerifier`'s job, and a file
/// truncated exactly between two keys still parses (fewer keys) — only its signature shows it.
/// Parsing never traps on hostile input: bad files throw `DiagnosisKeyFileError`, bad keys are
/// skipped and listed in `skipped`.
public struct DiagnosisKeyFile: Sendable {
    /// "EK Export v1" right-padded with spaces to 16 bytes.
    public static let header: [UInt8] = Array("EK Export v1    ".utf8)

    /// Arrival window of the keys at the server, UTC seconds; nil if absent.
    public let startTimestamp: UInt64?
    public let endTimestamp: UInt64?
    public let region: String?
    /// Batch `batchNumber` of `batchSize`, 1-based; nil if absent.
    public let batchNumber: Int32?
    public let batchSize: Int32?
    /// The signing keys the file declares (export.sig carries the signatures themselves).
    public let signatureInfos: [ExportSignatureInfo]
    /// Keys released for the first time.
    public let keys: [DiagnosisKey]
    /// Keys whose status changed since an earlier file (e.g. revoked).
    public let revisedKeys: [DiagnosisKey]
    /// Keys left out because they were malformed.
    public let skipped: [SkippedDiagnosisKey]

    /// Parses `export.bin` bytes.
    /// - Throws: `.truncatedHeader`, `.notAnExportFile`, `.truncated`, `.badProtobuf`.
    public init(exportBin bytes: [UInt8]) throws(DiagnosisKeyFileError) {
        guard bytes.count >= Self.header.count else { throw .truncatedHeader(byteCount: bytes.count) }
        guard bytes.starts(with: Self.header) else { throw .notAnExportFile(header: Array(bytes.prefix(Self.header.count))) }
        let message: Gaen_TemporaryExposureKeyExport
        do {
            // A copy of the body: cheap next to decoding, and slices are not protobuf byte containers.
            message = try Gaen_TemporaryExposureKeyExport(serializedBytes: Array(bytes[Self.header.count...]))
        } catch BinaryDecodingError.truncated {
            throw .truncated(byteCount: bytes.count)
        } catch {
            throw .badProtobuf(detail: "\(error)")
        }
        self.init(message)
    }

    /// From an already-decoded message (keys validated the same way).
    public init(_ message: Gaen_TemporaryExposureKeyExport) {
        startTimestamp = message.hasStartTimestamp ? message.startTimestamp : nil
        endTimestamp = message.hasEndTimestamp ? message.endTimestamp : nil
        region = message.hasRegion ? message.region : nil
        batchNumber = message.hasBatchNum ? message.batchNum : nil
        batchSize = message.hasBatchSize ? message.batchSize : nil
        signatureInfos = message.signatureInfos.map(ExportSignatureInfo.init)
        var skipped: [SkippedDiagnosisKey] = []
        keys = Self.validKeys(message.keys, revised: false, skipped: &skipped)
        revisedKeys = Self.validKeys(message.revisedKeys, revised: true, skipped: &skipped)
        self.skipped = skipped
    }

    private static func validKeys(_ raw: [Gaen_TemporaryExposureKey], revised: Bool, skipped: inout [SkippedDiagnosisKey]) -> [DiagnosisKey] {
        var out: [DiagnosisKey] = []
        out.reserveCapacity(raw.count)
        for (index, entry) in raw.enumerated() {
            switch diagnosisKey(entry) {
            case let .key(key): out.append(key)
            case let .skip(reason): skipped.append(SkippedDiagnosisKey(index: index, revised: revised, reason: reason))
            }
        }
        return out
    }

    private enum Checked {
        case key(DiagnosisKey)
        case skip(SkippedDiagnosisKey.Reason)
    }

    private static func diagnosisKey(_ entry: Gaen_TemporaryExposureKey) -> Checked {
        guard let keyData = Bytes16(entry.keyData) else { return .skip(.wrongKeyLength(entry.keyData.count)) }
        guard entry.hasRollingStartIntervalNumber else { return .skip(.missingRollingStartIntervalNumber) }
        guard entry.rollingStartIntervalNumber >= 0 else {
            return .skip(.negativeRollingStartIntervalNumber(entry.rollingStartIntervalNumber))
        }
        // `rollingPeriod` reads as 144 when absent (proto2 default), as the format specifies.
        let period = entry.rollingPeriod
        guard period >= 1,
              let key = try? TemporaryExposureKey(keyData: keyData,
                                                  rollingStartIntervalNumber: UInt32(entry.rollingStartIntervalNumber),
                                                  rollingPeriod: UInt32(period))
        else { return .skip(.invalidRollingPeriod(period)) }
        return .key(DiagnosisKey(
            key: key,
            transmissionRiskLevel: entry.hasTransmissionRiskLevel ? entry.transmissionRiskLevel : nil,
            reportType: DiagnosisReportType(rawValue: Int32(entry.reportType.rawValue)) ?? .unknown,
            daysSinceOnsetOfSymptoms: entry.hasDaysSinceOnsetOfSymptoms ? entry.daysSinceOnsetOfSymptoms : nil
        ))
    }
}

/// Which key signed an export, as the files name it (`SignatureInfo`).
public struct ExportSignatureInfo: Hashable, Sendable, CustomStringConvertible {
    /// Alias of the signing key, e.g. a mobile country code; nil if absent.
    public let keyID: String?
    /// Version of the signing key, e.g. "v1"; nil if absent.
    public let keyVersion: String?
    /// ASN.1 OID, e.g. "1.2.840.10045.4.3.2" (ECDSA with SHA-256); nil if absent.
    public let algorithm: String?

    public init(keyID: String?, keyVersion: String?, algorithm: String? = ExportSignatureInfo.ecdsaWithSHA256) {
        self.keyID = keyID
        self.keyVersion = keyVersion
        self.algorithm = algorithm
    }

    init(_ message: Gaen_SignatureInfo) {
        keyID = message.hasVerificationKeyID ? message.verificationKeyID : nil
        keyVersion = message.hasVerificationKeyVersion ? message.verificationKeyVersion : nil
        algorithm = message.hasSignatureAlgorithm ? message.signatureAlgorithm : nil
    }

    var message: Gaen_SignatureInfo {
        var m = Gaen_SignatureInfo()
        if let keyID { m.verificationKeyID = keyID }
        if let keyVersion { m.verificationKeyVersion = keyVersion }
        if let algorithm { m.signatureAlgorithm = algorithm }
        return m
    }

    public static let ecdsaWithSHA256 = "1.2.840.10045.4.3.2"
    public static let ecdsaWithSHA512 = "1.2.840.10045.4.3.4"

    public var description: String { "key id \(keyID ?? "-") version \(keyVersion ?? "-")" }
}
