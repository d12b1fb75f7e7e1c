import Foundation
import Testing
import VigilAlarmCentre
import VigilTestSupport

/// Against a real receiver: scripts/sia-centre runs pysiaalarm 3.2.2 on loopback (installed by
/// scripts/setup). Frames go over a plain TCP socket; replies are split and parsed by this
/// package; what pysiaalarm made of each event comes back on the harness's stdout.
/// DC09_CAPTURE_DIR=dir keeps every raw reply (how corpus/dc09 was made).
// A missing receiver is a failure, not a skip: scripts/setup installs the pinned pysiaalarm.
@Suite(.serialized)
struct LiveReceiverTests {
    static let identity = try! DC09Identity(account: "1234", receiver: "12", line: "1")

    /// Every report Vigil sends, and the SIA code pysiaalarm translates its Contact ID code to
    /// (YN: pysiaalarm has no mapping for 102, but still acknowledges).
    static let reports: [(AlarmReport, sia: String)] = [
        (.raised(.sos(call: 12)), "PA"), (.cleared(.sos(call: 12)), "PH"),
        (.raised(.medical(resident: 7)), "MA"), (.cleared(.medical(resident: 7)), "MH"),
        (.raised(.missedCheckIn(resident: 345)), "YN"), (.cleared(.missedCheckIn(resident: 345)), "YN"),
        (.raised(.eventLogDamaged), "YX"), (.cleared(.eventLogDamaged), "YZ"),
        (.raised(.runningFromMemory), "YX"), (.cleared(.runningFromMemory), "YZ"),
        (.raised(.radioLost), "YX"), (.cleared(.radioLost), "YZ"),
        (.periodicTest, "RP"),
    ]

    /// pysiaalarm's keys: text whose ASCII bytes are the AES key (16, 24, 32 characters).
    @Test("pysiaalarm acknowledges every report and reads back its Contact ID fields",
          arguments: [nil, "0123456789ABCDEF", "0123456789ABCDEF01234567", "0123456789ABCDEF0123456789ABCDEF"])
    func everyReportIsAcknowledgedAndReadBack(keyText: String?) throws {
        let centre = try ReceiverProcess(account: "1234", key: keyText)
        let key = try keyText.map { try DC09Key(bytes: Array($0.utf8)) }
        let connection = try CentreConnection(port: centre.port)
        let name = key.map { "aes\($0.bitCount)" } ?? "plain"
        var sequence = DC09Sequence(9995)!  // crosses 9999 -> 0001 on the way
        for (index, (report, siaCode)) in Self.reports.enumerated() {
            let now = NodeInputs.utcSecondsNow
            let frame = try DC09Frame.encode(report, identity: Self.identity, sequence: sequence, key: key, utcSeconds: now,
                                             pad: NodeInputs.pad())
            let reply = try connection.exchange(frame, capture: index == 0 ? "ack-\(name)" : nil).get()
            guard case .acknowledged(let receiverTime) = reply else {
                Issue.record("\(report): \(reply)")
                continue
            }
            if key != nil {
                let time = try #require(receiverTime, "an encrypted ACK carries the centre's time")
                #expect(abs(time.utcSeconds - now) < 60)
            }
            let event = try #require(centre.next("event"), "pysiaalarm handed \(report) to its callback")
            let cid = report.contactID()
            #expect(event["account"] as? String == "1234")
            #expect(event["message_type"] as? String == "ADM-CID")
            #expect(event["sequence"] as? String == sequence.description)
            #expect(event["event_qualifier"] as? String == "\(cid.qualifier.rawValue)")
            #expect(event["event_type"] as? String == String(format: "%03d", cid.code))
            #expect(event["partition"] as? String == "01")
            #expect(event["ri"] as? String == String(format: "%03d", cid.zone))
            #expect(event["code"] as? String == siaCode)
            #expect(event["encrypted"] as? Bool == (key != nil))
            #expect(event["valid_timestamp"] as? Bool == true)
            sequence = sequence.next()
        }
        // The NULL link test is acknowledged too (pysiaalarm reports it as RP).
        let null = try DC09Frame.encode(.linkTest, identity: Self.identity, sequence: sequence, key: key,
                                        utcSeconds: NodeInputs.utcSecondsNow, pad: NodeInputs.pad())
        if case .acknowledged = try connection.exchange(null, capture: "ack-null-\(name)").get() {} else { Issue.record("NULL not acknowledged") }
        #expect(centre.next("event")?["message_type"] as? String == "NULL")
        let stop = centre.stop()
        #expect(stop.status == 0 && stop.stopped, "the harness exits cleanly on SIGTERM")
    }

