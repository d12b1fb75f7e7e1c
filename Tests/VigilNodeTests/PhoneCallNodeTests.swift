import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilHubProtocol
import VigilLog
import VigilSystem
@testable import VigilNode

/// Issue 28: phones ask, staff decide, on a running node. A phone's SOS (the `ChatMessage`
/// `GATTLinks` logs for EchoAlert's JSON) tells the staff at once, marked unverified, and raises
/// no alert; staff confirm it (the box raises its own alert from it) or dismiss it.
@Suite(.serialized) struct PhoneCallNodeTests {
    static func phoneMessage(_ id: String, _ category: String, _ text: String) -> EventBody {
        var m = ChatMessage()
        m.peer = 0x5A_11_22_33_44_55
        m.peerType = .addressRandom
        m.channel = .message
        m.messageID = id
        m.category = category
        m.text = text
        return .chatMessage(m)
    }

    @Test func aPhonesSOSTellsStaffAndGoesOutAsAnAlertOnlyWhenStaffConfirmIt() async throws {
        let dir = TemporaryDirectory()
        let config = try CallsForHelpNodeTests.configuration(dir)
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        running.onLoop { n in _ = n.append(Self.phoneMessage("m1", "sos", "two of us on the roof")) }
        await settled(running)
        await CallsForHelpNodeTests.deliverAll(running, clock)

        let told = CallsForHelpNodeTests.received(dir)
        #expect(told.count == 1)
        let text = told.first?["text"] as? String ?? ""
        #expect(text.contains("SOS FROM A PHONE, UNVERIFIED \"two of us on the roof\"") && text.contains("Shelter North"), "\(text)")
        #expect(await onLoop(running) { $0.projections.alerts.alerts.isEmpty }, "no alert of the network from a phone's word")
        let code = try #require(await onLoop(running) { $0.projections.calls.open.first?.code })

        // Not a phone's call, or no name: refused.
        let nameless = try #require(await running.perform(.decidePhoneCall(PhoneCallDecision(call: code, confirm: true, by: " ", via: "cli"))))
        #expect(!nameless.ok)

        let confirmed = try #require(await running.perform(.decidePhoneCall(PhoneCallDecision(call: code, confirm: true, by: "Marta", via: "cli"))))
        #expect(confirmed.ok, "\(confirmed)")
        let alertID = try #require(confirmed.alert)
        let raised = try #require(await onLoop(running) { $0.projections.alerts.alerts[alertID] })
        #expect(raised.raisedHere && raised.kind == AlertKind.sos.rawValue)
        #expect(raised.text == "from a phone, confirmed by Marta: two of us on the roof")
        let phoneCall = try #require(await onLoop(running) { $0.projections.calls.calls[CallBook.phoneCallID(messageID: "m1", peer: "5A:11:22:33:44:55/random")] })
        #expect(phoneCall.ended?.reason == "confirmed")
        #expect(phoneCall.phone?.confirmedAlert == alertID)
        let again = try #require(await running.perform(.decidePhoneCall(PhoneCallDecision(call: code, confirm: false, by: "Luis", via: "cli"))))
        #expect(!again.ok, "decided already: \(again)")
        // The alert's own call (raised at this box) is not a phone's.
        let alertCall = try #require(await onLoop(running) { $0.projections.calls.calls[CallBook.id(alert: alertID)]?.code })
        let notPhone = try #require(await running.perform(.decidePhoneCall(PhoneCallDecision(call: alertCall, confirm: false, by: "Luis", via: "cli"))))
        #expect(!notPhone.ok && notPhone.error?.contains("not a phone's") == true)

        // A second phone's message, dismissed: no alert.
        running.onLoop { n in _ = n.append(Self.phoneMessage("m2", "medical", "prank")) }
        await settled(running)
        let second = try #require(await onLoop(running) { $0.projections.calls.calls[CallBook.phoneCallID(messageID: "m2", peer: "5A:11:22:33:44:55/random")]?.code })
        let dismissed = try #require(await running.perform(.decidePhoneCall(PhoneCallDecision(call: second, confirm: false, by: "Luis", via: "page"))))
        #expect(dismissed.ok && dismissed.alert == nil)
        #expect(await onLoop(running) { $0.projections.calls.calls[CallBook.phoneCallID(messageID: "m2", peer: "5A:11:22:33:44:55/random")]?.ended?.reason } == "dismissed")
        #expect(await onLoop(running) { $0.projections.alerts.alerts.count } == 1)
        try await stop(running)

        let decisions = try storedEvents(dir).compactMap { e -> PhoneCallDecided? in if case .phoneCallDecided(let d) = e.body { d } else { nil } }
        #expect(decisions.map(\.confirmed) == [true, false])
        #expect(decisions.first?.alert.text == alertID)
    }

    @Test func aPhonesCallItsStepsAndItsMessagesStayAtTheBox() {
        let policy = SharePolicy()
        let call = CallBook.phoneCallID(messageID: "m1", peer: "5A:11:22:33:44:55/random")
        var taken = AlertTaken()
        taken.call = call
        var step = CallDeadline()
        step.call = call
        var attempt = OutboxAttempt()
        attempt.entry = "call/\(call)/0.0/+34600111222"
        var decided = PhoneCallDecided()
        decided.call = call
        for body: EventBody in [.alertTaken(taken), .callDeadline(step), .outboxAttempt(attempt), .phoneCallDecided(decided)] {
            #expect(policy.uploaded(body) == nil, "\(body.kind.name) left the box")
        }
        step.call = "alert:a1:1"
        attempt.entry = "call/alert:a1:1/0.0/+34600111222"
        #expect(policy.uploaded(.callDeadline(step)) != nil && policy.uploaded(.outboxAttempt(attempt)) != nil, "other calls' still do")
    }

    @Test func anOfflineCLICannotDecideAPhonesCall() {
        let interpreter = CommandInterpreter.offline(state: Projections(), nowMicroseconds: 1)
        guard case .refused(let why, _) = interpreter.decidePhoneCall(PhoneCallDecision(call: "T1234", confirm: true, by: "Marta", via: "cli")) else {
            Issue.record("decided offline")
            return
        }
        #expect(why == .unavailable)
    }
}
