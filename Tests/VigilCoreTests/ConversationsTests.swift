import Foundation
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

    func link(_ open: Bool, _ peer: UInt64, role: LinkRole = .peripheral) -> EventBody {
        var change = LinkChanged()
        change.peer = peer
        change.peerType = .addressRandom
        change.open = open
        change.role = role
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

    @Test mutating func theStateSurvivesTheCheckpointAndReplayingFromItEqualsReplayingAll() throws {
        var events: [Event] = [event(link(true, phone)), event(received("a", from: phone)), event(received("b", from: phone, id: "x"))]
        var opened = ChatOpened()
        opened.peer = phone
        events.append(event(.chatOpened(opened)))
        events.append(event(received("c", from: phone)))
        events.append(event(link(true, phone, role: .central)))
        events.append(event(link(false, phone)))
        // Two more devices quiet since the same moment: eviction order must not depend on
        // dictionary order.
        events.append(event(link(true, 0x11)))
        events.append(event(link(true, 0x12)))
        var all = Conversations()
        for e in events { all.apply(e) }
        // The checkpoint after four events, decoded, then the rest.
        var first = Conversations()
        for e in events.prefix(4) { first.apply(e) }
        var resumed = try JSONDecoder().decode(Conversations.self, from: JSONEncoder().encode(first))
        for e in events.dropFirst(4) { resumed.apply(e) }
        #expect(resumed == all)
        #expect(all.byPeer[phone]?.messages.count == 3)
        #expect(all.byPeer[phone]?.openRoles == [LinkRole.central.rawValue], "the central link is still up")
        #expect(all.byPeer[phone]?.unread == 1, "one role closing keeps the unread count while the other is linked")
    }

    @Test mutating func aFailedConnectAttemptNeitherDisconnectsALinkedDeviceNorClearsItsUnreadCount() {
        var conversations = Conversations()
        conversations.apply(event(link(true, phone)))
        conversations.apply(event(received("are you there?", from: phone)))
        conversations.apply(event(link(false, phone, role: .central)))   // `vigil chat connect` failed
        #expect(conversations.byPeer[phone]?.connected == true)
        #expect(conversations.byPeer[phone]?.unread == 1)
        conversations.apply(event(link(false, phone)))
        #expect(conversations.byPeer[phone]?.connected == false)
        #expect(conversations.byPeer[phone]?.unread == 0)
    }
}
