/// What the projections fold from a ScanHit, as a plain value: inline integers and the name, no
/// heap storage, no arrays, no Data.
///
/// Why it exists: schema 3 gave ScanHit its 11th field, which put the message over
/// swift-protobuf's size threshold (field cost 17, counting the summary's fields), so the
/// generated struct now keeps its fields in a heap `_StorageClass`. Every setter copies that class
/// on first write and every access to it is a dynamic exclusivity check; replay spent about a
/// quarter of its time there. Replay decodes the hot kind straight into this value instead
/// (`EventCodec.scanHitFields`), and `Projections.apply(scanHit:sequence:timeMicroseconds:)`
/// folds it. The generated message stays the schema, the encoder and the reference decoder.
public struct ScanHitFields: Sendable, Equatable {
    public var address: UInt64 = 0
    /// The raw value of `AddressType` (a value this build does not know stays the number).
    public var addressType: Int = 0
    public var rssiMin: Int32 = 0
    public var rssiMax: Int32 = 0
    public var rssiSum: Int64 = 0
    public var count: UInt32 = 0
    public var firstOffsetUs: UInt64 = 0
    public var lastOffsetUs: UInt64 = 0
    /// nil when the hit had no TX power (`hasTxPower` false).
    public var txPower: Int32?
    public var rssiUnavailable: UInt32 = 0
    /// The advertisement's local name; empty when none.
    public var name: String = ""

    public init() {}

    /// The same fields read from the generated message (the path of events not read from the log).
    public init(_ hit: ScanHit) {
        address = hit.address
        addressType = hit.addressType.rawValue
        rssiMin = hit.rssiMin
        rssiMax = hit.rssiMax
        rssiSum = hit.rssiSum
        count = hit.count
        firstOffsetUs = hit.firstOffsetUs
        lastOffsetUs = hit.lastOffsetUs
        txPower = hit.hasTxPower ? hit.txPower : nil
        rssiUnavailable = hit.rssiUnavailable
        name = hit.hasAdvertisement ? hit.advertisement.name : ""
    }

    @inline(__always)
    public func firstSeenMicroseconds(eventTime: UInt64) -> UInt64 { eventTime &- firstOffsetUs }
    @inline(__always)
    public func lastSeenMicroseconds(eventTime: UInt64) -> UInt64 { eventTime &- lastOffsetUs }
}
