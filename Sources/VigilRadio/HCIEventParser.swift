import VigilEvents

/// Parses HCI event packets from a controller (Bluetooth Core Vol 4 Part E §5.4.4, §7.7) into
/// what the radio needs: advertising reports, command completion with the controller's command
/// credits, hardware errors, and the link events that end connectable advertising (a controller
/// stops advertising once a central connects; the radio starts it again).
///
/// Never traps on input: every length is checked against what is left; a malformed packet or
/// report is counted by kind and skipped, and the well-formed reports of the same packet are kept.
/// The byte layout of a multi-report event follows BlueZ (each report's fields in sequence).
public struct HCIEventParser: Sendable {
    public enum Event: Sendable, Equatable {
        case advertisingReports([AdvertisingReport])
        /// Command Complete: `credits` commands may be sent now; `parameters` start with the status.
        case commandComplete(opcode: UInt16, credits: UInt8, parameters: [UInt8])
        case commandStatus(opcode: UInt16, credits: UInt8, status: UInt8)
        case hardwareError(code: UInt8)
        /// LE (Enhanced) Connection Complete: `peripheral` when a central connected to the box's
        /// advertising (the controller stopped advertising then).
        case connectionComplete(status: UInt8, handle: UInt16, peripheral: Bool, peer: UInt64, peerType: AddressType)
        /// LE Advertising Set Terminated (extended commands): the set stopped, for a connection
        /// when `status` is 0.
        case advertisingSetTerminated(status: UInt8, set: UInt8, connection: UInt16)
        case disconnectionComplete(status: UInt8, handle: UInt16, reason: UInt8)
        /// An event this parser does not need (kept by code for counting).
        case other(code: UInt8)
    }

    public struct Counts: Sendable, Equatable {
        public var packets = 0
        public var truncatedPackets = 0
        public var notEvents = 0
        public var malformedReports = 0
        public var legacyReports = 0
        public var extendedReports = 0
        /// Extended reports whose data came in parts or was truncated (left out).
        public var incompleteReports = 0
        public init() {}
    }

    public private(set) var counts = Counts()
    /// Advertisers (address type and address) whose last report said "incomplete, more to
    /// come": their next report is the rest of a split advertisement, not a whole one, even when it
    /// says "complete". Bounded: a controller interleaves few advertisers' parts.
    private var splitInProgress: Set<UInt64> = []
    private static let splitLimit = 64

    public init() {}

    /// Parses one packet as read from an HCI socket: the packet-type byte (0x04 = event) first.
    /// Returns nil for anything that is not a well-formed event.
    public mutating func parse(_ packet: [UInt8], timeMicroseconds: UInt64) -> Event? {
        counts.packets += 1
        guard packet.first == 0x04 else {
            counts.notEvents += 1
            return nil
        }
        guard packet.count >= 3, packet.count - 3 >= Int(packet[2]) else {
            counts.truncatedPackets += 1
            return nil
        }
        let code = packet[1]
        let body = Array(packet[3..<(3 + Int(packet[2]))])
        switch code {
        case 0x0E: // Command Complete
            guard body.count >= 3 else { counts.truncatedPackets += 1; return nil }
            return .commandComplete(opcode: UInt16(body[1]) | UInt16(body[2]) << 8, credits: body[0],
                                    parameters: Array(body[3...]))
        case 0x0F: // Command Status
            guard body.count >= 4 else { counts.truncatedPackets += 1; return nil }
            return .commandStatus(opcode: UInt16(body[2]) | UInt16(body[3]) << 8, credits: body[1], status: body[0])
        case 0x05: // Disconnection Complete: status, handle, reason
            guard body.count >= 4 else { counts.truncatedPackets += 1; return nil }
            return .disconnectionComplete(status: body[0], handle: (UInt16(body[1]) | UInt16(body[2]) << 8) & 0x0FFF, reason: body[3])
        case 0x10: // Hardware Error
            guard let error = body.first else { counts.truncatedPackets += 1; return nil }
            return .hardwareError(code: error)
        case 0x3E: // LE Meta
            guard let subevent = body.first else { counts.truncatedPackets += 1; return nil }
            switch subevent {
            case 0x02: return .advertisingReports(legacyReports(body, time: timeMicroseconds))
            case 0x0D: return .advertisingReports(extendedReports(body, time: timeMicroseconds))
            case 0x01, 0x0A, 0x29:
                // Connection Complete (19 bytes with the subevent), Enhanced Connection Complete
                // (31) and its v2 (34, Core 5.4): status, handle, role, peer address type, peer
                // address first.
                guard body.count >= (subevent == 0x01 ? 19 : subevent == 0x0A ? 31 : 34) else { counts.truncatedPackets += 1; return nil }
                return .connectionComplete(status: body[1], handle: (UInt16(body[2]) | UInt16(body[3]) << 8) & 0x0FFF,
                                           peripheral: body[4] == 0x01, peer: Self.address(body, at: 6),
                                           peerType: Self.addressType(body[5]))
            case 0x12: // Advertising Set Terminated: status, set, connection handle, events
                guard body.count >= 6 else { counts.truncatedPackets += 1; return nil }
                return .advertisingSetTerminated(status: body[1], set: body[2], connection: (UInt16(body[3]) | UInt16(body[4]) << 8) & 0x0FFF)
            default: return .other(code: code)
            }
        default:
            return .other(code: code)
        }
    }

