/// What Vigil reports to an alarm receiving centre, and the Contact ID code each is sent as.
///
/// | report | Q | code | zone/user | why this code |
/// | --- | --- | --- | --- | --- |
/// | SOS at a box | 1 / 3 | 120 Panic | call number | a manually activated call for help at a fixed point, from whoever is there: not 101 Personal emergency, which tells the centre an identified wearer's pendant went off |
/// | medical | 1 / 3 | 100 Medical | resident | the standard medical alarm; its user field says who |
/// | missed check-in | 1 / 3 | 102 Fail to report in | resident | an alarm-class code in the medical group: the ladder's end means the resident may be unable to answer; 641 Senior watch trouble is a trouble-class code many centres queue behind alarms |
/// | event log damaged | 1 / 3 | 304 ROM checksum bad | 000 | stored records failed their checksums (what `vigil log check` finds): a non-volatile memory failure, a 3xx system trouble that sends a technician; 62x event-log codes are housekeeping many centres only file |
/// | running from memory | 1 / 3 | 300 System trouble | 000 | the card takes no writes: the box works but a power cut loses what it logged; Contact ID has no storage code and 300 is the generic "needs service" trouble |
/// | radio lost | 1 / 3 | 330 System peripheral trouble | 000 | the Bluetooth radio that hears residents' tags and phones is the box's peripheral; 35x are troubles of the path to the centre (which would stop this report too), 381 is one wireless sensor missing |
/// | periodic test | 1 | 602 Periodic test report | 000 | the standard timer test the centre expects on schedule |
///
/// Raised reports use qualifier 1 (new event); cleared ones (an SOS cancelled, a trouble over)
/// qualifier 3 (restore) with the same code and zone, so the centre pairs them. All in partition
/// 01 unless the caller names another.
///
/// Numbers are carried modulo 1000 (the zone field has three digits): the centre uses them to
/// tell open alarms apart and to pair a restore with its alarm, which holds while fewer than 1000
/// are open at once; the box's own log keeps the full number. So a report always encodes: no
/// number can make a call for help fail.
public enum AlarmReport: Sendable, Hashable {
    case raised(AlarmCondition)
    case cleared(AlarmCondition)
    /// The periodic test report (602): the link and the box are alive.
    case periodicTest

    /// The Contact ID event this report is sent as (the table above), in `partition` (0...99;
    /// anything else is taken modulo 100 for the same reason numbers are).
    public func contactID(partition: Int = 1) -> ContactIDEvent {
        let group = Self.wrap(partition, 100)
        switch self {
        case .raised(let condition):
            return ContactIDEvent(unchecked: .newEvent, code: condition.code, partition: group, zone: condition.zone)
        case .cleared(let condition):
            return ContactIDEvent(unchecked: .restore, code: condition.code, partition: group, zone: condition.zone)
        case .periodicTest:
            return ContactIDEvent(unchecked: .newEvent, code: 602, partition: group, zone: 0)
        }
    }

    /// `value` into 0..<modulus, for any `Int` (negative ones too), without overflow.
    static func wrap(_ value: Int, _ modulus: Int) -> Int {
        let remainder = value % modulus
        return remainder < 0 ? remainder + modulus : remainder
    }
}

/// A condition the box raises and later clears.
public enum AlarmCondition: Sendable, Hashable {
    /// A call for help at a box (its SOS button, staff, or a phone's SOS staff confirmed); `call` is the
    /// node's call number. Contact ID 120 Panic.
    case sos(call: Int)
    /// A medical alarm for a resident (their number in the box's list). Contact ID 100 Medical.
    case medical(resident: Int)
    /// A resident did not answer the check-in ladder. Contact ID 102 Fail to report in.
    case missedCheckIn(resident: Int)
    /// The event log was found damaged (records lost or salvaged). Contact ID 304.
    case eventLogDamaged
    /// The storage takes no writes; the box runs from memory. Contact ID 300.
    case runningFromMemory
    /// The Bluetooth radio is gone or off. Contact ID 330.
    case radioLost

    /// The Contact ID event code (the table on `AlarmReport`).
    public var code: Int {
        switch self {
        case .sos: 120
        case .medical: 100
        case .missedCheckIn: 102
        case .eventLogDamaged: 304
        case .runningFromMemory: 300
        case .radioLost: 330
        }
    }

    /// The zone or user field: the call or resident number modulo 1000, 000 for the box's own.
    public var zone: Int {
        switch self {
        case .sos(let call): AlarmReport.wrap(call, 1000)
        case .medical(let resident), .missedCheckIn(let resident): AlarmReport.wrap(resident, 1000)
        case .eventLogDamaged, .runningFromMemory, .radioLost: 0
        }
    }
}