    @Test("a timestamp outside the centre's window is answered NAK with the centre's time", arguments: [nil, "0123456789ABCDEF"])
    func staleTimestampIsAnsweredNak(keyText: String?) throws {
        let centre = try ReceiverProcess(account: "1234", key: keyText)
        let key = try keyText.map { try DC09Key(bytes: Array($0.utf8)) }
        let connection = try CentreConnection(port: centre.port)
        let now = NodeInputs.utcSecondsNow
        let frame = try DC09Frame.encode(.raised(.sos(call: 1)), identity: Self.identity, sequence: .first, key: key,
                                         utcSeconds: now - 3600, pad: NodeInputs.pad())
        let reply = try connection.exchange(frame, capture: key == nil ? "nak-stale" : nil).get()
        guard case .negative(let time?) = reply else { Issue.record("\(reply)"); return }
        #expect(abs(time.utcSeconds - now) < 60, "the NAK tells the box the centre's clock")
        #expect(centre.next("frame")?["response"] as? String == "NAK")
        _ = centre.stop()
    }

    @Test("--mode nak: every frame is refused", arguments: [nil, "0123456789ABCDEF0123456789ABCDEF"])
    func nakModeGivesNegative(keyText: String?) throws {
        let centre = try ReceiverProcess(account: "1234", key: keyText, mode: "nak")
        let key = try keyText.map { try DC09Key(bytes: Array($0.utf8)) }
        let connection = try CentreConnection(port: centre.port)
        let frame = try DC09Frame.encode(.periodicTest, identity: Self.identity, sequence: .first, key: key,
                                         utcSeconds: NodeInputs.utcSecondsNow, pad: NodeInputs.pad())
        let reply = try connection.exchange(frame, capture: key == nil ? "nak-mode" : nil).get()
        guard case .negative(.some) = reply else { Issue.record("\(reply)"); return }
        _ = centre.stop()
    }

    @Test("--mode duh: pysiaalarm's DUH is not-understood, in the clear even for an encrypted frame",
          arguments: [nil, "0123456789ABCDEF"])
    func duhModeGivesNotUnderstood(keyText: String?) throws {
        let centre = try ReceiverProcess(account: "1234", key: keyText, mode: "duh")
        let key = try keyText.map { try DC09Key(bytes: Array($0.utf8)) }
        let connection = try CentreConnection(port: centre.port)
        let frame = try DC09Frame.encode(.raised(.radioLost), identity: Self.identity, sequence: DC09Sequence(42)!, key: key,
                                         utcSeconds: NodeInputs.utcSecondsNow, pad: NodeInputs.pad())
        #expect(try connection.exchange(frame, capture: key == nil ? "duh" : "duh-to-aes128").get() == .notUnderstood)
        _ = centre.stop()
    }

    @Test func garbageModeJunkIsDroppedAndTheCorruptAckRefusedByItsCRC() throws {
        let centre = try ReceiverProcess(account: "1234", mode: "garbage")
        let connection = try CentreConnection(port: centre.port)
        let frame = try DC09Frame.encode(.raised(.sos(call: 3)), identity: Self.identity, sequence: .first, key: nil,
                                         utcSeconds: NodeInputs.utcSecondsNow, pad: [])
        let result = try connection.exchange(frame, capture: "garbage")
        guard case .failure(.crcMismatch) = result else { Issue.record("\(result)"); return }
        #expect(connection.splitter.droppedBytes >= 20, "the junk before the frame was dropped and counted")
        _ = centre.stop()
    }

