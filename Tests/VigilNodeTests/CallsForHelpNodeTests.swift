import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// Issue 27: a press brings a person. A node set up as a new user would (a notifier command that
/// records what it gets, `notify.staff`, a site name) tells its staff of an SOS at once; a
/// person takes it, and everyone told learns who. Tried on the old node: "0 pending, 0 delivered".
@Suite(.serialized) struct CallsForHelpNodeTests {
    static let staff = "+34600111222"

    /// A notifier that appends each message it gets (one JSON line) to `received`, and exits 0.
    static func recordingNotifier(_ dir: TemporaryDirectory) throws -> String {
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let script = dir.path + "/notify.sh"
        try "#!/bin/sh\ncat >> \"\(dir.path)/received\"\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        return script
    }

    static func received(_ dir: TemporaryDirectory) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: dir.path + "/received", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    static func configuration(_ dir: TemporaryDirectory) throws -> NodeConfiguration {
        var config = testConfiguration(dir, advertisers: 1)
        config.gestures.longPressNanoseconds = 300_000_000
        config.gestures.debounceNanoseconds = 30_000_000
        config.notifier.command = try recordingNotifier(dir)
        config.projections.ladder.staff = [staff]
        config.projections.ladder.siteName = "Shelter North"
        return config
    }

    /// Waits until every pending call message has been handed to the notifier and recorded.
    static func deliverAll(_ node: NodeThread, _ clock: ManualClock) async {
        for _ in 0..<50 {
            clock.advance(byMicroseconds: 100_000)
            await settled(node)
            _ = await untilChildProcess(node) { !$0.scheduler.isArmed(Deliveries.timeoutTimer) }
            await settled(node)
            if await onLoop(node, { $0.projections.outbox.pending.allSatisfy { $0.channel != .call } }) { return }
        }
    }

    @Test func aPressTellsTheStaffAtOnceAndATakingTellsThemWhoIsOnTheWay() async throws {
        let dir = TemporaryDirectory()
        let config = try Self.configuration(dir)
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        running.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
        await advance(clock, running, byMicroseconds: 700_000, step: 10_000)
        await Self.deliverAll(running, clock)

        let first = Self.received(dir)
        #expect(first.count == 1)
        #expect(first.first?["recipients"] as? [String] == [Self.staff])
        #expect(first.first?["channel"] as? String == "call")
        let text = first.first?["text"] as? String ?? ""
        #expect(text.contains("SOS") && text.contains("Shelter North") && text.contains("raised at this box"), "\(text)")
        let code = try #require(await onLoop(running) { $0.projections.calls.open.first?.code })
        #expect(text.contains("Reply TAKE or \(code)"))

        // Staff take it by its short code (as the CLI and the page do).
        let reply = try #require(await running.perform(.takeCall(TakeRequest(call: code, by: "Luis", via: "cli"))))
        #expect(reply.ok, "\(reply)")
        await Self.deliverAll(running, clock)
        let messages = Self.received(dir)
        #expect(messages.count == 2)
        #expect((messages.last?["text"] as? String)?.contains("Taken by Luis") == true)
        // Taken twice: refused, with who has it.
        let again = try #require(await running.perform(.takeCall(TakeRequest(call: code, by: "Marta", via: "cli"))))
        #expect(!again.ok)
        #expect(again.error?.contains("already taken by Luis") == true)
        try await stop(running)

        let takings = try storedEvents(dir).compactMap { e -> AlertTaken? in if case .alertTaken(let t) = e.body { t } else { nil } }
        #expect(takings.map(\.by) == ["Luis"])
        #expect(takings.first?.via == .cli)
    }

    @Test func aBoxWithNoStaffSaysOnAmberThatNobodyCanBeTold() async throws {
        let dir = TemporaryDirectory()
        var config = try Self.configuration(dir)
        config.projections.ladder.staff = []
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        running.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
        await advance(clock, running, byMicroseconds: 700_000, step: 10_000)
        let amber = await onLoop(running) { $0.patterns.decisions[.amber]?.reasons.map(\.text) ?? [] }
        try await stop(running)
        #expect(Self.received(dir).isEmpty, "nobody was handed a message")
        #expect(amber.contains { $0.contains("has nobody to tell") }, "\(amber)")
    }