    /// LE Advertising Report (subevent 0x02): per report, event type, address type, address
    /// (6 bytes, little-endian), data length, data, RSSI.
    private mutating func legacyReports(_ body: [UInt8], time: UInt64) -> [AdvertisingReport] {
        guard body.count >= 2 else { counts.malformedReports += 1; return [] }
        var reports: [AdvertisingReport] = []
        var i = 2
        for _ in 0..<Int(body[1]) {
            guard i + 9 <= body.count else { counts.malformedReports += 1; break }
            let eventType = body[i], addressType = body[i + 1]
            let address = Self.address(body, at: i + 2)
            let length = Int(body[i + 8])
            guard i + 9 + length + 1 <= body.count else { counts.malformedReports += 1; break }
            let data = Array(body[(i + 9)..<(i + 9 + length)])
            let rssi = Int8(bitPattern: body[i + 9 + length])
            i += 10 + length
            counts.legacyReports += 1
            // ADV_IND and ADV_DIRECT_IND are connectable; SCAN_RSP repeats the advertiser's.
            reports.append(AdvertisingReport(address: address, addressType: Self.addressType(addressType), rssi: rssi,
                                             connectable: eventType == 0x00 || eventType == 0x01, data: data,
                                             timeMicroseconds: time))
        }
        return reports
    }

    /// LE Extended Advertising Report (subevent 0x0D): 24 fixed bytes per report, then the data.
    private mutating func extendedReports(_ body: [UInt8], time: UInt64) -> [AdvertisingReport] {
        guard body.count >= 2 else { counts.malformedReports += 1; return [] }
        var reports: [AdvertisingReport] = []
        var i = 2
        for _ in 0..<Int(body[1]) {
            guard i + 24 <= body.count else { counts.malformedReports += 1; break }
            let eventType = UInt16(body[i]) | UInt16(body[i + 1]) << 8
            let addressType = body[i + 2]
            let address = Self.address(body, at: i + 3)
            let txPower = Int8(bitPattern: body[i + 12])
            let rssi = Int8(bitPattern: body[i + 13])
            let length = Int(body[i + 23])
            guard i + 24 + length <= body.count else { counts.malformedReports += 1; break }
            let data = Array(body[(i + 24)..<(i + 24 + length)])
            i += 24 + length
            counts.extendedReports += 1
            // Data status (bits 5-6): a report the controller split over several events, or cut
            // short, is not a whole advertisement; its parts are counted and left out, the last
            // one ("complete") too (a signed frame, 201 bytes, fits one report:
            // docs/signed-frames.md).
            let advertiser = UInt64(addressType) << 48 | address
            let status = eventType >> 5 & 0x03
            if status == 1 {
                if splitInProgress.count >= Self.splitLimit { splitInProgress.removeAll() }
                splitInProgress.insert(advertiser)
            }
            guard status == 0, splitInProgress.remove(advertiser) == nil else {
                if status != 1 { splitInProgress.remove(advertiser) }
                counts.incompleteReports += 1
                continue
            }
            reports.append(AdvertisingReport(address: address, addressType: Self.addressType(addressType), rssi: rssi,
                                             txPower: txPower == 127 ? nil : txPower,
                                             connectable: eventType & 0x0001 != 0, data: data, timeMicroseconds: time))
        }
        return reports
    }

    /// BD_ADDR is sent least significant byte first; Vigil keeps it as printed (MSB first).
    private static func address(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        (0..<6).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << UInt64(8 * $1) }
    }

    /// 0x00 public, 0x01 random, 0x02/0x03 their resolved identities.
    private static func addressType(_ raw: UInt8) -> AddressType {
        raw & 0x01 == 0 ? .addressPublic : .addressRandom
    }
}
