/// Why a diagnosis key was published (the export's `report_type`).
public enum DiagnosisReportType: Int32, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case unknown = 0
    case confirmedTest = 1
    case confirmedClinicalDiagnosis = 2
    case selfReport = 3
    case recursive = 4
    /// Withdrawn by the server: never match it.
    case revoked = 5

    public var description: String {
        switch self {
        case .unknown: return "unknown"
        case .confirmedTest: return "confirmed-test"
        case .confirmedClinicalDiagnosis: return "confirmed-clinical-diagnosis"
        case .selfReport: return "self-report"
        case .recursive: return "recursive"
        case .revoked: return "revoked"
        }
    }
}

/// A Temporary Exposure Key published after a positive diagnosis, with what the export says
/// about it. Absent optional fields stay nil rather than taking a made-up default.
public struct DiagnosisKey: Hashable, Sendable, CustomStringConvertible {
    public let key: TemporaryExposureKey
    /// 0...8 in v1 exports (deprecated by `reportType` but still shipped); nil if absent.
    public let transmissionRiskLevel: Int32?
    public let reportType: DiagnosisReportType
    /// Days from symptom onset to the key's day (negative: before onset); nil if absent.
    public let daysSinceOnsetOfSymptoms: Int32?

    public init(key: TemporaryExposureKey, transmissionRiskLevel: Int32? = nil, reportType: DiagnosisReportType = .unknown, daysSinceOnsetOfSymptoms: Int32? = nil) {
        self.key = key
        self.transmissionRiskLevel = transmissionRiskLevel
        self.reportType = reportType
        self.daysSinceOnsetOfSymptoms = daysSinceOnsetOfSymptoms
    }

    public var isRevoked: Bool { reportType == .revoked }

    public var description: String {
        var parts = ["\(key)", "report \(reportType)"]
        if let transmissionRiskLevel { parts.append("risk \(transmissionRiskLevel)") }
        if let daysSinceOnsetOfSymptoms { parts.append("onset \(daysSinceOnsetOfSymptoms)d") }
        return parts.joined(separator: ", ")
    }
}
