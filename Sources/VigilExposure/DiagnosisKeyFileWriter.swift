#if canImport(FoundationEssentials)
import FoundationEssentials // Data, of the protobuf messages: a value type, no I/O
#else
import Foundation
#endif
import SwiftProtobuf

/// Builds `export.bin` files: the box publishing its own keys when the shelter is declared
/// exposed, and tests. The output parses back with `DiagnosisKeyFile(exportBin:)`.
public struct DiagnosisKeyFileWriter: Sendable {
    public var startTimestamp: UInt64?
    public var endTimestamp: UInt64?
    public var region: String?
    public var batchNumber: Int32 = 1
    public var batchSize: Int32 = 1
    /// The keys that will sign the file (written into the file, as servers do).
    public var signatureInfos: [ExportSignatureInfo] = []

    public init(startTimestamp: UInt64? = nil, endTimestamp: UInt64? = nil, region: String? = nil, signatureInfos: [ExportSignatureInfo] = []) {
        self.startTimestamp = startTimestamp
        self.endTimestamp = endTimestamp
        self.region = region
        self.signatureInfos = signatureInfos
    }

    /// Header ‖ TemporaryExposureKeyExport.
    /// - Throws: `ExposureCryptoError.cipherFailed` if protobuf encoding fails (it should not).
    public func exportBin(keys: [DiagnosisKey], revisedKeys: [DiagnosisKey] = []) throws(ExposureCryptoError) -> [UInt8] {
        var message = Gaen_TemporaryExposureKeyExport()
        if let startTimestamp { message.startTimestamp = startTimestamp }
        if let endTimestamp { message.endTimestamp = endTimestamp }
        if let region { message.region = region }
        message.batchNum = batchNumber
        message.batchSize = batchSize
        message.signatureInfos = signatureInfos.map(\.message)
        message.keys = keys.map(Self.message)
        message.revisedKeys = revisedKeys.map(Self.message)
        do {
            let body: [UInt8] = try message.serializedBytes()
            return DiagnosisKeyFile.header + body
        } catch {
            throw .cipherFailed(operation: "encoding TemporaryExposureKeyExport", detail: "\(error)")
        }
    }

    static func message(_ key: DiagnosisKey) -> Gaen_TemporaryExposureKey {
        var m = Gaen_TemporaryExposureKey()
        m.keyData = Data(key.key.keyData.bytes)
        // Interval numbers stay below 2^31 until the year 42,800: the Int32 field holds them.
        m.rollingStartIntervalNumber = Int32(truncatingIfNeeded: key.key.rollingStartIntervalNumber)
        m.rollingPeriod = Int32(key.key.rollingPeriod)
        if let level = key.transmissionRiskLevel { m.transmissionRiskLevel = level }
        if key.reportType != .unknown, let type = Gaen_TemporaryExposureKey.ReportType(rawValue: Int(key.reportType.rawValue)) {
            m.reportType = type
        }
        if let days = key.daysSinceOnsetOfSymptoms { m.daysSinceOnsetOfSymptoms = days }
        return m
    }
}
