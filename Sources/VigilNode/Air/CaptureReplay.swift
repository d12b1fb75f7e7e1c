import VigilCore
import VigilEvents
import VigilRadio

/// Feeds a btsnoop capture through the parsing path of live traffic: the HCI event parser, the
/// scan window and the alert-frame check, with the capture's own timestamps as time.
/// `vigil radio replay` prints what it finds; nothing is written to any log.
public struct CaptureReplay {
    public struct Summary: Sendable, Codable, Equatable {
        public var records = 0
        public var sent = 0
        public var events = 0
        public var reports = 0
        public var legacyReports = 0
        public var extendedReports = 0
        public var commandCompletions = 0
        public var malformedPackets = 0
        /// Packets that are not events (ACL data on a user-channel capture): not parsed, not errors.
        public var otherPackets = 0
        public var malformedReports = 0
        public var malformedAdvertisingData = 0
        public var advertisers = 0
        public var scanHits = 0
        public var air = AirCounters()
        /// Alert frames that verified under the key, as "type id hops".
        public var alertFrames: [String] = []
        public var leftoverBytes = 0
        public var firstMicroseconds: UInt64 = 0
        public var lastMicroseconds: UInt64 = 0
    }

    /// One report, for `--reports`.
    public typealias ReportHandler = (AdvertisingReport) -> Void

    /// `next` yields the capture's records in order (nil at the end), so a capture of any size is
    /// streamed, never held in memory.
    public static func run(next: () throws -> BTSnoopRecord?, windowMicroseconds: UInt64,
                           shelterKey: [UInt8]?, uuid: UInt16 = AlertFrame.defaultServiceUUID,
                           onReport: ReportHandler? = nil) throws -> Summary {
        var summary = Summary()
        var parser = HCIEventParser()
        var window = ScanWindow(durationMicroseconds: windowMicroseconds)
        var settings = AirAlertSettings()
        settings.serviceUUID = uuid
        // A capture is judged at its own time: frames are checked against the capture's clock.
        settings.maxLifetimeMicroseconds = .max / 2
        var air = AirLink(key: try shelterKey.map { bytes throws in try AlertFrameKey(shelterKey: bytes) }, settings: settings,
                          presence: nil, nodeID: 0)
        var seenAlerts = Set<String>()
        var distinctFrames: UInt64 = 0, repeatedFrames: UInt64 = 0
        var advertisers = Set<UInt64>()
        while let record = try next() {
            summary.records += 1
            if summary.firstMicroseconds == 0 { summary.firstMicroseconds = record.timeMicroseconds }
            summary.lastMicroseconds = record.timeMicroseconds
            guard record.direction == .received else {
                summary.sent += 1
                continue
            }
            if let closesAt = window.closesAt, record.timeMicroseconds >= closesAt {
                summary.scanHits += window.close(at: closesAt).hits.count
            }
            guard let event = parser.parse(record.packet, timeMicroseconds: record.timeMicroseconds) else { continue }
            summary.events += 1
            switch event {
            case .advertisingReports(let reports):
                for report in reports {
                    summary.reports += 1
                    advertisers.insert(report.address)
                    onReport?(report)
                    if window.add(report) != nil { summary.scanHits += 1 }
                    if let frame = air.inspect(report, now: report.timeMicroseconds) {
                        let text = "\(frame.type) \(frame.id.text) hops \(frame.hops)"
                        if seenAlerts.insert(text).inserted {
                            summary.alertFrames.append(text)
                            distinctFrames += 1
                        } else {
                            repeatedFrames += 1
                        }
                    }
                }
            case .commandComplete, .commandStatus:
                summary.commandCompletions += 1
            case .hardwareError, .other, .connectionComplete, .advertisingSetTerminated, .disconnectionComplete:
                break
            }
        }
        summary.scanHits += window.close(at: summary.lastMicroseconds).hits.count
        summary.legacyReports = parser.counts.legacyReports
        summary.extendedReports = parser.counts.extendedReports
        summary.malformedPackets = parser.counts.truncatedPackets
        summary.otherPackets = parser.counts.notEvents
        summary.malformedReports = parser.counts.malformedReports
        summary.malformedAdvertisingData = window.malformed.total
        summary.advertisers = advertisers.count
        summary.air = air.counters
        // No log here: "accepted" is each verified frame's first hearing, the rest are duplicates.
        summary.air.accepted = distinctFrames
        summary.air.duplicates = repeatedFrames
        return summary
    }
}
