import Foundation
import Testing
@testable import VigilRadio
import VigilTestSupport

/// btsnoop captures: what the writer puts on disk, rotation, and how the reader treats files that
/// are cut short, corrupt or not btsnoop at all.
@Suite struct BTSnoopTests {
    // Recorded HCI packets, H4 type byte first.
    static let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    static let resetComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
    static let scanEnable: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00]
    static let scanEnableComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]
    static let advertisingReport: [UInt8] = [0x04, 0x3E, 0x14, 0x02, 0x01,
                                             0x00, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                             0x08, 0x02, 0x01, 0x06, 0x04, 0x09, 0x54, 0x61, 0x67,
                                             0xC4]
    // LE Connection Complete, handle 0x0040 to 11:22:33:44:55:66, then ATT Exchange MTU (512) on it:
    // without the connection Wireshark flags the ACL packet as outside any connection.
    static let connectionComplete: [UInt8] = [0x04, 0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x00,
                                              0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                              0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00]
    static let aclOut: [UInt8] = [0x02, 0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x02, 0x00, 0x02]
    static let t0: UInt64 = 1_700_000_000_123_456

    /// The session of the tshark check: commands and data both ways, one microsecond apart.
    static let session: [([UInt8], BTSnoopDirection)] = [
        (reset, .sent), (resetComplete, .received), (scanEnable, .sent), (scanEnableComplete, .received),
        (advertisingReport, .received), (connectionComplete, .received), (aclOut, .sent),
    ]

    @Test func sentAndReceivedPacketsReadBackWithTheirDirectionKindAndTime() throws {
        let dir = try CaptureDirectory()
        let writer = try BTSnoopWriter(path: dir.path("hci.btsnoop"))
        for (i, (packet, direction)) in Self.session.enumerated() {
            try writer.write(packet: packet, direction: direction, timeMicroseconds: Self.t0 + UInt64(i))
        }
        try writer.close()

        let reader = try BTSnoopReader(path: dir.path("hci.btsnoop"))
        let records = try reader.readAll()
        #expect(records.map(\.packet) == Self.session.map(\.0))
        #expect(records.map(\.direction) == Self.session.map(\.1))
        #expect(records.map(\.flags) == [2, 3, 2, 3, 3, 3, 0], "bit 0 received, bit 1 command or event")
        #expect(records.map(\.isCommandOrEvent) == [true, true, true, true, true, true, false])
        #expect(records.map(\.timeMicroseconds) == (0..<7).map { Self.t0 + UInt64($0) })
        #expect(records.allSatisfy { $0.originalLength == UInt32($0.packet.count) && $0.cumulativeDrops == 0 })
        #expect(reader.leftoverBytes == 0)
        #expect(try reader.next() == nil, "the end stays the end")
    }

    @Test func theFileHeaderAndARecordAreByteExact() throws {
        let dir = try CaptureDirectory()
        let writer = try BTSnoopWriter(path: dir.path("hci.btsnoop"))
        try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 1)
        try writer.close()
        let stamp: [UInt8] = [0x00, 0xDC, 0xDD, 0xB3, 0x0F, 0x2F, 0x80, 0x01]  // the Unix epoch + 1 µs
        #expect(try dir.bytes("hci.btsnoop") ==
            Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x03, 0xEA]  // version 1, datalink 1002
            + [0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 0] + stamp + Self.reset)
    }

    @Test func recordsReachTheFileAtFlushNotPerPacket() throws {
        let dir = try CaptureDirectory()
        let writer = try BTSnoopWriter(path: dir.path("hci.btsnoop"))
        try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: Self.t0)
        #expect(try dir.bytes("hci.btsnoop").isEmpty, "buffered, header included")
        try writer.flush()
        #expect(try dir.bytes("hci.btsnoop").count == 16 + 24 + 4)
        try writer.flush()
        #expect(try dir.bytes("hci.btsnoop").count == 16 + 24 + 4, "an empty flush writes nothing")
    }

    @Test func aFullBufferIsWrittenWithoutWaitingForFlush() throws {
        let dir = try CaptureDirectory()
        let writer = try BTSnoopWriter(path: dir.path("hci.btsnoop"), flushThreshold: 80)
        try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 1)
        #expect(try dir.bytes("hci.btsnoop").isEmpty)
        try writer.write(packet: Self.advertisingReport, direction: .received, timeMicroseconds: 2)
        #expect(try dir.bytes("hci.btsnoop").count == 16 + 24 + 4 + 24 + 23)
    }

    @Test func rotationAtTheCapKeepsNOldFilesEachWithAHeaderAndWholeRecords() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("vigil.btsnoop")
        let cap = 16 + 3 * (24 + 10)  // three 10-byte packets per file
        let writer = try BTSnoopWriter(path: path, maxFileBytes: cap, keepFiles: 2)
        for i in 0..<20 {
            try writer.write(packet: [0x02] + [UInt8](repeating: UInt8(i), count: 9), direction: .received,
                             timeMicroseconds: Self.t0 + UInt64(i))
        }
        try writer.close()

        #expect(writer.rotations == 6)
        #expect(!FileManager.default.fileExists(atPath: path + ".3"), "the oldest were deleted")
        var perFile: [[UInt8]] = []
        for name in ["vigil.btsnoop.2", "vigil.btsnoop.1", "vigil.btsnoop"] {
            let bytes = try dir.bytes(name)
            #expect(bytes.count <= cap)
            #expect(Array(bytes.prefix(16)) == [UInt8]("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x03, 0xEA])
            let reader = try BTSnoopReader(path: dir.path(name))
            perFile.append(try reader.readAll().map { $0.packet[1] })
            #expect(reader.leftoverBytes == 0)
        }
        #expect(perFile == [[12, 13, 14], [15, 16, 17], [18, 19]])
        let set = try BTSnoopReader.records(inRotatedSet: path)
        #expect(set.records.map { $0.packet[1] } == Array(12..<20))
        #expect(set.records.map(\.timeMicroseconds) == (12..<20).map { Self.t0 + UInt64($0) })
        #expect(set.leftoverBytes == 0)
    }

    @Test func aPacketLargerThanTheCapGetsAFileOfItsOwn() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("vigil.btsnoop")
        let writer = try BTSnoopWriter(path: path, maxFileBytes: 100, keepFiles: 3)
        try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 1)
        try writer.write(packet: [0x02] + [UInt8](repeating: 7, count: 199), direction: .sent, timeMicroseconds: 2)
        try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 3)
        try writer.close()
        #expect(try BTSnoopReader.records(inRotatedSet: path).records.map(\.packet.count) == [4, 200, 4])
        #expect(try dir.bytes("vigil.btsnoop.1").count == 16 + 24 + 200)
    }

    @Test func anEarlierCaptureAtThePathIsRotatedAwayNotAppendedTo() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("vigil.btsnoop")
        let first = try BTSnoopWriter(path: path)
        try first.write(packet: Self.reset, direction: .sent, timeMicroseconds: 1)
        try first.close()
        let second = try BTSnoopWriter(path: path)
        try second.write(packet: Self.resetComplete, direction: .received, timeMicroseconds: 2)
        try second.close()
        #expect(try BTSnoopReader(path: path + ".1").readAll().map(\.packet) == [Self.reset])
        #expect(try BTSnoopReader(path: path).readAll().map(\.packet) == [Self.resetComplete])
    }

    @Test func aCaptureCutByAPowerLossYieldsItsWholeRecordsThenTheLeftover() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("hci.btsnoop")
        let writer = try BTSnoopWriter(path: path)
        for (i, (packet, direction)) in Self.session.prefix(3).enumerated() {
            try writer.write(packet: packet, direction: direction, timeMicroseconds: UInt64(i))
        }
        try writer.close()
        let whole = try dir.bytes("hci.btsnoop")
        // Cut inside the last packet, then inside the last record's header.
        for (cut, leftover) in [(3, 24 + 6 - 3), (24 + 6 - 10, 10)] {
            try Data(whole.dropLast(cut)).write(to: URL(fileURLWithPath: path))
            let reader = try BTSnoopReader(path: path)
            #expect(try reader.readAll().map(\.packet) == [Self.reset, Self.resetComplete])
            #expect(reader.leftoverBytes == leftover)
        }
        #expect(try BTSnoopReader.records(inRotatedSet: path).leftoverBytes == 10)
    }

    @Test func anEmptyNewestFileOfARotatedSetIsACaptureCutBeforeItsFirstFlush() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("vigil.btsnoop")
        let writer = try BTSnoopWriter(path: path)
        try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 1)
        try writer.close()
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let set = try BTSnoopReader.records(inRotatedSet: path)
        #expect(set.records.map(\.packet) == [Self.reset])
        #expect(set.leftoverBytes == 0)
    }

    @Test(arguments: [
        ("pcap", [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0], BTSnoopError.notBTSnoop(path: "")),
        ("text", Array("hello".utf8), .notBTSnoop(path: "")),
        ("empty", [], .truncatedHeader(path: "", bytes: 0)),
        ("short", Array("btsnoop".utf8) + [0, 0, 0], .truncatedHeader(path: "", bytes: 10)),
        ("version 2", Array("btsnoop".utf8) + [0, 0, 0, 0, 2, 0, 0, 0x03, 0xEA], .unsupportedVersion(path: "", version: 2)),
        ("unencapsulated HCI", Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x03, 0xE9], .unsupportedDatalink(path: "", datalink: 1001)),
    ] as [(String, [UInt8], BTSnoopError)])
    func filesThatAreNotH4BTSnoopAreRefusedWithTheReason(name: String, bytes: [UInt8], expected: BTSnoopError) throws {
        let dir = try CaptureDirectory()
        let path = dir.path("capture")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(throws: expected.at(path)) { _ = try BTSnoopReader(path: path) }
    }

    @Test func aMissingFileIsAnOpenErrorNamingIt() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("missing.btsnoop")
        #expect { _ = try BTSnoopReader(path: path) } throws: { error in
            guard case .io(path, "open", let errno) = error as? BTSnoopError else { return false }
            return errno.rawValue == ENOENT
        }
    }

    @Test(arguments: [
        (UInt32(0x7FFF_FFFF), UInt32(0x7FFF_FFFF), "absurd length"),
        (UInt32(65_541), UInt32(65_541), "one byte over the longest H4 packet"),
        (UInt32(10), UInt32(20), "included above original"),
        (UInt32(0), UInt32(0), "no H4 type byte"),
    ])
    func aRecordThatCannotBeAPacketIsCorruptAndNotAllocated(original: UInt32, included: UInt32, _: String) throws {
        let dir = try CaptureDirectory()
        let path = dir.path("hci.btsnoop")
        let writer = try BTSnoopWriter(path: path)
        try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 1)
        try writer.close()
        var bytes = try dir.bytes("hci.btsnoop")
        BTSnoop.appendBigEndian(original, to: &bytes)
        BTSnoop.appendBigEndian(included, to: &bytes)
        bytes += [UInt8](repeating: 0, count: 16) + [0x01, 0x03, 0x0C, 0x00]
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let reader = try BTSnoopReader(path: path)
        #expect(try reader.next()?.packet == Self.reset, "records before it are kept")
        #expect { _ = try reader.next() } throws: { error in
            guard case .corruptRecord(path, let offset, _) = error as? BTSnoopError else { return false }
            return offset == 16 + 24 + 4
        }
    }

    @Test func theWriterRefusesPacketsNoHCIPacketCanBeAndStaysUsable() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("hci.btsnoop")
        let writer = try BTSnoopWriter(path: path)
        #expect(throws: BTSnoopError.invalidPacket(length: 0)) {
            try writer.write(packet: [], direction: .sent, timeMicroseconds: 1)
        }
        let huge = [UInt8](repeating: 2, count: BTSnoop.maximumPacketLength + 1)
        #expect(throws: BTSnoopError.invalidPacket(length: huge.count)) {
            try writer.write(packet: huge, direction: .sent, timeMicroseconds: 1)
        }
        let longest = [UInt8](repeating: 2, count: BTSnoop.maximumPacketLength)
        try writer.write(packet: longest, direction: .received, timeMicroseconds: 2)
        try writer.close()
        #expect(try BTSnoopReader(path: path).readAll().map(\.packet) == [longest])
        #expect(throws: BTSnoopError.closed(path: path)) {
            try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 3)
        }
        try writer.close()  // twice is harmless
    }

    @Test func limitsThatCannotHoldARecordAreRefused() throws {
        let dir = try CaptureDirectory()
        #expect(throws: BTSnoopError.self) { _ = try BTSnoopWriter(path: dir.path("a"), maxFileBytes: 40) }
        #expect(throws: BTSnoopError.self) { _ = try BTSnoopWriter(path: dir.path("a"), keepFiles: -1) }
        #expect(!FileManager.default.fileExists(atPath: dir.path("a")), "nothing created")
    }

    @Test func aFailedRotationIsThrownAndEveryLaterWriteThrowsItToo() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("vigil.btsnoop")
        let writer = try BTSnoopWriter(path: path, maxFileBytes: 16 + 24 + 4, keepFiles: 1)
        try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 1)
        // A non-empty directory where the rotated file must go: rename fails (EISDIR), as a full
        // or read-only disk would make it fail in the field.
        try FileManager.default.createDirectory(atPath: path + ".1/x", withIntermediateDirectories: true)
        var first: BTSnoopError?
        do throws(BTSnoopError) {
            try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 2)
        } catch {
            first = error
        }
        let failure = try #require(first)
        guard case .io(_, "rename", _) = failure else { Issue.record("\(failure)"); return }
        #expect(throws: failure) { try writer.write(packet: Self.reset, direction: .sent, timeMicroseconds: 3) }
        #expect(throws: failure) { try writer.flush() }
        #expect(try BTSnoopReader(path: path).readAll().map(\.packet) == [Self.reset], "the record before is on disk")
    }

    @Test func theYear2000IsTheFormatsWellKnownStamp() {
        // The btsnoop description gives midnight, 1 January 2000 as 0x00E03AB44A676000.
        let y2k = BTSnoopRecord(packet: Self.reset, originalLength: 4, flags: 2, cumulativeDrops: 0,
                                timestamp: 0x00E0_3AB4_4A67_6000)
        #expect(y2k.timeMicroseconds == 946_684_800_000_000)
    }

    @Test func aStampBeforeTheUnixEpochReadsAsZeroAndKeepsItsRawValue() throws {
        let record = BTSnoopRecord(packet: Self.reset, originalLength: 4, flags: 2, cumulativeDrops: 0, timestamp: 5)
        #expect(record.timeMicroseconds == 0)
        #expect(record.timestamp == 5)
    }

    /// Wireshark's dissector is the reference reader: every packet must dissect without a
    /// malformed-packet or error-level expert item. Skipped where tshark is not installed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark")))
    func tsharkDissectsEveryPacketTheWriterRecords() throws {
        let dir = try CaptureDirectory()
        let path = dir.path("hci.btsnoop")
        let writer = try BTSnoopWriter(path: path)
        for (i, (packet, direction)) in Self.session.enumerated() {
            try writer.write(packet: packet, direction: direction, timeMicroseconds: Self.t0 + UInt64(i) * 1_000)
        }
        try writer.close()

        let summary = try tshark(["-r", path])
        let lines = summary.split(separator: "\n")
        #expect(lines.count == Self.session.count, "\(summary)")
        #expect(lines[0].contains("Sent Reset"), "\(summary)")
        #expect(lines[1].contains("Rcvd Command Complete (Reset)"), "\(summary)")
        #expect(lines[2].contains("Sent LE Set Scan Enable"), "\(summary)")
        #expect(lines[4].contains("Rcvd LE Meta (LE Advertising Report)"), "\(summary)")
        #expect(lines[6].contains("Sent Exchange MTU Request"), "\(summary)")
        let utc = try tshark(["-r", path, "-t", "ud", "-c", "1"])
        #expect(utc.contains("2023-11-14 22:13:20.123456"), "Wireshark reads the same wall time: \(utc)")
        let detail = try tshark(["-r", path, "-V"])
        #expect(!detail.contains("Malformed"), "\(detail)")
        #expect(!detail.contains("Severity level: Error"), "\(detail)")
        #expect(detail.contains("BD_ADDR: 11:22:33:44:55:66"), "\(detail)")
    }

    private func tshark(_ arguments: [String]) throws -> String {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/tshark")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self)
    }
}

private extension BTSnoopError {
    /// The same error naming `path` (the argument table cannot know the temporary path).
    func at(_ path: String) -> BTSnoopError {
        switch self {
        case .notBTSnoop: .notBTSnoop(path: path)
        case .truncatedHeader(_, let n): .truncatedHeader(path: path, bytes: n)
        case .unsupportedVersion(_, let v): .unsupportedVersion(path: path, version: v)
        case .unsupportedDatalink(_, let d): .unsupportedDatalink(path: path, datalink: d)
        default: self
        }
    }
}

/// The tests' temporary directory, with the captures' bytes read back.
private struct CaptureDirectory {
    let directory = TemporaryDirectory("btsnoop")
    init() throws {}
    func path(_ name: String) -> String { directory.path(name) }
    func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path(name)))) }
}
