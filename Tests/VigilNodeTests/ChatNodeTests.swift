import Foundation
import Testing
import VigilEvents
@testable import VigilGATT
import VigilLog
import VigilSystem
@testable import VigilNode

/// The chat commands on a node without Bluetooth (the simulated radio): what is refused, and
/// why, and how a restart leaves the chats. The links themselves run in the VM
/// (`Tests/vm/gatt-node-chat.sh`, `gatt-box-chat.sh`): they need the kernel's ATT channel.
@Suite("Chat on a node")
struct ChatNodeTests {
    @Test func chatCommandsKeepTheirNamesAndArgumentsOnTheWire() throws {
        let commands: [NodeCommand] = [
            .chatSend(ChatSendRequest(peer: "AA:BB:CC:DD:EE:01", text: "water at the north door")),
            .chatOpen(ChatPeerReference(peer: "AA:BB:CC:DD:EE:01")),
            .chatConnect(ChatPeerReference(peer: "5A:0B:1C:2D:3E:4F/random")),
            .chatDisconnect(ChatPeerReference(peer: "5A:0B:1C:2D:3E:4F")),
        ]
        for command in commands {
            let json = try JSONEncoder().encode(command)
            #expect(String(decoding: json, as: UTF8.self).contains("\"\(command.name)\""))
            #expect(try JSONDecoder().decode(NodeCommand.self, from: json) == command)
        }
    }

    @Test func withoutABlueZAdapterChatIsRefusedWithTheReason() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        var c = testConfiguration(dir, advertisers: 0)
        let off = try Node(configuration: c, clock: clock, monotonic: clock, logger: quietLogger)
        let offRunning = try await start(off)
        let refusedOff = await offRunning.perform(.chatConnect(ChatPeerReference(peer: "AA:BB:CC:DD:EE:01")))
        #expect(refusedOff?.refusal == .unavailable && refusedOff?.error?.contains("connections.enabled") == true)
        try await stop(offRunning)