    /// A webhook told of a call gets a take link; its token takes that call for that recipient
    /// only. Forged, altered and borrowed tokens are refused alike, counted, and logged as nothing.
    @Test func aWebhookTakesTheCallWithItsTokenAndForgedOnesAreRefusedAlike() async throws {
        let dir = TemporaryDirectory()
        var config = try Self.configuration(dir)
        let hook = "https://staff.example/hooks/vigil?secret=s3cret"
        config.projections.ladder.staff = [hook, Self.staff]
        config.http.publicURL = "https://vigil-a.lan:8443"
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try await start(node)
        running.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 500_000) }
        await advance(clock, running, byMicroseconds: 700_000, step: 10_000)
        await Self.deliverAll(running, clock)

        let opening = Self.received(dir)
        let toHook = try #require(opening.first { $0["recipients"] as? [String] == [hook] })
        #expect(opening.first { $0["recipients"] as? [String] == [Self.staff] }?["take"] == nil, "a phone replies by SMS")
        let take = try #require(toHook["take"] as? [String: Any])
        let call = try #require(take["call"] as? String)
        let token = try #require(take["token"] as? String)
        #expect(take["recipient"] as? String == hook)
        #expect(take["url"] as? String == "https://vigil-a.lan:8443/api/v1/callbacks/take")
        #expect(token.count == 64)

        func callback(_ request: CallbackTakeRequest) async throws -> NodeReply {
            try #require(await running.perform(.takeCallByCallback(request)))
        }
        let altered = String(token.dropLast()) + (token.hasSuffix("0") ? "1" : "0")
        let forged = [
            CallbackTakeRequest(call: call, recipient: hook, token: altered),
            CallbackTakeRequest(call: call, recipient: hook, token: String(repeating: "0", count: 64)),
            CallbackTakeRequest(call: call, recipient: hook, token: "short"),
            CallbackTakeRequest(call: call, recipient: hook, token: token.uppercased()),
            // The phone's number with the webhook's token: a token is good for one recipient.
            CallbackTakeRequest(call: call, recipient: Self.staff, token: token),
            // Another call's id with this call's token.
            CallbackTakeRequest(call: "alert:1:1", recipient: hook, token: token),
        ]
        for request in forged {
            let reply = try await callback(request)
            #expect(!reply.ok && reply.refusal == .invalid && reply.error == WebhookCallbackRule.refusal, "\(request): \(reply)")
        }
        #expect(await onLoop(running) { $0.projections.calls.calls[call]?.taken == nil })

        let taken = try await callback(CallbackTakeRequest(call: call, recipient: hook, token: token))
        #expect(taken.ok, "\(taken)")
        await Self.deliverAll(running, clock)
        let again = try await callback(CallbackTakeRequest(call: call, recipient: hook, token: token, by: "Marta"))
        #expect(!again.ok && again.refusal == .conflict, "a token takes its call once: \(again)")
        let status = await onLoop(running) { $0.liveStatus().webhookCallbacks }
        #expect(status?.taken == 1 && status?.refused == UInt64(forged.count + 1), "\(String(describing: status))")
        try await stop(running)

        let takenMessages = Self.received(dir).filter { ($0["text"] as? String)?.hasPrefix("TAKEN") == true }
        #expect(takenMessages.count == 2, "both recipients learn who took it")
        #expect(takenMessages.allSatisfy { $0["take"] == nil }, "nothing left to take")
        let takings = try storedEvents(dir).compactMap { e -> AlertTaken? in if case .alertTaken(let t) = e.body { t } else { nil } }
        #expect(takings.count == 1, "refused callbacks are never events")
        #expect(takings.first?.via == .webhook)
        #expect(takings.first?.by == WebhookCallbackRule.defaultTaker, "never the webhook's address, where its secrets are")
    }

    @Test func aCallbackKeysTokenIsBoundToItsCallItsStartAndItsRecipient() throws {
        let key = CallbackKey(bytes: Array(repeating: 7, count: 32))
        let token = key.token(call: "alert:ab:1", started: 5, recipient: "https://a.example/x")
        #expect(key.verifies(token, call: "alert:ab:1", started: 5, recipient: "https://a.example/x"))
        #expect(!key.verifies(token, call: "alert:ab:2", started: 5, recipient: "https://a.example/x"))
        #expect(!key.verifies(token, call: "alert:ab:1", started: 6, recipient: "https://a.example/x"), "the same id used again is another call")
        #expect(!key.verifies(token, call: "alert:ab:1", started: 5, recipient: "https://a.example/y"))
        // Fields are length-prefixed: moving bytes between them gives another token.
        #expect(key.token(call: "ab", started: 1, recipient: "c") != key.token(call: "a", started: 1, recipient: "bc"))
        #expect(!CallbackKey(bytes: Array(repeating: 8, count: 32)).verifies(token, call: "alert:ab:1", started: 5, recipient: "https://a.example/x"))
        #expect(!key.verifies(token + "00", call: "alert:ab:1", started: 5, recipient: "https://a.example/x"))
        #expect(!key.verifies("zz" + token.dropFirst(2), call: "alert:ab:1", started: 5, recipient: "https://a.example/x"))

        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        // An empty key (a power cut during the first start) is made again.
        FileManager.default.createFile(atPath: dir.path + "/callback-key", contents: Data())
        let made = try CallbackKey.load(directory: dir.path)
        let loaded = try CallbackKey.load(directory: dir.path)
        #expect(loaded.token(call: "c", started: 1, recipient: "r") == made.token(call: "c", started: 1, recipient: "r"), "kept across starts")
        let mode = try FileManager.default.attributesOfItem(atPath: dir.path + "/callback-key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/callback-key.new"))
        try "not a key\n".write(toFile: dir.path + "/callback-key", atomically: true, encoding: .utf8)
        #expect(throws: NodeError.self) { try CallbackKey.load(directory: dir.path) }
    }

    @Test func aTakeLinkGoesOnlyOverTLSAndOnlyOnTheExactOpeningMessageOfItsCall() {
        #expect(WebhookCallbackRule.carriesTokens("https://hooks.example/x"))
        #expect(WebhookCallbackRule.carriesTokens("http://127.0.0.1:8080/relay"))
        #expect(!WebhookCallbackRule.carriesTokens("http://relay.lan/x"), "a token in the clear on the Wi-Fi takes the call")
        #expect(!WebhookCallbackRule.carriesTokens("+34600111222"))
        let r = "https://h.example/x"
        #expect(WebhookCallbackRule.isOpening("call/resident:room-12/2/0.1/\(r)", of: "resident:room-12/2", to: r))
        // room-12/2's third ladder is not room-12's second.
        #expect(!WebhookCallbackRule.isOpening("call/resident:room-12/2/3/0.0/\(r)", of: "resident:room-12/2", to: r))
        #expect(WebhookCallbackRule.isOpening("call/resident:room-12/2/3/0.0/\(r)", of: "resident:room-12/2/3", to: r))
        #expect(!WebhookCallbackRule.isOpening("call/resident:room-12/2/taken/\(r)", of: "resident:room-12/2", to: r))
        #expect(!WebhookCallbackRule.isOpening("call/alert:ab:1/end/\(r)", of: "alert:ab:1", to: r))
        #expect(HTTPSettings.parsePublicURL("http://vigil-a.lan:8443") == nil)
        #expect(HTTPSettings.parsePublicURL("https://vigil-a.lan:8443/") == "https://vigil-a.lan:8443")
        #expect(HTTPSettings.parsePublicURL("http://127.0.0.1:8080") == "http://127.0.0.1:8080")
    }
}
