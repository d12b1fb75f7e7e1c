import Foundation
import Testing
import VigilBoard
import VigilCalls
import VigilCore
import VigilEvents
import VigilSystem
@testable import VigilNode

/// Issue 27 item 4: answers by SMS. The rule (pure) and the node reading gammu-smsd's real inbox.
@Suite(.serialized) struct SMSRepliesTests {
    static let staff = "+34600111222"
    static let resident = "+34600333444"
    static let stranger = "+34699999999"

    /// A state with one open SOS told to the staff number at `told`, and a resident being asked
    /// "are you OK?" (own number `resident`) since `asked`.
    static func state(told: UInt64, asked: UInt64) -> Projections {
        var settings = ProjectionSettings()
        settings.callTree = CallTree(tiers: [CallTree.Tier(afterMicroseconds: 0, recipients: [staff])], configured: true)
        var p = Projections(settings: settings)
        var r = Resident()
        r.id = "room-12"
        r.mode = .time
        r.intervalUs = 60_000_000
        r.ownAddress = resident
        p.apply(Event(sequence: 1, timeMicroseconds: asked - 60_000_000, body: .residentEnrolled(r)))
        var d = DeadlineReached()
        d.resident = "room-12"
        d.ladder = 1
        d.step = .prompt
        d.dueUs = asked
        p.apply(Event(sequence: 2, timeMicroseconds: asked, body: .deadlineReached(d)))
        var a = Alert()
        a.id = AlertID(origin: 0xA1, counter: 1)
        a.kind = .sos
        a.expiresAtUs = told + 3_600_000_000
        p.apply(Event(sequence: 3, timeMicroseconds: told, body: .alertRaised(a)))
        return p
    }

    static func rule(_ p: Projections, now: UInt64) -> SMSReplyRule {
        SMSReplyRule(interpreter: CommandInterpreter.offline(state: p, nowMicroseconds: now), projections: p)
    }

    /// A detail-format inbox file from `sender` saying `text`, read as the node reads it.
    static func inbound(_ sender: String, _ text: String, part: Int = 0) throws -> Result<InboundSMS, any Error> {
        let hex = text.utf16.map { String(format: "%04X", $0) }.joined()
        let number = sender.utf16.map { String(format: "%04X", $0) }.joined()
        let content = """
        ; This file format was designed for Gammu and is compatible with Gammu+
        [SMSBackup000]
        PDU = Deliver
        DateTime = 20261128T030000Z
        Number = "\(sender)"
        NumberUnicode = \(number)
        Text00 = \(hex)
        Coding = Unicode_No_Compression

        """
        let name = "IN20261128_030000_00_\(sender)_\(String(format: "%02d", part)).txt"
        return .success(try InboundSMS.read(name: Array(name.utf8), contents: Array(content.utf8), format: .detail))
    }

    static let t0: UInt64 = 1_795_000_000_000_000

    @Test func takeFromANumberToldOfTheCallTakesIt() throws {
        let p = Self.state(told: Self.t0, asked: Self.t0)
        let d = Self.rule(p, now: Self.t0 + 1).decide(file: "f1", sms: try Self.inbound(Self.staff, "Take."), receivedMicroseconds: Self.t0 + 1)
        guard case .alertTaken(let t)? = d.effect else { Issue.record("no taking: \(d.received.outcome)"); return }
        #expect(t.by == "the phone ending 222" && t.via == .sms && t.id == AlertID(origin: 0xA1, counter: 1))
        #expect(d.received.outcome.hasPrefix("took call T"))
        #expect(d.received.reading == .reply && d.received.sender == Self.staff)
    }

    @Test func aReplyFromAStrangerOrBeforeTheQuestionIsShownNeverActedOn() throws {
        let p = Self.state(told: Self.t0, asked: Self.t0)
        let stranger = Self.rule(p, now: Self.t0 + 1).decide(file: "f", sms: try Self.inbound(Self.stranger, "TAKE"), receivedMicroseconds: Self.t0 + 1)
        #expect(stranger.effect == nil)
        #expect(stranger.received.outcome.contains("was told of no open call"))
        // A reply written before the box told that number (an old text in the inbox).
        let early = Self.rule(p, now: Self.t0 + 1).decide(file: "f", sms: try Self.inbound(Self.staff, "TAKE"), receivedMicroseconds: Self.t0 - 1)
        #expect(early.effect == nil)
        let okEarly = Self.rule(p, now: Self.t0 + 1).decide(file: "f", sms: try Self.inbound(Self.resident, "OK"), receivedMicroseconds: Self.t0 - 1)
        #expect(okEarly.effect == nil)
        // A wrong code from the right number.
        let code = Self.rule(p, now: Self.t0 + 1).decide(file: "f", sms: try Self.inbound(Self.staff, "TAKE T0000"), receivedMicroseconds: Self.t0 + 1)
        #expect(code.effect == nil)
        // Junk, and part 2 of a longer message that happens to say TAKE.
        let junk = Self.rule(p, now: Self.t0 + 1).decide(file: "f", sms: try Self.inbound(Self.staff, "who is this?"), receivedMicroseconds: Self.t0 + 1)
        #expect(junk.effect == nil && junk.received.outcome.contains("not a reply the box knows"))
        let part = Self.rule(p, now: Self.t0 + 1).decide(file: "f", sms: .failure(InboxMessageError.noMessage), receivedMicroseconds: Self.t0 + 1)
        #expect(part.effect == nil && part.received.reading == .unreadable)
    }

