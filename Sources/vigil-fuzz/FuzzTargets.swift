import Foundation
import VigilAccess
import VigilAlarmCentre
import VigilCalls
import VigilCore
import VigilEvents
import VigilExposure
import VigilGATT
import VigilHubProtocol
import VigilJ2735
import VigilLog
import VigilNode
import VigilRadio

/// The libFuzzer targets (docs/testing.md "Fuzzing"): every parser of bytes from outside the box, each a
/// function of one input that must return, never trap, and keep what it promises. `scripts/fuzz`
/// builds this executable with `-sanitize=fuzzer,address` and runs each target; `VIGIL_FUZZ_TARGET`
/// names the one to run. Seeds are in `Fuzz/corpus/TARGET/`.
enum FuzzTargets {
    static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "hci-event": hciEvent,
        "advertising-data": advertisingData,
        "alert-frame": alertFrame,
        "event-codec": eventCodec,
        "key-export": keyExport,
        "upload-batch": uploadBatch,
        "lmdb-file": lmdbFile,
        "btsnoop-file": btsnoopFile,
        "configuration": configuration,
        "control-command": controlCommand,
        "web-form": webForm,
        "att-pdu": attPDU,
        "gatt-values": gattValues,
        "j2735": j2735,
        "sms-inbox": smsInbox,
        "dc09-reply": dc09Reply,
        "mgmt-event": managementEvent,
        "sensor-keys": sensorKeys,
        "signed-frame": signedFrame,
        "box-certificate": boxCertificate,
        "revocation": revocation,
        "cap": cap,
    ]

    /// A packet on the kernel's management channel (decision 0005): never a trap; a long-term key
    /// parsed from it is one that the Load Long Term Keys command carries back unchanged.
    static func managementEvent(_ bytes: [UInt8]) {
        guard let event = try? ManagementEvent.parse(bytes) else { return }
        if case .newLongTermKey(_, _, let key) = event {
            check((try? LongTermKey(parsing: key.encoded[...])) == key, "a parsed key encodes back to itself")
            let load = ManagementCommand.loadLongTermKeys([key]).packet(index: 0)
            check(load.count == 6 + 2 + LongTermKey.encodedLength, "Load Long Term Keys with one key is 44 bytes")
        }
    }

    /// The box's stored sensor keys (DATA/sensor-keys, which a damaged card can garble): never a
    /// trap; the keys parsed are written and read back the same, with no problem reported.
    static func sensorKeys(_ bytes: [UInt8]) {
        let (keys, _) = SensorKeyFile.parse(String(decoding: bytes, as: UTF8.self))
        let again = SensorKeyFile.parse(SensorKeyFile.format(keys))
        check(again.problems.isEmpty, "written keys read back without problems")
        check(Set(again.keys) == Set(keys), "written keys read back the same")
    }

    /// An inbox file of gammu-smsd (its name, its content in each format) and the reply it
    /// carries, as anyone with a phone can send it: never a trap, and every promise of the
    /// parsers kept (SMSFuzz: a number is E.164, a reply's code is a letter and four digits ...).
    static func smsInbox(_ bytes: [UInt8]) {
        for broken in SMSFuzz.brokenPromises(bytes) { check(false, broken) }
    }

    /// A reply from an alarm receiving centre (or whatever answers on its port): framing, CRC,
    /// length, sequence, account, decryption, the splitter; never a trap, every promise kept.
    static func dc09Reply(_ bytes: [UInt8]) {
        for broken in DC09Fuzz.brokenPromises(bytes) { check(false, broken) }
    }

    /// A payload from the regional hazard feed: a J2735 MessageFrame raw or in a GeoRoutedMsg,
    /// its value as a PSM or TIM, and the input itself as either. Promises: a frame decoded
    /// encodes to one that decodes to the same id and value; a TIM's path has at most 63 points
    /// a region.
    static func j2735(_ bytes: [UInt8]) {
        if let frame = try? MessageFrame.decode(bytes) {
            check((try? MessageFrame.decode(frame.encode())) == frame, "a decoded MessageFrame encodes back to itself")
            _ = try? PersonalSafetyMessage.decode(frame.value)
        }
        _ = try? PersonalSafetyMessage.decode(bytes)
        if let tim = try? TravelerInformation.decode(bytes) {
            check(tim.frames.allSatisfy { $0.regions.allSatisfy { $0.points.count <= 63 } }, "a region's path has at most 63 points")
            for frame in tim.frames { _ = frame.startMicroseconds(nowMicroseconds: 1_764_201_600_000_000) }
        }
        _ = try? FeedMessage.decode(bytes, encoding: .raw)
        _ = try? FeedMessage.decode(bytes, encoding: .geoRouted)
    }

    /// An HCI packet from the controller (H4: the type byte first), as the radio reads it.
    static func hciEvent(_ bytes: [UInt8]) {
        var parser = HCIEventParser()
        _ = parser.parse(bytes, timeMicroseconds: 1)
        _ = parser.parse([0x04] + bytes, timeMicroseconds: 2)
    }

    /// Advertising data (length-type-value structures) as any device in range sends it.
    static func advertisingData(_ bytes: [UInt8]) {
        var counts = AdvertisingDataParser.Counts()
        let (summary, _) = AdvertisingDataParser.summarize(bytes, connectable: bytes.first.map { $0 & 1 == 1 } ?? false, counts: &counts)
        check(summary.serviceUuids128.count <= AdvertisingDataParser.maximumUUIDs128, "at most \(AdvertisingDataParser.maximumUUIDs128) 128-bit UUIDs kept")
    }

    static let frameKey: AlertFrameKey? = try? AlertFrameKey(shelterKey: [UInt8](repeating: 0x5A, count: 32))

    /// An alert frame heard over the air: decoded as it comes (almost always refused by its tag),
    /// and the same fields encoded with the key and decoded back (the parser behind the tag).
    static func alertFrame(_ bytes: [UInt8]) {
        guard let key = frameKey else { return }
        _ = try? AlertFrame.decode(bytes, key: key)
        guard bytes.count >= 14, let type = AlertFrame.FrameType(rawValue: bytes[0] % 10 + 1) else { return }
        func be(_ range: Range<Int>) -> UInt32 { bytes[range].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let location = bytes.count >= 22 && !type.refersToAnotherAlert
            ? AlertFrame.Coordinates(latitudeE7: Int32(bitPattern: be(14..<18)), longitudeE7: Int32(bitPattern: be(18..<22))) : nil
        let frame = AlertFrame(type: type, severity: AlertSeverity(rawValue: Int(bytes[1] & 3)) ?? .unspecified, hops: bytes[1] >> 2 & 7,
                               origin: be(2..<6), counter: be(6..<9) & 0xFF_FFFF, expirySeconds: be(9..<13), location: location)
        guard let encoded = try? frame.encode(key: key) else { return }
        guard let decoded = try? AlertFrame.decode(encoded, key: key) else { fail("a frame this box encoded does not decode") }
        check(decoded.type == frame.type && decoded.origin == frame.origin && decoded.counter == frame.counter
              && decoded.expirySeconds == frame.expirySeconds && decoded.hops == frame.hops, "a frame decodes to what was encoded")
    }

    /// An event payload of any kind (the log's records, the hub's feed items): the first byte
    /// picks the kind. What decodes encodes back to bytes that decode to the same.
    static func eventCodec(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let kind = UInt32(first % 64)
        guard let body = try? EventCodec.decode(kind: kind, payload: Array(bytes.dropFirst()), sequence: 1) else { return }
        let (again, payload) = EventCodec.encode(body)
        // Compared as bytes, not values: a stored NaN (a check-in value) is kept as it was, and NaN
        // is not equal to itself. What was decoded must encode to a fixed point.
        guard let back = try? EventCodec.decode(kind: again, payload: payload, sequence: 1) else {
            fail("kind \(kind): what the codec encodes, it decodes")
        }
        let (kindBack, payloadBack) = EventCodec.encode(back)
        check(kindBack == again && payloadBack == payload, "kind \(kind): decode, encode, decode, encode gives the same bytes")
        // What the log holds is applied: a decodable but hostile record must not trap the
        // projections or the exposure contacts (compacted sightings carry sums and offsets).
        let event = Event(sequence: 7, timeMicroseconds: 1_800_000_000_000_000, body: body)
        var state = Projections()
        state.apply(event)
        // Every device the record put in the list (a compaction's or a retention's stays) is then
        // heard again, so what it carried is added to, and later deleted: a stay with its counts
        // at their maxima must saturate, never trap.
        let heardAgain = ScanBatch.packing(state.devices.sorted.map { d in
            var hit = ScanHit()
            hit.address = d.address & 0xFFFF_FFFF_FFFF
            hit.addressType = d.addressType == 1 ? .addressRandom : .addressPublic
            hit.count = 1
            hit.rssiMin = -60; hit.rssiMax = -60; hit.rssiSum = -60
            return hit
        }).batch
        if heardAgain.count > 0 {
            state.apply(Event(sequence: 8, timeMicroseconds: event.timeMicroseconds, body: .scanBatch(heardAgain)))
            var sightings = ScanSightings()
            sightings.spanStartUs = event.timeMicroseconds - event.timeMicroseconds % 600_000_000
            sightings.spanEndUs = sightings.spanStartUs + 600_000_000
            sightings.stays = state.devices.stays(at: event.timeMicroseconds + 1, reaching: sightings.spanEndUs)
            state.apply(Event(sequence: 9, timeMicroseconds: event.timeMicroseconds + 1, body: .scanSightings(sightings)))
        }
        var contacts = ExposureContacts()
        if case .scanSightings(let s) = body { contacts.noteCompaction(s) }
        contacts.apply(event)
        for track in contacts.tracks.values {
            _ = ExposureContacts.windows(track.instances, txPower: nil, settings: contacts.settings)
        }
        _ = contacts.sightingTracks()
    }

    /// A diagnosis-key export (export.bin) and a signature file, as the hub or a USB stick gives them.
    static func keyExport(_ bytes: [UInt8]) {
        let split = bytes.first.map { Int($0) } ?? 0
        let bin = Array(bytes.dropFirst().dropLast(min(split, max(0, bytes.count - 1))))
        let sig = Array(bytes.suffix(min(split, max(0, bytes.count - 1))))
        _ = try? DiagnosisKeyFile(exportBin: Array(bytes))
        _ = try? DiagnosisKeyImport.parse(exportBin: Array(bytes), exportSig: nil, verifier: ExportSignatureVerifier(keys: []), allowUnsigned: true)
        _ = try? DiagnosisKeyImport.parse(exportBin: bin, exportSig: sig, verifier: ExportSignatureVerifier(keys: []))
    }

    /// An upload as a box sends it, in binary and in JSON, as the hub reads it.
    static func uploadBatch(_ bytes: [UInt8]) {
        if let batch = try? UploadBatch(protobuf: bytes), let again = try? batch.protobuf() {
            check((try? UploadBatch(protobuf: again)) == batch, "a binary batch read back is the same")
        }
        _ = try? JSONDecoder().decode(UploadBatch.self, from: Data(bytes))
        _ = try? JSONDecoder().decode(FeedAnswer.self, from: Data(bytes))
        // The same bytes as a feed stream, in pieces the first byte sizes: the lines come out
        // whole whatever the pieces, and each is read as the box reads it.
        let piece = max(1, Int(bytes.first ?? 1))
        var whole = FeedLines(maximumLength: 4_096), split = FeedLines(maximumLength: 4_096)
        let all = try? whole.take(bytes)
        var pieces: [[UInt8]]? = []
        var start = 0
        while start < bytes.count, pieces != nil {
            let end = min(bytes.count, start + piece)
            if let lines = try? split.take(bytes[start..<end]) { pieces? += lines } else { pieces = nil }
            start = end
        }
        check((all == nil) == (pieces == nil), "a line too long is found whatever the pieces")
        if let all, let pieces { check(all == pieces, "the lines are the same whatever the pieces") }
        for line in all ?? [] { _ = try? JSONDecoder().decode(FeedAnswer.self, from: Data(line)) }
        // The hub's Date header (the box's clock when its own is not synchronised): a time from
        // 1970 on, or none.
        let date = String(decoding: bytes.prefix(64), as: UTF8.self)
        if let seconds = HTTPDate.seconds(date) {
            check(date.utf8.count == 29 && seconds < 253_402_300_800, "only an IMF-fixdate before the year 10000 is a time")
        }
    }

    /// An event log's data.mdb as a failing card left it: `vigil log check` walks it and salvage
    /// scans its every page, without LMDB.
    static func lmdbFile(_ bytes: [UInt8]) {
        guard let reader = try? LMDBFileReader.inMemory(bytes) else { return }
        if let report = try? LogCheck.check(reader: reader, transaction: nil) {
            check(report.records >= report.unchecked, "unchecked records are among the records")
            check(report.records == 0 || report.firstSequence <= report.lastSequence, "the first record checked is not after the last")
            check(report.unreachable.allSatisfy { $0.first <= $0.last }, "every range in doubt is a range")
        }
        var page: UInt64 = 2
        while page < min(reader.pageCount, 64) {
            _ = reader.leafEntries(page: page, lastPage: reader.pageCount - 1)
            page += 1
        }
    }

    /// A Bluetooth capture (`vigil radio replay`, a box's snoop file) as someone hands it over.
    static func btsnoopFile(_ bytes: [UInt8]) {
        let path = NSTemporaryDirectory() + "vigil-fuzz-\(getpid()).btsnoop"
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { return }
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard let reader = try? BTSnoopReader(path: path) else { return }
        var records = 0
        while let record = try? reader.next() {
            check(record.packet.count <= BTSnoop.maximumPacketLength, "a record is never longer than a packet can be")
            records += 1
        }
        check(records * BTSnoop.recordHeaderLength <= bytes.count, "records come from the bytes")
    }

    /// A configuration file (YAML) as a volunteer edits it.
    static func configuration(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        _ = try? NodeConfiguration.load(text: text, file: "fuzz.yaml")
    }

    /// A line on the control socket (from the node's own user or root, who may still send junk).
    static func controlCommand(_ bytes: [UInt8]) {
        guard let command = try? JSONDecoder().decode(NodeCommand.self, from: Data(bytes)) else { return }
        guard let again = try? JSONEncoder().encode(command) else { fail("a decoded command encodes") }
        check((try? JSONDecoder().decode(NodeCommand.self, from: again)) == command, "a command encoded decodes to itself")
    }

    /// What a browser or anyone on the shelter's network sends the box's page: a form body (every
    /// action, the sign-in), and a past moment typed into the time-travel field. Every field read
    /// back comes out of the HTML escape with no character that could end an element or attribute.
    static func webForm(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        if let fields = FormFields.parse(text) {
            for (name, value) in fields {
                let escaped = HTMLText.escape(name + value)
                check(!escaped.contains(where: { "<>\"'".contains($0) }), "escaped text holds no markup character")
            }
        }
        let now: UInt64 = 1_790_000_000_000_000
        if case .time(let t)? = try? PastMoment.parse(text, nowMicroseconds: now),
           text.trimmingCharacters(in: .whitespaces).hasPrefix("-") || text.hasSuffix(" ago") {
            check(t <= now, "a duration ago is never in the future")
        }
    }

    static let gattDatabase = GATTDatabase(deviceName: "Vigil fuzz", services: [
        GATTService(uuid: GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!, characteristics: [
            GATTCharacteristic(uuid: GATTUUID("7E57C001-2C8F-4F3C-9F91-8577E1891234")!, properties: [.notify, .read], value: [1, 2, 3]),
            GATTCharacteristic(uuid: GATTUUID("7E57C002-2C8F-4F3C-9F91-8577E1891234")!, properties: [.write, .writeWithoutResponse], maximumWriteLength: 300),
        ]),
        GATTService(uuid: .heartRateService, characteristics: [
            GATTCharacteristic(uuid: .heartRateMeasurement, properties: [.notify, .indicate]),
        ]),
    ])

    /// What a peer on an LE link sends over ATT: the input as one PDU (what parses encodes back to
    /// itself), then as a conversation (each part after a length byte) with this box's GATT server
    /// and client on one bearer. Every PDU the box sends parses and fits the MTU; the MTU stays in
    /// range; the client's queue stays bounded.
    static func attPDU(_ bytes: [UInt8]) {
        if let pdu = try? ATTPDU.parse(bytes) {
            check((try? ATTPDU.parse(pdu.encode())) == pdu, "a parsed PDU encodes to bytes that parse to it")
        }
        var server = GATTServer(database: gattDatabase, offeredMTU: Int(bytes.first ?? 0) * 3)
        var client = GATTClient()
        func sent(_ pdu: [UInt8], mtu: Int) {
            check((try? ATTPDU.parse(pdu)) != nil, "what the box sends parses")
            check(pdu.count <= mtu, "what the box sends fits the MTU (\(pdu.count) > \(mtu))")
        }
        var index = 1
        while index < bytes.count {
            let length = Int(bytes[index])
            index += 1
            let part = Array(bytes[index ..< min(index + length, bytes.count)])
            index += length
            if length % 7 == 3, let started = client.start([.discover(service: nil), .read(handle: UInt16(length)),
                                                            .write(handle: 15, value: [UInt8](repeating: 9, count: length * 2)),
                                                            .exchangeMTU(UInt16(length * 4))][length % 4]) {
                for case .send(let pdu) in started.outputs { sent(pdu, mtu: client.mtu) }
            }
            if ATTRole.of(opcode: part.first ?? 0) == .server {
                for output in server.receive(part) {
                    switch output {
                    case .send(let pdu): sent(pdu, mtu: server.mtu)
                    case .written(_, let value, let completion):
                        check(value.count <= 300, "a written value keeps to its characteristic's limit")
                        if let completion, let pdu = server.completeWrite(completion, error: length % 5 == 0 ? .rateExceeded : nil) {
                            sent(pdu, mtu: server.mtu)
                        }
                        // A completion answered twice answers nothing the second time.
                        if let completion { check(server.completeWrite(completion) == nil, "a value is answered once") }
                    default: break
                    }
                }
                if let pdu = try? server.notification(3, Array(part.prefix(server.mtu - 3))) { sent(pdu, mtu: server.mtu) }
                if let pdu = try? server.indication(5, [UInt8](repeating: 1, count: min(part.count, server.mtu - 3))) { sent(pdu, mtu: server.mtu) }
            } else {
                for case .send(let pdu) in client.receive(part) { sent(pdu, mtu: client.mtu) }
            }
            check((ATTPDU.defaultMTU ... ATTPDU.maximumMTU).contains(server.mtu), "the server's MTU stays in range")
            check((ATTPDU.defaultMTU ... ATTPDU.maximumMTU).contains(client.mtu), "the client's MTU stays in range")
            check(client.pending <= GATTClient.queueLimit + 1, "the client's queue is bounded")
        }
        _ = client.cancelAll()
    }

    /// Values peers write or notify over GATT: a heart-rate measurement, a message in parts (the
    /// input split where a byte is 0xFD or 0xFE), a phone's JSON message. What parses encodes back
    /// to itself; what the assembler keeps stays within its limit.
    static func gattValues(_ bytes: [UInt8]) {
        if let measurement = try? HeartRateMeasurement.parse(bytes) {
            check((try? HeartRateMeasurement.parse(measurement.encode())) == measurement, "a heart-rate measurement encodes back to itself")
        }
        var assembler = MessageAssembler(limit: 64)
        var start = 0
        for index in bytes.indices where index > start && (bytes[index] == MessageFrames.more || bytes[index] == MessageFrames.last) {
            if case .message(let message) = assembler.add(Array(bytes[start ..< index])) { check(message.count <= 64, "an assembled message keeps to the limit") }
            check(assembler.held <= 64, "the assembler holds at most its limit")
            start = index
        }
        for part in MessageFrames.split(bytes, valueLength: Int(bytes.first ?? 0) % 40 + 2) {
            check(part.count <= Int(bytes.first ?? 0) % 40 + 2, "a part fits its value")
        }
        if let message = try? PhoneMessage.parse(bytes) {
            check((try? PhoneMessage.parse(message.encoded())) == message, "a phone message encodes back to itself")
        }
    }

    static func check(_ condition: Bool, _ promise: @autoclosure () -> String) {
        if !condition { fail(promise()) }
    }

    /// A broken promise: a crash libFuzzer records with its input.
    static func fail(_ promise: String) -> Never {
        FileHandle.standardError.write(Data("vigil-fuzz: broken: \(promise)\n".utf8))
        abort()
    }
}
