import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import VigilEvents
import VigilHub
import VigilHubProtocol
import VigilTestSupport
@testable import VigilNode

/// Bad input gets a clear refusal and changes nothing (issue 11, "Must hold").
@Suite(.serialized) struct RefusalTests {
    struct Joined {
        let node: UInt64
        let credential: BoxCredential
    }

    /// A box directory joined to `hub` (no node runs: requests are made by hand).
    static func join(_ hub: HubHarness, _ directory: TemporaryDirectory, as name: String) async throws -> Joined {
        let link = try await HubJoin.join(url: hub.url, token: try await hub.enrolmentToken(for: name), dataDirectory: directory.path)
        let node = try NodeIdentity.load(dataDirectory: directory.path)
        return Joined(node: node, credential: BoxCredential(node: node, secret: link.credential))
    }

    static func event(_ seq: UInt64, _ body: EventBody, time: UInt64 = 1_767_225_600_000_000) -> UploadedEvent {
        let (kind, payload) = EventCodec.encode(body)
        return UploadedEvent(seq: seq, kind: kind, timeUs: time, payload: payload,
                             hash: ContentHash.bytes(kind: kind, timeMicroseconds: time, payload: payload))
    }

    static func checkIn(_ resident: String) -> EventBody {
        var c = CheckIn()
        c.resident = resident
        c.source = .checkInButton
        return .checkIn(c)
    }