        c.connections.enabled = true
        let node = try Node(configuration: c, clock: clock, monotonic: clock, logger: quietLogger)
        let running = try await start(node)
        let refused = await running.perform(.chatConnect(ChatPeerReference(peer: "AA:BB:CC:DD:EE:01")))
        #expect(refused?.refusal == .unavailable && refused?.error?.contains("BlueZ adapter") == true)
        let bad = await running.perform(.chatConnect(ChatPeerReference(peer: "not an address")))
        #expect(bad?.refusal == .invalid)
        let send = await running.perform(.chatSend(ChatSendRequest(peer: "AA:BB:CC:DD:EE:01", text: "hello")))
        #expect(send?.refusal == .conflict && send?.error?.contains("not connected") == true)
        let empty = await running.perform(.chatSend(ChatSendRequest(peer: "AA:BB:CC:DD:EE:01", text: "")))
        #expect(empty?.refusal == .invalid)
        let open = await running.perform(.chatOpen(ChatPeerReference(peer: "AA:BB:CC:DD:EE:01")))
        #expect(open?.refusal == .conflict, "no chat with that device yet")
        let disconnect = await running.perform(.chatDisconnect(ChatPeerReference(peer: "AA:BB:CC:DD:EE:01")))
        #expect(disconnect?.refusal == .conflict)
        let status = await onLoop(running) { $0.liveStatus().connections }
        #expect(status?.serving == false && status?.links.isEmpty == true && status?.chatLink == nil)
        try await stop(running)
    }

    @Test func aRestartClosesInTheLogTheLinksOfTheLastRunAndKeepsTheirMessages() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let c = testConfiguration(dir, advertisers: 0)
        // The last run ended with a phone linked and an unread message from it.
        let log = try EventLog.open(c.log)
        var link = LinkChanged()
        link.peer = 0xAA_BB_CC_DD_EE_01
        link.open = true
        link.role = .peripheral
        var message = ChatMessage()
        message.peer = link.peer
        message.channel = .chat
        message.text = "are you there?"
        for body in [EventBody.linkChanged(link), .chatMessage(message)] {
            let (kind, payload) = EventCodec.encode(body)
            try log.append(LogRecord(kind: kind, timeMicroseconds: clock.nowMicroseconds(), payload: payload), priority: .critical)
        }
        log.close()

        let node = try Node(configuration: c, clock: clock, monotonic: clock, logger: quietLogger)
        let running = try await start(node)
        let conversation = await onLoop(running) { $0.projections.conversations.byPeer[0xAA_BB_CC_DD_EE_01] }
        #expect(conversation?.connected == false, "no link survives a restart")
        #expect(conversation?.unread == 0, "a disconnect clears the unread count")
        #expect(conversation?.messages.map(\.text) == ["are you there?"])
        try await stop(running)
        let closed = try storedEvents(dir).compactMap { e -> LinkChanged? in if case .linkChanged(let l) = e.body, !l.open { l } else { nil } }
        #expect(closed.map(\.reason) == ["the box restarted"])
    }

    @Test func aPeersMessageRateAllowsItsBurstThenOneAnIntervalAndNoMoreForAClockGoingBack() {
        let ms: UInt64 = 1_000_000
        var rate = MessageRate(burst: 3, intervalMicroseconds: 500_000, nowNanoseconds: 1_000 * ms)
        // (time in ms, whether a message is allowed), in order.
        let script: [(UInt64, Bool)] = [
            (1_000, true), (1_000, true), (1_000, true), (1_000, false),   // the burst
            (1_499, false), (1_500, true),                                 // then one an interval
            (900, false), (1_999, false), (2_000, true),                   // an earlier time adds nothing
            (3_600_000, true), (3_600_000, true), (3_600_000, true), (3_600_000, false), // refilled to the burst, no more
        ]
        var allowed: [Bool] = []
        for (time, _) in script { allowed.append(rate.take(nowNanoseconds: time * ms)) }
        #expect(allowed == script.map(\.1))
    }

    @Test func aLinksMessagesWaitingForTheCardAreCappedUntilSomeAreDurableAndAClosedLinkLeavesNothingBehind() {
        var pending = PendingWrites(limitPerLink: 2)
        let request = WriteCompletion(write: 7, handle: 0x0021)
        pending.add(sequence: 10, link: 5, completion: request)
        pending.add(sequence: 11, link: 5, completion: nil)
        pending.add(sequence: 12, link: 6, completion: nil)
        #expect(!pending.hasRoom(5))
        #expect(pending.hasRoom(6))   // another link's writes are its own
        // A durable event frees its link's slot and gives back the write to answer.
        let settled = pending.settle(10)
        #expect(settled?.link == 5)
        #expect(settled?.completion == request)
        #expect(pending.hasRoom(5))
        #expect(pending.settle(10) == nil)   // answered once
        #expect(pending.settle(99) == nil)   // not a peer's message
        pending.forget(link: 5)
        #expect(pending.count(5) == 0)
        #expect(pending.settle(11) == nil)   // the closed link's write is not answered later
        #expect(pending.total == 1)
        #expect(pending.settle(12)?.link == 6)
        #expect(pending.total == 0)
    }

    @Test func aPeersTextKeepsItsLettersButNoControlBidiOverrideOrLineSeparatorAndIsCutAtItsLimit() {
        #expect(PeerText.printable("Ayuda, sala 3 — ¿hay sitio? 🙏") == "Ayuda, sala 3 — ¿hay sitio? 🙏")
        #expect(PeerText.printable("a\u{1B}[2Jb\u{7}c\u{85}d") == "a\u{FFFD}[2Jb\u{FFFD}c\u{FFFD}d")
        // "Trojan Source": an override that would show "evil" text reversed, and isolates.
        #expect(PeerText.printable("ok\u{202E}lived\u{202C}\u{2066}x\u{2069}\u{200F}") == "ok\u{FFFD}lived\u{FFFD}\u{FFFD}x\u{FFFD}\u{FFFD}")
        #expect(PeerText.printable("one\u{2028}two\u{2029}three\nfour") == "one\u{FFFD}two\u{FFFD}three\u{FFFD}four")
        #expect(PeerText.printable("abcdef", limit: 3) == "abc…")
        #expect(PeerText.printable("abc", limit: 3) == "abc")
    }
}
