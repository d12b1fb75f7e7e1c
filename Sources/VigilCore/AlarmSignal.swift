/// What an outbox entry for the alarm receiving centre reports. The node sends it as a Contact ID
/// event over SIA DC-09 (VigilAlarmCentre's `AlarmReport` holds the code table); the core only
/// says which condition, whether it is raised or restored, and the number the centre tells open
/// alarms apart by.
public struct AlarmSignal: Codable, Equatable, Hashable, Sendable {
    public enum Condition: String, Codable, Sendable {
        /// An SOS call (Contact ID 120 Panic).
        case sos
        /// A medical call (100 Medical).
        case medical
        /// A resident's ladder reached its alarm step (102 Fail to report in).
        case missedCheckIn = "missed-check-in"
        /// The event log was found damaged and salvaged (304).
        case logDamaged = "log-damaged"
        /// The Bluetooth radio went off or away (330).
        case radioLost = "radio-lost"
    }

    public var condition: Condition
    /// A restore (the call ended, the trouble is over) rather than a new event.
    public var restore: Bool
    /// The call's number (`CallBook.Call.number`); 0 for the box's own troubles.
    public var number: UInt64

    public init(_ condition: Condition, restore: Bool = false, number: UInt64 = 0) {
        self.condition = condition
        self.restore = restore
        self.number = number
    }

    /// "SOS call 12", "restore of radio lost": for status and the outbox's text.
    public var text: String {
        let what = switch condition {
        case .sos: "SOS"
        case .medical: "medical call"
        case .missedCheckIn: "missed check-in"
        case .logDamaged: "event log damaged"
        case .radioLost: "radio lost"
        }
        let numbered = number == 0 ? what : "\(what) \(number)"
        return restore ? "restore of \(numbered)" : numbered
    }
}
