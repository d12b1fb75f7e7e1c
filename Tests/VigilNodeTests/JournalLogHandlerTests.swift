import Foundation
import Logging
import Testing
import VigilSystem
@testable import VigilNode

/// journald's native protocol (issue 13, item 6), against a socket that speaks it: a datagram a
/// message, each metadata key a field of its own.
@Suite struct JournalLogHandlerTests {
    /// The fields of one datagram, both forms (`NAME=value\n`, and `NAME\n` + length + value + `\n`).
    static func fields(_ bytes: [UInt8]) -> [String: String] {
        var out: [String: String] = [:]
        var i = 0
        while i < bytes.count {
            guard let end = bytes[i...].firstIndex(where: { $0 == 0x0A || $0 == UInt8(ascii: "=") }) else { break }
            let name = String(decoding: bytes[i..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                let stop = bytes[end...].firstIndex(of: 0x0A) ?? bytes.count
                out[name] = String(decoding: bytes[(end + 1)..<stop], as: UTF8.self)
                i = stop + 1
            } else {
                var length: UInt64 = 0
                for k in 0..<8 { length |= UInt64(bytes[end + 1 + k]) << (8 * UInt64(k)) }
                let start = end + 9
                out[name] = String(decoding: bytes[start..<(start + Int(length))], as: UTF8.self)
                i = start + Int(length) + 1
            }
        }
        return out
    }

    @Test func eachMessageIsOneDatagramWithItsMetadataAsFields() throws {
        let dir = TemporaryDirectory()
        let path = dir.path + "/journal.sock"
        let listener = try UnixDatagram.bind(path: path)
        var logger = Logger(label: "vigil") { label in JournalLogHandler(label: label, socketPath: path) }
        logger[metadataKey: "node"] = "b3b325f3"
        logger.notice("alert raised", metadata: ["alert": "b3b325f3:1", "kind": "sos", "hop-count": "2"])
        let first = try #require(try UnixDatagram.receive(listener, timeoutMilliseconds: 5_000))
        let f = Self.fields(first)
        #expect(f["MESSAGE"] == "alert raised" && f["PRIORITY"] == "5" && f["SYSLOG_IDENTIFIER"] == "vigil")
        #expect(f["VIGIL_ALERT"] == "b3b325f3:1" && f["VIGIL_KIND"] == "sos" && f["VIGIL_HOP_COUNT"] == "2")
        #expect(f["VIGIL_NODE"] == "b3b325f3", "the logger's own metadata too")
        #expect(f["CODE_FILE"]?.hasSuffix("JournalLogHandlerTests.swift") == true && f["CODE_LINE"] != nil)

        // A value over several lines goes in the binary form, whole.
        logger.critical("a critical event was refused by the log", metadata: ["error": "first line\nsecond line"])
        let second = Self.fields(try #require(try UnixDatagram.receive(listener, timeoutMilliseconds: 5_000)))
        #expect(second["VIGIL_ERROR"] == "first line\nsecond line" && second["PRIORITY"] == "2")

        // Below the level: nothing is sent (datagrams keep their order, so the next one is the
        // warning after it).
        logger.logLevel = .notice
        logger.info("quiet")
        logger.warning("loud")
        let third = Self.fields(try #require(try UnixDatagram.receive(listener, timeoutMilliseconds: 5_000)))
        #expect(third["MESSAGE"] == "loud" && third["PRIORITY"] == "4")
    }

    @Test func standardErrorIsTheJournalOnlyWhenJournalStreamNamesIt() throws {
        var info = stat()
        #expect(fstat(STDERR_FILENO, &info) == 0)
        #expect(JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]))
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino &+ 1)"]))
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: [:]))
        #expect(JournalLogHandler.fieldName("hop-count") == "HOP_COUNT" && JournalLogHandler.fieldName("_x") == "X")
    }
}
