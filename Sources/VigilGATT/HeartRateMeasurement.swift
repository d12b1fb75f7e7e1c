/// A Heart Rate Measurement (characteristic 0x2A37 of the Heart Rate service 0x180D, Heart Rate
/// Service 1.0 §3.1): flags, the rate as 8 or 16 bits, energy expended, RR intervals.
public struct HeartRateMeasurement: Equatable, Sendable {
    public enum Contact: String, Equatable, Sendable {
        /// The sensor cannot say whether it touches skin.
        case unsupported
        /// It says it does not: the value is not a pulse.
        case notDetected
        case detected
    }

    public var beatsPerMinute: UInt16
    public var contact: Contact
    /// Kilojoules since the last reset, when the sensor sends it.
    public var energyExpended: UInt16?
    /// RR intervals in 1/1024 s, oldest first.
    public var rrIntervals: [UInt16]

    public init(beatsPerMinute: UInt16, contact: Contact, energyExpended: UInt16? = nil, rrIntervals: [UInt16] = []) {
        self.beatsPerMinute = beatsPerMinute
        self.contact = contact
        self.energyExpended = energyExpended
        self.rrIntervals = rrIntervals
    }

    public enum ParseError: Error, Equatable, Sendable {
        case truncated
        case oddRRIntervals
    }

    public static func parse(_ value: [UInt8]) throws(ParseError) -> HeartRateMeasurement {
        guard let flags = value.first else { throw .truncated }
        var index = 1
        func u8() throws(ParseError) -> UInt16 {
            guard index < value.count else { throw .truncated }
            defer { index += 1 }
            return UInt16(value[index])
        }
        func u16() throws(ParseError) -> UInt16 {
            let low = try u8(), high = try u8()
            return low | high << 8
        }
        let rate = flags & 0x01 != 0 ? try u16() : try u8()
        let contact: Contact = flags & 0x04 == 0 ? .unsupported : (flags & 0x02 != 0 ? .detected : .notDetected)
        let energy = flags & 0x08 != 0 ? try u16() : nil
        var intervals: [UInt16] = []
        if flags & 0x10 != 0 {
            guard (value.count - index) % 2 == 0 else { throw .oddRRIntervals }
            while index < value.count { intervals.append(try u16()) }
        }
        return HeartRateMeasurement(beatsPerMinute: rate, contact: contact, energyExpended: energy, rrIntervals: intervals)
    }

    /// The value a sensor sends for this measurement (8-bit rate when it fits).
    public func encode() -> [UInt8] {
        var flags: UInt8 = beatsPerMinute > 0xFF ? 0x01 : 0
        switch contact {
        case .unsupported: break
        case .notDetected: flags |= 0x04
        case .detected: flags |= 0x06
        }
        if energyExpended != nil { flags |= 0x08 }
        if !rrIntervals.isEmpty { flags |= 0x10 }
        var out: [UInt8] = [flags]
        if beatsPerMinute > 0xFF { out += [UInt8(beatsPerMinute & 0xFF), UInt8(beatsPerMinute >> 8)] } else { out.append(UInt8(beatsPerMinute)) }
        if let energyExpended { out += [UInt8(energyExpended & 0xFF), UInt8(energyExpended >> 8)] }
        for interval in rrIntervals { out += [UInt8(interval & 0xFF), UInt8(interval >> 8)] }
        return out
    }
}
