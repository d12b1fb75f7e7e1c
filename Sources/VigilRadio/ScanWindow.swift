import VigilEvents

/// Folds the advertising reports of each advertiser within one window into one ScanHit, so a
/// phone advertising ten times a second costs one event per window, not twenty.
///
/// Time is passed in (report times and `close(at:)`), never read from a clock.
public struct ScanWindow {
    struct Accumulator {
        var addressType: AddressType
        var rssiMin: Int32
        var rssiMax: Int32
        var rssiSum: Int64
        var count: UInt32
        var rssiUnavailable: UInt32
        var first: UInt64
        var last: UInt64
        var txPower: Int8?
        var connectable: Bool
        var data: [UInt8]

        init(_ report: AdvertisingReport) {
            let measured = report.rssi != AdvertisingReport.rssiUnavailable
            addressType = report.addressType
            rssiMin = measured ? Int32(report.rssi) : 0
            rssiMax = rssiMin
            rssiSum = Int64(rssiMin)
            count = 1
            rssiUnavailable = measured ? 0 : 1
            first = report.timeMicroseconds
            last = report.timeMicroseconds
            txPower = report.txPower
            connectable = report.connectable
            data = report.data
        }
    }

    /// Window length; 0 means one ScanHit per report.
    public let durationMicroseconds: UInt64
    public private(set) var openedAt: UInt64?
    private var byAddress: [UInt64: Accumulator] = [:]
    /// Most advertisers tracked in one window; reports of further ones are shed (counted).
    public let maxAdvertisers: Int
    public private(set) var shedReports: UInt64 = 0
    public private(set) var malformed = AdvertisingDataParser.Counts()

    /// The service data UUID of Vigil's frames (presence identifiers are kept as contacts).
    public let vigilUUID: UInt16

    public init(durationMicroseconds: UInt64, maxAdvertisers: Int = 4_096, vigilUUID: UInt16 = 0xFCF1) {
        self.durationMicroseconds = durationMicroseconds
        self.maxAdvertisers = maxAdvertisers
        self.vigilUUID = vigilUUID
    }

    /// When the open window must close, if one is open.
    public var closesAt: UInt64? { openedAt.map { $0 + durationMicroseconds } }

    public var pendingAdvertisers: Int { byAddress.count }

    /// Adds a report. With a zero-length window the ScanHit is returned at once.
    public mutating func add(_ report: AdvertisingReport) -> ScanHit? {
        if durationMicroseconds == 0 {
            let acc = Accumulator(report)
            return hit(address: report.address, acc, eventTime: report.timeMicroseconds)
        }
        if openedAt == nil { openedAt = report.timeMicroseconds }
        let key = report.address | (UInt64(report.addressType.rawValue & 0xFF) << 48)
        if var acc = byAddress[key] {
            if report.rssi == AdvertisingReport.rssiUnavailable {
                acc.rssiUnavailable += 1
            } else if acc.count == acc.rssiUnavailable {
                (acc.rssiMin, acc.rssiMax, acc.rssiSum) = (Int32(report.rssi), Int32(report.rssi), Int64(report.rssi))
            } else {
                acc.rssiMin = min(acc.rssiMin, Int32(report.rssi))
                acc.rssiMax = max(acc.rssiMax, Int32(report.rssi))
                acc.rssiSum += Int64(report.rssi)
            }
            acc.count += 1
            acc.first = min(acc.first, report.timeMicroseconds)
            acc.last = max(acc.last, report.timeMicroseconds)
            if let tx = report.txPower { acc.txPower = tx }
            if !report.data.isEmpty && report.data != acc.data { acc.data = report.data }
            acc.connectable = acc.connectable || report.connectable
            byAddress[key] = acc
        } else {
            guard byAddress.count < maxAdvertisers else {
                shedReports += 1
                return nil
            }
            byAddress[key] = Accumulator(report)
        }
        return nil
    }

    /// Closes the window at `time`: one ScanHit per advertiser, sorted by address so the log
    /// order is deterministic. The event time of every hit is `time`, or the last report's when
    /// a report carries a later one: the returned `time`, which the hits' offsets count back from.
    public mutating func close(at time: UInt64) -> (time: UInt64, hits: [ScanHit]) {
        defer {
            byAddress.removeAll(keepingCapacity: true)
            openedAt = nil
        }
        let eventTime = byAddress.values.reduce(time) { max($0, $1.last) }
        let hits = byAddress.keys.sorted().compactMap { key -> ScanHit? in
            guard let acc = byAddress[key] else { return nil }
            return hit(address: key & 0xFFFF_FFFF_FFFF, acc, eventTime: eventTime)
        }
        return (eventTime, hits)
    }

    private mutating func hit(address: UInt64, _ acc: Accumulator, eventTime: UInt64) -> ScanHit {
        var hit = ScanHit()
        hit.address = address
        hit.addressType = acc.addressType
        hit.rssiMin = acc.rssiMin
        hit.rssiMax = acc.rssiMax
        hit.rssiSum = acc.rssiSum
        hit.count = acc.count
        hit.rssiUnavailable = acc.rssiUnavailable
        hit.firstOffsetUs = eventTime - acc.first
        hit.lastOffsetUs = eventTime - acc.last
        let (summary, adTxPower) = AdvertisingDataParser.summarize(acc.data, connectable: acc.connectable, vigilUUID: vigilUUID, counts: &malformed)
        if let tx = acc.txPower ?? adTxPower { hit.txPower = Int32(tx) }
        hit.advertisement = summary
        return hit
    }
}
