/// The names alert kinds and severities go by in commands, the API, the page and CAP out
/// (`CAPOut`): one spelling for the box and the hub.
extension AlertKind {
    /// sos, medical, fire, flood, evacuate, road-hazard, area-hazard, info; unspecified otherwise.
    public var slug: String {
        switch self {
        case .sos: "sos"
        case .medical: "medical"
        case .fire: "fire"
        case .flood: "flood"
        case .evacuate: "evacuate"
        case .roadHazard: "road-hazard"
        case .areaHazard: "area-hazard"
        case .info: "info"
        default: "unspecified"
        }
    }
}

extension AlertSeverity {
    /// info, warning, critical; unspecified otherwise.
    public var name: String {
        switch self {
        case .info: "info"
        case .warning: "warning"
        case .critical: "critical"
        default: "unspecified"
        }
    }
}
