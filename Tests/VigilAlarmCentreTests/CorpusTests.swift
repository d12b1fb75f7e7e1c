import Foundation
import Testing
import VigilAlarmCentre
import VigilTestSupport

/// corpus/dc09: the fuzz seeds, most of them raw replies captured from pysiaalarm 3.2.2.
@Suite struct CorpusTests {
    static let directory = LiveHarness.packageRoot.appendingPathComponent("Fuzz/corpus/dc09-reply")

    static func read(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    /// Splits a capture the way the node reads its socket, and parses its first frame.
    static func verdict(_ name: String, _ expecting: DC09Expectation) throws -> (Result<DC09Reply, DC09ReplyError>?, dropped: UInt64) {
        var splitter = DC09FrameSplitter()
        splitter.append(try read(name))
        guard let frame = splitter.nextFrame() else { return (nil, splitter.droppedBytes) }
        return (Result { () throws(DC09ReplyError) in try DC09Reply.parse(frame, expecting: expecting) }, splitter.droppedBytes)
    }

    @Test func everySeedKeepsTheFuzzPromises() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
        #expect(names.count >= 10)
        for name in names {
            #expect(DC09Fuzz.brokenPromises(try Self.read(name)).isEmpty, "\(name)")
        }
    }

    @Test func capturedRepliesAreReadAsTheyWereMeant() throws {
        let identity = try DC09Identity(account: "1234", receiver: "12", line: "1")
        func expecting(_ sequence: Int, key: String? = nil, receiver: Bool = true) throws -> DC09Expectation {
            DC09Expectation(identity: receiver ? identity : try DC09Identity(account: "1234", receiver: nil, line: "1"),
                            sequence: DC09Sequence(sequence)!, key: try key.map { try DC09Key(bytes: Array($0.utf8)) })
        }
        #expect(try Self.verdict("ack-plain", expecting(9995)).0 == .success(.acknowledged(receiverTime: nil)))
        #expect(try Self.verdict("ack-null-plain", expecting(9)).0 == .success(.acknowledged(receiverTime: nil)))
        for (name, key) in [("ack-aes128", "0123456789ABCDEF"), ("ack-aes192", "0123456789ABCDEF01234567"),
                            ("ack-aes256", "0123456789ABCDEF0123456789ABCDEF")] {
            guard case .success(.acknowledged(.some)) = try Self.verdict(name, expecting(9995, key: key)).0 else {
                Issue.record("\(name)")
                continue
            }
        }
        guard case .success(.negative(.some)) = try Self.verdict("nak-stale", expecting(1)).0 else { Issue.record("nak-stale"); return }
        guard case .success(.negative(.some)) = try Self.verdict("nak-unreadable", expecting(1, key: "0123456789ABCDEF")).0 else {
            Issue.record("nak-unreadable"); return
        }
        #expect(try Self.verdict("duh", expecting(42)).0 == .success(.notUnderstood))
        #expect(try Self.verdict("ack-receiver-none", expecting(1, receiver: false)).0 == .failure(.malformed(.receiver)))
        let garbage = try Self.verdict("garbage", expecting(1))
        guard case .failure(.crcMismatch) = garbage.0 else { Issue.record("garbage: \(String(describing: garbage.0))"); return }
        #expect(garbage.dropped == 25)
        let bare = try Self.verdict("bare-nak-unknown-account", expecting(1))
        #expect(bare.0 == nil && bare.dropped == 5)
        #expect(try Self.verdict("broken-empty-frame", expecting(1)).0 == .failure(.badFraming(.tooShort)))
        #expect(try Self.verdict("broken-length-mismatch", expecting(9995)).0 == .failure(.lengthMismatch(declared: 0x16, actual: 0x15)))
        #expect(try Self.verdict("broken-encrypted-odd-hex", expecting(9995, key: "0123456789ABCDEF")).0 == .failure(.lengthMismatch(declared: 0x55, actual: 0x54)))
        #expect(try Self.verdict("broken-truncated-ack", expecting(9995)).0 == nil)
    }
}
