import Foundation
import VigilEvents

/// Parses AD structures (Bluetooth Core Vol 3 Part C §11: length, type, data...) into a summary.
///
/// Never traps on input: a structure whose length runs past the end, or whose body has the wrong
/// size for its type, is counted in `malformed` and skipped; everything well-formed is kept.
public struct AdvertisingDataParser {
    public struct Counts: Sendable, Equatable {
        public var truncated = 0
        public var badLength = 0
        public var emptyStructures = 0
        public init() {}
        public var total: Int { truncated + badLength }
    }

    /// GAEN's service UUID: the service data is the Rolling Proximity Identifier (16 bytes) and
    /// the Associated Encrypted Metadata (4 bytes).
    public static let exposureNotificationUUID: UInt32 = 0xFD6F
    /// 128-bit UUIDs kept per advert (a legacy advert has room for one list of at most 1; an
    /// extended one could carry many): the cap keeps a scan hit small whatever a peer sends.
    public static let maximumUUIDs128 = 4

    /// `vigilUUID`: the service data UUID of Vigil's frames; a presence frame under it (version 1,
    /// type 0, 16-byte identifier) is kept as a contact identifier.
    public static func summarize(_ data: [UInt8], connectable: Bool, vigilUUID: UInt16 = 0xFCF1,
                                 counts: inout Counts) -> (AdvertisementSummary, txPower: Int8?) {
        var summary = AdvertisementSummary()
        summary.connectable = connectable
        var txPower: Int8?
        var i = 0
        while i < data.count {
            let length = Int(data[i])
            if length == 0 {
                // A zero length ends significant data (the rest is padding).
                counts.emptyStructures += 1
                break
            }
            guard i + 1 + length <= data.count else {
                counts.truncated += 1
                break
            }
            let type = data[i + 1]
            let body = data[(i + 2)..<(i + 1 + length)]
            switch type {
            case 0x01: // Flags
                if let f = body.first { summary.flags = UInt32(f) } else { counts.badLength += 1 }
            case 0x02, 0x03: // Incomplete / complete list of 16-bit service UUIDs
                if body.count % 2 != 0 { counts.badLength += 1; break }
                var j = body.startIndex
                while j < body.endIndex {
                    summary.serviceUuids16.append(UInt32(body[j]) | UInt32(body[j + 1]) << 8)
                    j += 2
                }
            case 0x06, 0x07: // Incomplete / complete list of 128-bit service UUIDs (a TrackIT phone's id)
                if body.count % 16 != 0 { counts.badLength += 1; break }
                var j = body.startIndex
                while j < body.endIndex, summary.serviceUuids128.count < Self.maximumUUIDs128 {
                    summary.serviceUuids128.append(Data(body[j..<(j + 16)]))
                    j += 16
                }
            case 0x21: // Service data, 128-bit UUID
                if body.count < 16 { counts.badLength += 1; break }
                if summary.serviceDataUuids128.count < Self.maximumUUIDs128 {
                    summary.serviceDataUuids128.append(Data(body[body.startIndex..<(body.startIndex + 16)]))
                }
            case 0x08, 0x09: // Shortened / complete local name
                // Lossy decoding: a bad byte becomes U+FFFD rather than dropping the name.
                let name = String(decoding: body, as: UTF8.self)
                if type == 0x09 || summary.name.isEmpty { summary.name = String(name.prefix(32)) }
            case 0x0A: // TX power level
                if let p = body.first { txPower = Int8(bitPattern: p) } else { counts.badLength += 1 }
            case 0x16: // Service data, 16-bit UUID
                if body.count < 2 { counts.badLength += 1; break }
                let j = body.startIndex
                let uuid = UInt32(body[j]) | UInt32(body[j + 1]) << 8
                summary.serviceDataUuids16.append(uuid)
                if uuid == exposureNotificationUUID {
                    guard body.count == 22 else { counts.badLength += 1; break }
                    summary.gaenRpi = Data(body[(j + 2)..<(j + 18)])
                    summary.gaenAem = Data(body[(j + 18)..<(j + 22)])
                } else if uuid == UInt32(vigilUUID), body.count == 19, body[j + 2] == 0x10 {
                    summary.vigilPresence = Data(body[(j + 3)..<(j + 19)])
                }
            case 0x19: // Appearance
                if body.count != 2 { counts.badLength += 1; break }
                let j = body.startIndex
                summary.appearance = UInt32(body[j]) | UInt32(body[j + 1]) << 8
            case 0xFF: // Manufacturer specific data: company id first
                if body.count < 2 { counts.badLength += 1; break }
                let j = body.startIndex
                summary.companyID = (UInt32(body[j]) | UInt32(body[j + 1]) << 8) + 1
            default:
                break
            }
            i += 1 + length
        }
        return (summary, txPower)
    }
}
