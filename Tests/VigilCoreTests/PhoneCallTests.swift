import Testing
@testable import VigilCore
import VigilEvents

/// Issue 28: phones ask, staff decide. A phone's sos or medical message (EchoAlert's JSON, logged
/// as a `ChatMessage`) is a call for staff at this box marked "from a phone, unverified", never an
/// alert of the network by itself; staff confirm it (the node raises the alert) or dismiss it.
struct PhoneCallTests {
    static let minute = LadderHarness.minute
    static let phone: UInt64 = 0x5A_11_22_33_44_55

    /// The staff at once, the alarm receiving centre with them, the manager 5 minutes later.
    static func state() -> Projections {
        var settings = ProjectionSettings()
        settings.ladder.siteName = "Shelter North"
        settings.ladder.staff = CallBookTests.staff
        settings.callTree = CallTree(tiers: [CallTree.Tier(afterMicroseconds: 0, recipients: CallBookTests.staff + [CallBook.alarmCentre]),
                                             CallTree.Tier(afterMicroseconds: 5 * minute, recipients: [CallBookTests.manager])],
                                     rounds: 2, repeatAfterMicroseconds: 10 * minute, configured: true)
        return Projections(settings: settings)
    }

    static func message(_ id: String, _ category: String, _ text: String = "two of us on the roof", from peer: UInt64 = phone) -> EventBody {
        var m = ChatMessage()
        m.peer = peer
        m.peerType = .addressRandom
        m.channel = .message
        m.messageID = id
        m.category = category
        m.text = text
        return .chatMessage(m)
    }

    static let peerText = "5A:11:22:33:44:55/random"
    static func id(_ message: String, peer: String = peerText) -> String { CallBook.phoneCallID(messageID: message, peer: peer) }

    /// A harness after a start of a node that opens phones' calls (every node since schema 17).
    static func harness() -> LadderHarness {
        var h = LadderHarness(state: state())
        var started = NodeStarted()
        started.phonesOpenCalls = true
        h.append(.nodeStarted(started))
        return h
    }

    static func entries(_ h: LadderHarness) -> [Outbox.Entry] {
        h.outbox.entries.values.filter { $0.channel == .call || $0.channel == .arc }
            .sorted { ($0.createdSequence, $0.id) < ($1.createdSequence, $1.id) }
    }

    static func decided(_ call: String, confirmed: Bool, alert: AlertID? = nil) -> EventBody {
        var d = PhoneCallDecided()
        d.call = call
        d.confirmed = confirmed
        d.by = "Marta"
        d.via = .page
        if let alert { d.alert = alert }
        return .phoneCallDecided(d)
    }

    @Test func aPhonesSOSTellsTheStaffMarkedUnverifiedButNotTheAlarmCentreAndRaisesNoAlert() throws {
        var h = Self.harness()
        h.append(Self.message("m1", "sos"))
        let call = try #require(h.state.calls.open.first)
        #expect(call.id == Self.id("m1") && call.id.count == "phone:".count + 16)
        #expect(call.kind == .sos)
        #expect(call.phone?.peer == "5A:11:22:33:44:55/random")
        let entries = Self.entries(h)
        #expect(entries.map(\.recipients) == CallBookTests.staff.map { [$0] }, "the centre is not told of a phone's word")
        let text = try #require(entries.first?.text)
        #expect(text.contains("SOS FROM A PHONE, UNVERIFIED \"two of us on the roof\""), "\(text)")
        #expect(text.contains("at Shelter North"))
        #expect(text.contains("confirm it") && text.contains("dismiss it"))
        #expect(h.state.alerts.alerts.isEmpty, "no alert of the network")
        #expect(!h.outbox.entries.values.contains { $0.channel == .broadcast })
    }

    @Test func aFloodOfPhonesSOSWhileOneIsUnansweredIsOneCallAndOneMessageEach() {
        var h = Self.harness()
        for n in 0..<50 {
            h.append(Self.message("flood-\(n)", n % 2 == 0 ? "sos" : "medical", "prank \(n)", from: Self.phone &+ UInt64(n)))
        }
        #expect(h.state.calls.open.count == 1)
        #expect(h.state.calls.open.first?.phone?.messages == 50)
        #expect(Self.entries(h).count == CallBookTests.staff.count, "staff told once")
        #expect(h.state.calls.phoneMessagesTakenIn == 49)
        let folded = h.state.calls.open.first?.phone?.folded ?? []
        #expect(folded.count == CallBook.keptFolded, "the latest are kept for staff to read")
        #expect(folded.last?.text == "prank 49" && folded.last?.peer == "5A:11:22:33:44:86/random")
    }

    @Test func otherCategoriesAndChatAndTheBoxsOwnMessagesOpenNoCall() {
        var h = Self.harness()
        for category in ["fire", "evacuate", "flood", "info", "road-hazard"] { h.append(Self.message("c-\(category)", category)) }
        var chat = ChatMessage()
        chat.peer = Self.phone
        chat.channel = .chat
        chat.text = "sos"
        chat.category = "sos"
        h.append(.chatMessage(chat))
        var outgoing = ChatMessage()
        outgoing.peer = Self.phone
        outgoing.channel = .message
        outgoing.outgoing = true
        outgoing.category = "sos"
        outgoing.messageID = "ours"
        h.append(.chatMessage(outgoing))
        #expect(h.state.calls.calls.isEmpty)
        #expect(h.state.alerts.alerts.isEmpty)
        #expect(h.state.conversations.byPeer[Self.phone] != nil, "they stay messages for staff")
    }