    @Test func okFromTheResidentsOwnNumberIsTheirImOK() throws {
        let p = Self.state(told: Self.t0, asked: Self.t0)
        let d = Self.rule(p, now: Self.t0 + 5).decide(file: "f", sms: try Self.inbound(Self.resident, "I'm OK"), receivedMicroseconds: Self.t0 + 5)
        guard case .checkIn(let c)? = d.effect else { Issue.record("no check-in: \(d.received.outcome)"); return }
        #expect(c.resident == "room-12" && c.source == .checkInSms)
        // OK from the staff's number answers nothing it was asked.
        let staff = Self.rule(p, now: Self.t0 + 5).decide(file: "f", sms: try Self.inbound(Self.staff, "OK"), receivedMicroseconds: Self.t0 + 5)
        #expect(staff.effect == nil)
    }

    // MARK: The node and the real gammu-smsd

    @Test func aStaffMembersTakeBySMSThroughGammuTakesTheCallAndAStrangersDoesNot() async throws {
        let dir = TemporaryDirectory()
        let sms = try GammuDummy(root: dir.path + "/sms")
        defer { sms.stop() }
        var config = try CallsForHelpNodeTests.configuration(dir)
        config.smsInbox.directory = sms.inbox
        // The node's clock a minute behind the real one, which stamps gammu's files: the box told
        // the staff before any reply was written.
        let clock = ManualClock(startMicroseconds: realtimeMicroseconds() - 60_000_000)
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        running.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
        await advance(clock, running, byMicroseconds: 700_000, step: 10_000)
        await CallsForHelpNodeTests.deliverAll(running, clock)
        #expect(await onLoop(running) { $0.projections.calls.open.first?.told } == [Self.staff])

        try sms.inject(from: Self.stranger, "TAKE")
        #expect(await untilChildProcess(running, seconds: 30) { $0.projections.sms.received == 1 }, "the stranger's SMS was read")
        #expect(await onLoop(running) { $0.projections.calls.open.first?.taken } == nil)
        try sms.inject(from: Self.staff, "take")
        #expect(await untilChildProcess(running, seconds: 30) { $0.projections.calls.open.first?.taken != nil }, "the staff's TAKE took the call")
        // Everyone told learns who took it, by the notifier.
        await CallsForHelpNodeTests.deliverAll(running, clock)
        let outcomes = await onLoop(running) { $0.projections.sms.recent.map(\.outcome) }
        try await stop(running)

        #expect(outcomes.first?.contains("was told of no open call") == true, "\(outcomes)")
        #expect(outcomes.last?.hasPrefix("took call T") == true, "\(outcomes)")
        let takings = try storedEvents(dir).compactMap { e -> AlertTaken? in if case .alertTaken(let t) = e.body { t } else { nil } }
        #expect(takings.map(\.by) == ["the phone ending 222"], "the number itself stays at the box")
        #expect(takings.first?.via == .sms)
        #expect(CallsForHelpNodeTests.received(dir).contains { ($0["text"] as? String)?.contains("Taken by the phone ending 222 (by SMS)") == true },
                "\(CallsForHelpNodeTests.received(dir).map { $0["text"] ?? "" })")

        // A restart reads no file twice: the inbox still holds both.
        let again = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: try SimulatedBoard(monotonic: clock))
        let againRunning = try await start(again)
        await settled(againRunning)
        let count = await onLoop(againRunning) { $0.projections.sms.received }
        try await stop(againRunning)
        #expect(count == 2)
    }

}

/// gammu-smsd on Gammu's dummy phone (detail inbox format), and SMS put on that phone as if
/// received (scripts/sms-inject-incoming): the daemon moves them into its inbox as it would from
/// a modem.
final class GammuDummy {
    let root: String
    let inbox: String
    let phone: String
    private let process = TestProcess()

    init(root: String) throws {
        self.root = root
        inbox = root + "/inbox"
        phone = root + "/phone"
        for dir in ["phone", "inbox", "outbox", "sent", "error"] {
            try FileManager.default.createDirectory(atPath: root + "/" + dir, withIntermediateDirectories: true)
        }
        let config = root + "/smsdrc"
        try """
        [gammu]
        model = dummy
        connection = none
        device = \(phone)/

        [smsd]
        service = files
        logfile = \(root)/smsd.log
        commtimeout = 1
        loopsleep = 1
        receivefrequency = 1
        checksecurity = 0
        inboxformat = detail
        inboxpath = \(inbox)/
        outboxpath = \(root)/outbox/
        sentsmspath = \(root)/sent/
        errorsmspath = \(root)/error/

        """.write(toFile: config, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gammu-smsd")
        process.arguments = ["-c", config]
        var environment = ProcessInfo.processInfo.environment
        environment["LANG"] = "C.UTF-8"
        environment["LC_ALL"] = nil
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    func inject(from sender: String, _ text: String) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/sms-inject-incoming").path
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: script)
        p.arguments = [phone, sender, text]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    func stop() {
        // SIGKILL: children of the test process inherit a signal mask that blocks SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