    /// POSTs `body` and returns the status and the refusal code (if any).
    static func post(_ client: HTTPClient, _ url: String, _ body: [UInt8], authorization: String?,
                     contentType: String = "application/json") async throws -> (Int, String?) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: contentType)
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(30))
        let answer = try await response.body.collect(upTo: 1 << 20)
        let refusal = try? JSONDecoder().decode(Refusal.self, from: Data(answer.readableBytesView))
        return (Int(response.status.code), refusal?.error)
    }

    static func encode(_ batch: UploadBatch) throws -> [UInt8] { Array(try JSONEncoder().encode(batch)) }

    @Test func badRequestsAreRefusedClearlyAndChangeNothing() async throws {
        let hub = HubHarness()
        try await hub.start()
        let boxA = TemporaryDirectory("box-a")
        let boxB = TemporaryDirectory("box-b")
        let a = try await Self.join(hub, boxA, as: "a")
        let b = try await Self.join(hub, boxB, as: "b")
        let client = try hub.rawClient()
        let urlA = hub.url + "/api/v1/boxes/\(NodeIDText.format(a.node))/events"
        let good = UploadBatch(node: NodeIDText.format(a.node), epoch: 0, from: 1, through: 3,
                               events: [Self.event(1, Self.checkIn("R-1")), Self.event(3, Self.checkIn("R-3"))])

        // Stored once; the same batch again (a lost answer, a replay; in binary, as boxes send
        // it) changes nothing.
        #expect(try await Self.post(client, urlA, Self.encode(good), authorization: a.credential.headerValue).0 == 200)
        #expect(try await Self.post(client, urlA, try good.protobuf(), authorization: a.credential.headerValue,
                                    contentType: UploadBatch.protobufContentType).0 == 200)
        let held = try await hub.database { try await $0.events(node: a.node, epoch: 0) }
        #expect(held.map(\.seq) == [1, 3])
        let state = try await hub.database { try await $0.syncState(node: a.node) }
        #expect(state.epochs.first?.heldThrough == 3)

        // Same identity, other content: 409, recorded as a conflict, nothing stored.
        var changed = good
        changed.events[0] = Self.event(1, Self.checkIn("R-forged"))
        #expect(try await Self.post(client, urlA, Self.encode(changed), authorization: a.credential.headerValue) == (409, "conflict"))
        #expect(try await hub.database { try await $0.syncState(node: a.node) }.conflicts == 1)

        // Out of order: a batch that leaves a gap after the hub's mark.
        let gap = UploadBatch(node: good.node, epoch: 0, from: 10, through: 10, events: [Self.event(10, Self.checkIn("R-10"))])
        #expect(try await Self.post(client, urlA, Self.encode(gap), authorization: a.credential.headerValue) == (409, "out_of_order"))

        // No credential, a wrong one, another box's, and a batch naming another box.
        #expect(try await Self.post(client, urlA, Self.encode(good), authorization: nil) == (401, "unauthenticated"))
        let wrong = BoxCredential(node: a.node, secret: String(repeating: "x", count: 43))
        #expect(try await Self.post(client, urlA, Self.encode(good), authorization: wrong.headerValue) == (401, "unauthenticated"))
        #expect(try await Self.post(client, urlA, Self.encode(good), authorization: b.credential.headerValue) == (403, "wrong_box"))
        let urlB = hub.url + "/api/v1/boxes/\(NodeIDText.format(b.node))/events"
        #expect(try await Self.post(client, urlB, Self.encode(good), authorization: b.credential.headerValue) == (422, "wrong_box"))

        // Malformed, oversized, unshared kinds, bad hashes, disorder inside a batch.
        #expect(try await Self.post(client, urlA, Array("{\"node\":".utf8), authorization: a.credential.headerValue) == (400, "bad_json"))
        let huge = [UInt8](repeating: UInt8(ascii: " "), count: 5 << 20)
        #expect(try await Self.post(client, urlA, huge, authorization: a.credential.headerValue).0 == 413)
        // The binary body boxes send: bytes that are no batch, a hash of the wrong length, and
        // the JSON base64 and hex checks.
        let binary = UploadBatch.protobufContentType
        #expect(try await Self.post(client, urlA, [0xFF, 0xFF, 0xFF], authorization: a.credential.headerValue, contentType: binary)
                == (400, "bad_body"))
        #expect(try await Self.post(client, urlA, huge, authorization: a.credential.headerValue, contentType: binary).0 == 413)
        var shortHash = UploadBatch(node: good.node, epoch: 0, from: 4, through: 4, events: [Self.event(4, Self.checkIn("R-4"))])
        shortHash.events[0].hash = [1, 2, 3]
        #expect(try await Self.post(client, urlA, try shortHash.protobuf(), authorization: a.credential.headerValue, contentType: binary)
                == (422, "bad_event"))
        let notBase64 = #"{"node":"\#(good.node)","epoch":0,"epoch_first":1,"from":4,"through":4,"urgent":false,"events":[{"seq":4,"kind":5,"time_us":1,"payload":"***","hash":"00"}]}"#
        #expect(try await Self.post(client, urlA, Array(notBase64.utf8), authorization: a.credential.headerValue) == (400, "bad_json"))
        var hit = ScanHit()
        hit.address = 0xAABB_CCDD_EEFF
        hit.count = 1
        let scan = UploadBatch(node: good.node, epoch: 0, from: 4, through: 4, events: [Self.event(4, .scanHit(hit))])
        #expect(try await Self.post(client, urlA, Self.encode(scan), authorization: a.credential.headerValue) == (422, "not_shared"))
        var badHash = UploadBatch(node: good.node, epoch: 0, from: 4, through: 4, events: [Self.event(4, Self.checkIn("R-4"))])
        badHash.events[0].hash = [UInt8](repeating: 0, count: 32)
        #expect(try await Self.post(client, urlA, Self.encode(badHash), authorization: a.credential.headerValue) == (422, "hash_mismatch"))
        let disorder = UploadBatch(node: good.node, epoch: 0, from: 4, through: 6,
                                   events: [Self.event(6, Self.checkIn("R-6")), Self.event(5, Self.checkIn("R-5"))])
        #expect(try await Self.post(client, urlA, Self.encode(disorder), authorization: a.credential.headerValue) == (422, "bad_order"))

        // An alert in another box's name, which the feed would carry to every box.
        var forged = Alert()
        forged.id = AlertID(origin: b.node, counter: 9)
        forged.kind = .sos
        let forgery = UploadBatch(node: good.node, epoch: 0, from: 4, through: 4, events: [Self.event(4, .alertRaised(forged))])
        #expect(try await Self.post(client, urlA, Self.encode(forgery), authorization: a.credential.headerValue) == (422, "forged_origin"))

        // None of that changed what the hub holds.
        #expect(try await hub.database { try await $0.events(node: a.node, epoch: 0) }.map(\.seq) == [1, 3])
        #expect(try await hub.database { try await $0.syncState(node: a.node) }.epochs.first?.heldThrough == 3)

        // A revoked box is refused at once; a used token cannot enrol again.
        let revoked = try await Hub.revoke(name: "a", configuration: hub.configuration, logger: quietLogger)
        #expect(revoked)
        #expect(try await Self.post(client, urlA, Self.encode(good), authorization: a.credential.headerValue) == (401, "unauthenticated"))
        // Its long polls too: the refusal above ended what the hub remembered of its credential
        // (a long poll may be let in by a recent check; `CredentialCache`).
        var longPoll = HTTPClientRequest(url: hub.url + "/api/v1/boxes/\(NodeIDText.format(a.node))/feed?after=0&wait=20")
        longPoll.headers.add(name: "authorization", value: a.credential.headerValue)
        #expect(try await client.execute(longPoll, timeout: .seconds(30)).status.code == 401)
        let token = try await hub.enrolmentToken(for: "c")
        let enrol = Array(try JSONEncoder().encode(EnrolRequest(token: token.secret, node: "00000000000000c1")))
        #expect(try await Self.post(client, hub.url + "/api/v1/boxes/enrol", enrol, authorization: nil).0 == 200)
        let again = Array(try JSONEncoder().encode(EnrolRequest(token: token.secret, node: "00000000000000c2")))
        #expect(try await Self.post(client, hub.url + "/api/v1/boxes/enrol", again, authorization: nil) == (403, "token_refused"))
        // A token made for another box cannot take over an enrolled node (its id is no secret).
        let other = try await hub.enrolmentToken(for: "d")
        let takeover = Array(try JSONEncoder().encode(EnrolRequest(token: other.secret, node: NodeIDText.format(b.node))))
        #expect(try await Self.post(client, hub.url + "/api/v1/boxes/enrol", takeover, authorization: nil) == (409, "node_enrolled"))
        // Nor the network's own alert origin (public: GET /api/v1/hub), whose holder could cancel
        // coordinators' alerts; the token stays good for the box's own id.
        let network = try await hub.database { try await $0.networkAlertOrigin() }
        let claim = Array(try JSONEncoder().encode(EnrolRequest(token: other.secret, node: NodeIDText.format(network))))
        #expect(try await Self.post(client, hub.url + "/api/v1/boxes/enrol", claim, authorization: nil) == (400, "reserved_node"))
        let own = Array(try JSONEncoder().encode(EnrolRequest(token: other.secret, node: "00000000000000d1")))
        #expect(try await Self.post(client, hub.url + "/api/v1/boxes/enrol", own, authorization: nil).0 == 200)
        #expect(try await Self.post(client, urlB, Self.encode(UploadBatch(node: NodeIDText.format(b.node), epoch: 0, from: 1, through: 1,
                                                                          events: [Self.event(1, Self.checkIn("R-b"))])),
                                    authorization: b.credential.headerValue).0 == 200, "b's own credential still works")
        try await client.shutdown()
        await hub.stop()
    }

    @Test func aBoxHoldsAtMostTwoLongPollsOpen() async throws {
        let hub = HubHarness("polls")
        try await hub.start()
        let dir = TemporaryDirectory("box-polls")
        let a = try await Self.join(hub, dir, as: "a")
        let client = try hub.rawClient()
        let url = hub.url + "/api/v1/boxes/\(NodeIDText.format(a.node))/feed?after=0&wait=5"
        func poll() async throws -> UInt {
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "authorization", value: a.credential.headerValue)
            let response = try await client.execute(request, timeout: .seconds(20))
            _ = try await response.body.collect(upTo: 1 << 20)
            return response.status.code
        }
        // Three polls at once on an empty feed: two wait (5 s), the third is refused at once.
        let started = ContinuousClock.now
        let answers = try await withThrowingTaskGroup(of: (UInt, Duration).self) { group in
            for _ in 0..<3 { group.addTask { (try await poll(), ContinuousClock.now - started) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.map(\.0).sorted() == [200, 200, 429])
        #expect(answers.filter { $0.0 == 429 }.allSatisfy { $0.1 < .seconds(3) }, "the third is refused at once, not held")
        // With the two answered, the box may poll again.
        var plain = HTTPClientRequest(url: hub.url + "/api/v1/boxes/\(NodeIDText.format(a.node))/feed?after=0&wait=0.1")
        plain.headers.add(name: "authorization", value: a.credential.headerValue)
        #expect(try await client.execute(plain, timeout: .seconds(10)).status.code == 200)
        try await client.shutdown()
        await hub.stop()
    }

    @Test func aBoxJoinsOnlyTheHubItsTokenNames() async throws {
        let hub = HubHarness()
        try await hub.start()
        let other = HubHarness("other-hub")
        try await other.start()
        let box = TemporaryDirectory("box")
        // A token from `other`, used against `hub`: the box sees a different certificate and
        // sends nothing.
        let token = try await other.enrolmentToken(for: "x")
        await #expect(throws: HubClient.Failure.self) {
            _ = try await HubJoin.join(url: hub.url, token: token, dataDirectory: box.path)
        }
        #expect(!FileManager.default.fileExists(atPath: box.path("hub.json")))
        await other.stop()
        await hub.stop()
    }
}