    @Test func silentModeGivesNoReplyWithinTheWait() throws {
        let centre = try ReceiverProcess(account: "1234", mode: "silent")
        let connection = try CentreConnection(port: centre.port)
        try connection.send(DC09Frame.encode(.periodicTest, identity: Self.identity, sequence: .first, key: nil,
                                             utcSeconds: NodeInputs.utcSecondsNow, pad: []).bytes)
        var raw: [UInt8] = []
        #expect(connection.receive(timeout: 1.5, raw: &raw) == .timedOut)
        #expect(raw.isEmpty)
        #expect(centre.next("frame") != nil, "the centre did read the frame")
        _ = centre.stop()
    }

    @Test func closeModeEndsTheConnectionWithoutAFrame() throws {
        let centre = try ReceiverProcess(account: "1234", mode: "close")
        let connection = try CentreConnection(port: centre.port)
        try? connection.send(DC09Frame.encode(.periodicTest, identity: Self.identity, sequence: .first, key: nil,
                                              utcSeconds: NodeInputs.utcSecondsNow, pad: []).bytes)
        var raw: [UInt8] = []
        #expect(connection.receive(timeout: 5, raw: &raw) == .closed)
        _ = centre.stop()
    }

    @Test func unknownAccountGetsPysiaalarmsUnframedNakWhichIsNoReply() throws {
        let centre = try ReceiverProcess(account: "1234")
        let connection = try CentreConnection(port: centre.port)
        let stranger = try DC09Identity(account: "5678", receiver: "12", line: "1")
        try connection.send(DC09Frame.encode(.periodicTest, identity: stranger, sequence: .first, key: nil,
                                             utcSeconds: NodeInputs.utcSecondsNow, pad: []).bytes)
        var raw: [UInt8] = []
        #expect(connection.receive(timeout: 1.5, raw: &raw) == .timedOut)
        #expect(raw == Array("\"NAK\"".utf8), "pysiaalarm 3.2.2 sends a bare \"NAK\" with no LF, CRC or CR")
        #expect(connection.splitter.droppedBytes == 5)
        LiveHarness.capture(raw, as: "bare-nak-unknown-account")
        _ = centre.stop()
    }

    @Test func wrongKeyGetsPysiaalarmsNakForAnUnreadableFrame() throws {
        let centre = try ReceiverProcess(account: "1234", key: "0123456789ABCDEF")
        let connection = try CentreConnection(port: centre.port)
        let frame = try DC09Frame.encode(.raised(.sos(call: 9)), identity: Self.identity, sequence: .first,
                                         key: DC09Key(bytes: Array("FEDCBA9876543210".utf8)), utcSeconds: NodeInputs.utcSecondsNow,
                                         pad: NodeInputs.pad())
        // pysiaalarm cannot parse the decrypted bytes and sends "NAK"0000L0R0A0[]_time (L before R).
        let reply = try connection.exchange(frame, capture: "nak-unreadable").get()
        guard case .negative(.some) = reply else { Issue.record("\(reply)"); return }
        _ = centre.stop()
    }

    @Test func frameWithoutReceiverIsAckedWithReceiverNoneWhichIsRefused() throws {
        let centre = try ReceiverProcess(account: "1234")
        let connection = try CentreConnection(port: centre.port)
        let frame = try DC09Frame.encode(.periodicTest, identity: DC09Identity(account: "1234", receiver: nil, line: "1"),
                                         sequence: .first, key: nil, utcSeconds: NodeInputs.utcSecondsNow, pad: [])
        // pysiaalarm 3.2.2 writes Python's None for the missing R token: "ACK"0001NoneL1#1234[].
        #expect(try connection.exchange(frame, capture: "ack-receiver-none") == .failure(.malformed(.receiver)))
        #expect(centre.next("event") != nil, "pysiaalarm itself took the event")
        _ = centre.stop()
    }
}
