import Foundation
import SwiftProtobuf
import VigilEvents

/// The golden-file formats described in Golden/README.md.
enum GoldenFormat {
    struct Record: Equatable {
        var kind: UInt32
        var timeMicroseconds: UInt64
        var payload: [UInt8]
    }

    // MARK: events.bin: repeated (varint kind, varint time, varint length, payload)

    static func encode(_ records: [Record]) -> [UInt8] {
        var out: [UInt8] = []
        for r in records {
            appendVarint(UInt64(r.kind), to: &out)
            appendVarint(r.timeMicroseconds, to: &out)
            appendVarint(UInt64(r.payload.count), to: &out)
            out += r.payload
        }
        return out
    }

    static func decode(_ bytes: [UInt8]) throws -> [Record] {
        var records: [Record] = []
        var offset = 0
        while offset < bytes.count {
            let kind = try readVarint(bytes, &offset)
            let time = try readVarint(bytes, &offset)
            let length = Int(try readVarint(bytes, &offset))
            guard kind <= UInt64(UInt32.max), length <= bytes.count - offset else {
                throw GoldenFormatError("events.bin: bad record at byte \(offset)")
            }
            records.append(Record(kind: UInt32(kind), timeMicroseconds: time, payload: Array(bytes[offset..<offset + length])))
            offset += length
        }
        return records
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func readVarint(_ bytes: [UInt8], _ offset: inout Int) throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count && shift < 64 {
            let byte = bytes[offset]
            offset += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        throw GoldenFormatError("events.bin: truncated varint at byte \(offset)")
    }

    // MARK: events.jsonl: {"kind":NAME,"timeMicroseconds":N,"payload":PROTOBUF-JSON}

    static func jsonLine(timeMicroseconds: UInt64, body: EventBody) throws -> String {
        let payload = try body.message.jsonString()
        return "{\"kind\":\"\(body.kind.name)\",\"timeMicroseconds\":\(timeMicroseconds),\"payload\":\(payload)}"
    }

    struct ExpectedEvent {
        var kind: EventKind
        var timeMicroseconds: UInt64
        var body: EventBody
    }

    static func parseLine(_ line: String) throws -> ExpectedEvent {
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let kindName = object["kind"] as? String,
              let time = (object["timeMicroseconds"] as? NSNumber)?.uint64Value,
              object["payload"] != nil
        else { throw GoldenFormatError("events.jsonl: bad line \(line)") }
        guard let kind = EventKind(name: kindName) else { throw GoldenFormatError("events.jsonl: unknown kind \(kindName)") }
        // The payload is the last member, so its text runs from after the key to the closing brace.
        guard let keyRange = line.range(of: "\"payload\":"), line.hasSuffix("}") else {
            throw GoldenFormatError("events.jsonl: payload is not the last member in \(line)")
        }
        let payloadJSON = String(line[keyRange.upperBound..<line.index(before: line.endIndex)])
        return ExpectedEvent(kind: kind, timeMicroseconds: time, body: try EventBody(kind: kind, payloadJSON: payloadJSON))
    }

    // MARK: Files

    /// The Golden/ folder in the source tree (for writing).
    static func sourceDirectory(filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    }

    /// The Golden/ folder as copied into the test bundle (for reading).
    static func bundledDirectory() throws -> URL {
        guard let url = Bundle.module.url(forResource: "Golden", withExtension: nil) else {
            throw GoldenFormatError("Golden/ is missing from the test bundle")
        }
        return url
    }

    /// The bytes and lines the current code produces for a version's golden events.
    static func generate(_ events: [(timeMicroseconds: UInt64, body: EventBody)]) throws -> (bin: [UInt8], jsonl: String) {
        var records: [Record] = []
        var lines: [String] = []
        for (time, body) in events {
            let (kind, payload) = EventCodec.encode(body)
            records.append(Record(kind: kind, timeMicroseconds: time, payload: payload))
            lines.append(try jsonLine(timeMicroseconds: time, body: body))
        }
        return (encode(records), lines.joined(separator: "\n") + "\n")
    }
}
