import Foundation
import VigilCore
import VigilEvents
import VigilRadio
import VigilSystem

/// Exposure records, and the values commands make into records. `exposure` is internal rather
/// than private only because it lives in this file: `interpret` is its one caller.
extension CommandInterpreter {
    func exposure(_ r: ExposureRecord) -> Outcome {
        guard let key = Hex.decode(r.diagnosisKeyHex), key.count == 16 else {
            return .refused(.invalid, "a diagnosis key is 16 bytes in hex")
        }
        var x = ExposureDetected()
        x.diagnosisKey = Data(key)
        x.source = String(r.source.prefix(4_096))
        x.withdrawn = r.withdrawn
        guard !r.withdrawn else { return .event(.exposureDetected(x)) }
        guard let identifier = Hex.decode(r.identifierHex), identifier.count == 16 else {
            return .refused(.invalid, "an identifier is 16 bytes in hex")
        }
        guard r.lastSeenMicroseconds >= r.firstSeenMicroseconds, r.secondsByBucket.count <= 8 else {
            return .refused(.invalid, "the window must end after it starts, with at most 8 buckets")
        }
        x.identifier = Data(identifier)
        x.rollingStart = r.rollingStart
        x.rollingPeriod = r.rollingPeriod
        x.transmissionRiskLevel = r.transmissionRiskLevel
        x.reportType = r.reportType
        x.firstSeenUs = r.firstSeenMicroseconds
        x.lastSeenUs = r.lastSeenMicroseconds
        x.secondsByBucket = r.secondsByBucket
        x.txPower = r.txPower
        x.minAttenuation = r.minAttenuation
        x.weightedMinutesMilli = r.weightedMinutesMilli
        x.highRisk = r.highRisk
        x.scanInstances = r.scanInstances
        return .event(.exposureDetected(x))
    }
}

extension ExposureRecord {
    /// The record of a detection the matcher made (`ExposureMatcher.detections`).
    public init(_ x: ExposureDetected) {
        identifierHex = Hex.encode(Array(x.identifier))
        diagnosisKeyHex = Hex.encode(Array(x.diagnosisKey))
        rollingStart = x.rollingStart
        rollingPeriod = x.rollingPeriod
        transmissionRiskLevel = x.transmissionRiskLevel
        reportType = x.reportType
        firstSeenMicroseconds = x.firstSeenUs
        lastSeenMicroseconds = x.lastSeenUs
        secondsByBucket = x.secondsByBucket
        txPower = x.txPower
        minAttenuation = x.minAttenuation
        weightedMinutesMilli = x.weightedMinutesMilli
        highRisk = x.highRisk
        source = x.source
        scanInstances = x.scanInstances
        withdrawn = x.withdrawn
    }
}

extension Resident {
    /// The event payload for a resident as the projection holds it (an update starts from it).
    init(_ s: EscalationBook.ResidentState) {
        self.init()
        id = s.id
        name = s.name
        mode = s.checkInMode
        intervalUs = s.intervalMicroseconds
        confirmUs = s.confirmMicroseconds
        textToAlarmUs = s.textToAlarmMicroseconds
        alarmToNotifyUs = s.alarmToNotifyMicroseconds
        contacts = s.contacts.map { var c = Contact(); c.name = $0.name; c.address = $0.address; return c }
        pauses = s.pauses.map { var p = Pause(); p.startUs = $0.start; p.endUs = $0.end; return p }
        if let n = s.night {
            night.startMinute = n.startMinute
            night.endMinute = n.endMinute
            night.utcOffsetMinutes = n.utcOffsetMinutes
        }
        bleTag = s.bleTag
        ownAddress = s.ownAddress
        room = s.room
        weeklyPauses = s.weekly.map { var w = WeeklySlot(); w.days = $0.days; w.startMinute = $0.startMinute; w.endMinute = $0.endMinute; return w }
        timeZone = s.timeZone
        heartRateSensor = s.heartRateSensor
        heartRateSensorType = s.heartRateSensorRandom ? .addressRandom : .addressPublic
    }
}