    @Test func aTakenPhonesCallLetsTheNextPhoneOpenOneUpToFourOpenAtOnce() throws {
        var h = Self.harness()
        for n in 0..<6 {
            h.append(Self.message("t\(n)", "sos"))
            var t = AlertTaken()
            t.call = Self.id("t\(n)")
            t.by = "Luis"
            t.via = .cli
            h.append(.alertTaken(t))
        }
        #expect(h.state.calls.open.count == CallBook.maximumOpenPhoneCalls)
        #expect(h.state.calls.open.allSatisfy { $0.taken?.by == "Luis" })
        #expect(h.state.calls.refusedPhoneCalls == 2)
    }

    @Test func confirmingEndsTheCallNamingTheAlertAndDismissingEndsItToo() throws {
        var h = Self.harness()
        h.append(Self.message("a", "sos"))
        h.append(Self.decided(Self.id("a"), confirmed: true, alert: AlertID(origin: 0xA1, counter: 3)))
        let confirmed = try #require(h.state.calls.calls[Self.id("a")])
        #expect(confirmed.ended?.reason == "confirmed")
        #expect(confirmed.phone?.confirmedAlert == "a1:3")
        #expect(Self.entries(h).last?.text.contains("CONFIRMED") == true)
        #expect(Self.entries(h).last?.text.contains("alert a1:3 of the network") == true)

        h.append(Self.message("b", "medical"))
        #expect(h.state.calls.calls[Self.id("b")]?.kind == .medical, "a new call: the last one ended")
        h.append(Self.decided(Self.id("b"), confirmed: false))
        #expect(h.state.calls.calls[Self.id("b")]?.ended?.reason == "dismissed")
        #expect(Self.entries(h).last?.text.contains("not a call for help") == true)
        #expect(h.state.calls.open.isEmpty)
        // A decision of a call that is not a phone's, or ended, changes nothing.
        let before = h.state.calls
        h.append(Self.decided(Self.id("b"), confirmed: true, alert: AlertID(origin: 0xA1, counter: 4)))
        h.append(Self.decided("alert:a1:1", confirmed: true))
        #expect(h.state.calls == before)
    }

    @Test func aTakingHeardFromTheHubNeverTakesAPhonesCall() {
        var h = Self.harness()
        h.append(Self.message("h", "sos"))
        var t = AlertTaken()
        t.call = Self.id("h")
        t.by = "someone"
        t.heardFrom = 0xB2
        h.append(.alertTaken(t))
        #expect(h.state.calls.calls[Self.id("h")]?.taken == nil)
    }

    @Test func aForgottenPhonesCallEndsTwoHoursLaterAtItsOwnDeadline() {
        var h = Self.harness()
        let start = h.now
        h.append(Self.message("old", "sos"))
        var t = AlertTaken()
        t.call = Self.id("old")
        t.by = "Luis"
        h.append(.alertTaken(t))
        CallBookTests.runCalls(&h, until: start + 2 * 60 * Self.minute - 1)
        #expect(h.state.calls.calls[Self.id("old")]?.isOpen == true)
        CallBookTests.runCalls(&h, until: start + 2 * 60 * Self.minute)
        #expect(h.state.calls.calls[Self.id("old")]?.ended?.reason == "ended", "taken or not, it ends")
        #expect(Self.entries(h).last?.text.contains("Nobody confirmed or dismissed it") == true)
        #expect(h.state.calls.nextDeadline == nil)
    }

    @Test func anOlderLogsPhonesMessagesStayHistoryWhenReplayed() {
        // Written before schema 17: no start said phones open calls (their SOS were alerts then).
        var h = LadderHarness(state: Self.state())
        h.append(.nodeStarted(NodeStarted()))
        h.append(Self.message("history", "sos"))
        #expect(h.state.calls.calls.isEmpty)
        var started = NodeStarted()
        started.phonesOpenCalls = true
        h.append(.nodeStarted(started))
        h.append(Self.message("now", "sos"))
        #expect(h.state.calls.open.map(\.id) == [Self.id("now")])
    }

    @Test func aBareTakeRepliesToTheBoxsOwnCallNotToAPhonesAlongsideIt() throws {
        var h = Self.harness()
        h.append(Self.message("prank", "sos"))
        h.append(CallBookTests.raisedSOS(at: h.now))
        let own = try #require(h.state.calls.calls[CallBook.id(alert: "a1:1")])
        #expect(h.state.calls.callForReply(from: CallBookTests.staff[0], code: nil)?.id == own.id)
    }

    @Test func replayAndCheckpointGiveTheSamePhonesCalls() throws {
        var h = Self.harness()
        h.append(Self.message("r1", "sos"))
        h.append(Self.message("r2", "sos"))
        h.append(Self.decided(Self.id("r1"), confirmed: true, alert: AlertID(origin: 0xA1, counter: 1)))
        h.append(Self.message("r3", "medical"))
        var fresh = Self.state()
        for e in h.log { fresh.apply(e) }
        #expect(try fresh.encoded() == h.state.encoded())
        let restored = try Projections.decoded(h.state.encoded())
        #expect(restored.calls == h.state.calls)
        #expect(restored.calls.openPhoneCallIDs == [Self.id("r3")])
        #expect(restored.calls.phonesOpenCalls == true)
    }
}
