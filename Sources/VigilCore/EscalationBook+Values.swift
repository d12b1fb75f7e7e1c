import VigilEvents

/// What the book keeps per resident and the settings it reads: quiet windows, contacts, the
/// resident's state, and the deadlines and messages it hands the node.
extension EscalationBook {
    public struct Window: Codable, Equatable, Sendable {
        public var start: UInt64
        public var end: UInt64
    }

    public struct Night: Codable, Equatable, Sendable {
        public var startMinute: UInt32
        public var endMinute: UInt32
        public var utcOffsetMinutes: Int32
    }

    /// A recurring pause: the days it starts on (bit 0 = Monday ... bit 6 = Sunday) and its local
    /// minutes; an end before the start runs past midnight into the next day.
    public struct WeeklyWindow: Codable, Equatable, Sendable {
        public var days: UInt32
        public var startMinute: UInt32
        public var endMinute: UInt32
    }

    public struct ContactEntry: Codable, Equatable, Sendable {
        public var name: String
        public var address: String
    }

    public struct ResidentState: Codable, Equatable, Sendable {
        public var id: String
        public var name: String
        public var mode: Int
        public var intervalMicroseconds: UInt64
        public var confirmMicroseconds: UInt64
        public var textToAlarmMicroseconds: UInt64
        public var alarmToNotifyMicroseconds: UInt64
        public var contacts: [ContactEntry]
        public var pauses: [Window]
        public var night: Night?
        public var bleTag: UInt64
        /// The resident's own address for texts (empty: the resident's id, as for the prompt).
        public var ownAddress: String
        /// Room or bed, for messages about them.
        public var room: String
        public var weekly: [WeeklyWindow]
        /// IANA zone name for the night window and weekly pauses (empty: the night's fixed offset).
        public var timeZone: String
        /// The resident's heart-rate sensor (48 bits, 0: none) and whether its address is random:
        /// the box links to it and logs its readings as check-ins (`SensorLinks`).
        public var heartRateSensor: UInt64
        public var heartRateSensorRandom: Bool
        /// When the current ladder started (its prompt), for messages.
        public var ladderStartMicroseconds: UInt64
        /// The time the next prompt (time mode) or emergency (pulse mode) counts from: enrolment,
        /// the last "I'm OK", or the last positive datum.
        public var anchorMicroseconds: UInt64
        /// Ladder instances started so far; the current one when `step` > 0.
        public var ladder: UInt32
        /// LadderStep raw value: 0 = idle, 1 = prompted, 2 = asked again (by SMS, and the staff told), 3 = alarm, 4 = triggered (contacts told).
        public var step: Int
        /// When the current step happened: its due time, or the later time its DeadlineReached was
        /// logged (a box that was off). The next step counts from here.
        public var stepDueMicroseconds: UInt64
        /// The event that moved the resident to the current step (for `vigil why`).
        public var stepSequence: UInt64
        public var lastPositiveMicroseconds: UInt64
        public var lastPositiveSequence: UInt64
        public var triggered: UInt64

        public var checkInMode: CheckInMode { CheckInMode(rawValue: mode) ?? .off }
        public var ladderStep: LadderStep { LadderStep(rawValue: step) ?? .none }
        /// Prompted, texted or alarming: an "I'm OK" still stops it.
        public var isEscalating: Bool { (1...3).contains(step) }
    }

    /// The deadline the scheduler must turn into a DeadlineReached when it comes.
    public struct Deadline: Equatable, Sendable {
        public var resident: String
        public var ladder: UInt32
        public var step: LadderStep
        public var dueMicroseconds: UInt64
    }

    /// A message the ladder wants delivered (it becomes an outbox entry).
    public struct Message: Equatable, Sendable {
        public enum Audience: String, Codable, Sendable { case resident, contacts, staff }
        public var id: String
        public var audience: Audience
        public var recipients: [String]
        public var text: String
    }
}
