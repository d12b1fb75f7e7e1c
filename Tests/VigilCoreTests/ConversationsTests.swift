import Testing
import VigilCore
import VigilEvents

@Suite struct ConversationsTests {
    let phone: UInt64 = 0x5A_0B_1C_2D_3E_4F
    var sequence: UInt64 = 0

    mutating func event(_ body: EventBody, at seconds: UInt64 = 1) -> Event {
        sequence += 1
        return Event(sequence: sequence, timeMicroseconds: 1_800_000_000_000_000 + seconds * 1_000_000, body: body)
    }

    func link(_ open: Bool, _ peer: UInt64) -> EventBody {
        var change = LinkChanged()
        change.peer = peer
        change.peerType = .addressRandom
        change.open = open
        change.role = .peripheral
        return .linkChanged(change)
    }

    func received(_ text: String, from peer: UInt64, id: String = "") -> EventBody {
        var chat = ChatMessage()
        chat.peer = peer
        chat.peerType = .addressRandom
        chat.channel = id.isEmpty ? .chat : .message
        chat.text = text
        chat.messageID = id
        return .chatMessage(chat)
    }

    @Test mutating func unreadCountsGoUpToNinetyNineThenShowDots() {
        var conversations = Conversations()
        conversations.apply(event(link(true, phone)))
        for i in 1 ... 99 { conversations.apply(event(received("m\(i)", from: phone), at: UInt64(i))) }
        #expect(conversations.byPeer[phone]?.unread == 99)
        #expect(conversations.byPeer[phone]?.unreadBadge == "99")
        conversations.apply(event(received("one more", from: phone), at: 100))
        #expect(conversations.byPeer[phone]?.unreadBadge == "...")
        #expect(Conversations.badge(0) == "" && Conversations.badge(1) == "1")
    }

    @Test mutating func openingAChatResetsItsCountAndDisconnectingClearsIt() {
        var conversations = Conversations()
        conversations.apply(event(link(true, phone)))
        conversations.apply(event(received("hello", from: phone)))
        var opened = ChatOpened()
        opened.peer = phone
        conversations.apply(event(.chatOpened(opened)))
        #expect(conversations.byPeer[phone]?.unread == 0)
        conversations.apply(event(received("again", from: phone)))
        #expect(conversations.byPeer[phone]?.unread == 1)
        conversations.apply(event(link(false, phone)))
        #expect(conversations.byPeer[phone]?.unread == 0)
        #expect(conversations.byPeer[phone]?.connected == false)
        // The messages stay.
        #expect(conversations.byPeer[phone]?.messages.map(\.text) == ["hello", "again"])
    }

    @Test mutating func historyAndDevicesAreBounded() {
        var conversations = Conversations()
        for i in 0 ..< Conversations.historyLimit + 10 { conversations.apply(event(received("m\(i)", from: phone), at: UInt64(i))) }
        #expect(conversations.byPeer[phone]?.messages.count == Conversations.historyLimit)
        #expect(conversations.byPeer[phone]?.messages.first?.text == "m10")
        for i in 0 ..< UInt64(Conversations.deviceLimit + 5) { conversations.apply(event(received("hi", from: 0x10_00 + i), at: 1_000 + i)) }
        #expect(conversations.byPeer.count == Conversations.deviceLimit)
        // The quietest went first: the phone's last message was before all of the others'.
        #expect(conversations.byPeer[phone] == nil)
    }

    @Test mutating func aPhoneMessagesIDIsRemembered() {
        var conversations = Conversations()
        conversations.apply(event(received("trapped on the roof", from: phone, id: "msg-1")))
        #expect(conversations.seenMessageIDs["msg-1"] == sequence)
    }

    @Test mutating func replayGivesTheSameState() {
        var events: [Event] = [event(link(true, phone)), event(received("a", from: phone)), event(received("b", from: phone, id: "x"))]
        var opened = ChatOpened()
        opened.peer = phone
        events.append(event(.chatOpened(opened)))
        events.append(event(link(false, phone)))
        var live = Projections()
        for e in events { live.apply(e) }
        var again = Projections()
        for e in events { again.apply(e) }
        #expect(live.conversations == again.conversations)
        #expect(live.conversations.byPeer[phone]?.messages.count == 2)
    }
}
