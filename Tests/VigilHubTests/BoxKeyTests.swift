import AsyncHTTPClient
import Foundation
import NIOCore
import PostgresNIO
import Testing
import VigilEvents
import VigilHub
import VigilHex
import VigilHubProtocol
import VigilLog
import VigilRadio
import VigilSystem
import VigilTestSupport
@testable import VigilNode

/// A key per box at the hub (issue 29, docs/signed-frames.md "With a hub"), against a real hub on
/// PostgreSQL: certificates at join, revocations on the feed, the hub's time.
@Suite(.serialized) struct BoxKeyTests {
    /// A signed SOS of the box whose data directory is `directory`, signed at `nowSeconds`.
    static func sos(from directory: String, counter: UInt32, nowSeconds: UInt64) throws -> AdvertisingReport {
        let key = try BoxKeyFiles.loadOrCreateKey(directory: directory)
        let certificate = try #require(try BoxKeyFiles.certificate(directory: directory))
        let frame = try SignedAlertFrame.sign(type: .sos, severity: 3, origin: certificate.node, counter: counter,
                                              expirySeconds: UInt32(nowSeconds + 3_600), signedAtSeconds: UInt32(nowSeconds),
                                              clockVouched: true, key: key, certificate: certificate)
        return AdvertisingReport(address: 0xC0FFEE, addressType: .addressRandom, rssi: -60, connectable: false,
                                 data: try AdvertisingPayload.signedVigil(frame: frame).bytes, timeMicroseconds: nowSeconds * 1_000_000)
    }

    /// Every event body in the log of `directory`, in order.
    static func logged(_ directory: String) throws -> [EventBody] {
        let log = try EventLog.openReadOnly(directory: directory)
        var bodies: [EventBody] = []
        try log.read { txn in
            try txn.forEach(from: 0) { result in
                if case .event(let e) = Replay.input(result) { bodies.append(e.body) }
                return true
            }
        }
        return bodies
    }

    static func received(_ directory: String) throws -> [UInt32] {
        try Self.logged(directory).compactMap { if case .alertReceived(let r) = $0 { r.id.counter } else { nil } }
    }

    @Test func joiningCertifiesTheBoxsKeyAndABoxRevokedAtTheHubIsRefusedByTheOthersWithinOneFeedSync() async throws {
        let hub = HubHarness()
        hub.clockSynchronised = true
        try await hub.start()
        let kitchen = Box(), desk = Box()
        try await kitchen.join(hub, as: "kitchen")
        try await desk.join(hub, as: "front-desk")
        let kitchenCertificate = try await HubJoin.certifyKey(dataDirectory: kitchen.directory.path)
        _ = try await HubJoin.certifyKey(dataDirectory: desk.directory.path)

        // Both boxes hold the one network key, the hub's, and a certificate of their own key.
        let network = try #require(try BoxKeyFiles.networkKey(directory: desk.directory.path))
        #expect(try BoxKeyFiles.networkKey(directory: kitchen.directory.path) == network)
        #expect(try await hub.database { try await $0.networkSigningKey().publicKey } == network)
        try kitchenCertificate.verify(network: network)
        #expect(kitchenCertificate.boxKey == (try BoxKeyFiles.loadOrCreateKey(directory: kitchen.directory.path)).publicKey)
        #expect(kitchenCertificate.node == UInt32(truncatingIfNeeded: try NodeIdentity.load(dataDirectory: kitchen.directory.path)))

        // The front desk runs on real time, with no synchronised clock of its own: the answers of
        // a hub whose clock is synchronised give it a time it can vouch for.
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        desk.clock.advance(byMicroseconds: now - desk.clock.nowMicroseconds())
        try await desk.start()
        try await desk.waitUntilSynced()
        try await desk.until("the hub's time is the box's") { $0.airAlerts.signingStatus.clock == "hub" }
        #expect(await desk.read { $0.airAlerts.signingStatus.signing } == true, "certified by the hub, the box signs")

        // The kitchen's SOS is believed; then the kitchen is revoked at the hub.
        let report1 = try Self.sos(from: kitchen.directory.path, counter: 1, nowSeconds: now / 1_000_000)
        _ = await desk.read { $0.airAlerts.inspect(report1) }
        #expect(try await Hub.revoke(name: "kitchen", configuration: hub.configuration, logger: quietLogger))
        try await desk.until("the revocation came with the feed") { $0.liveStatus().signing?.revoked == 1 }
        let report2 = try Self.sos(from: kitchen.directory.path, counter: 2, nowSeconds: now / 1_000_000)
        _ = await desk.read { $0.airAlerts.inspect(report2) }
        let refused = await desk.read { $0.liveStatus().air }
        try await desk.stop()
        await hub.stop()

        #expect(try Self.received(desk.directory.path) == [1], "the SOS before the revocation stands; the one after is refused")
        #expect(refused?.revoked == 1, "and counted")
        let kept = BoxKeyFiles.revocations(directory: desk.directory.path).revocations
        #expect(kept.map(\.boxKey) == [kitchenCertificate.boxKey], "kept on the card for the next start and relayed on the air")
        let logged = try Self.logged(desk.directory.path).contains { event in
            if case .hubReceived(let r) = event { r.kind == EventKind.boxKeyRevoked.rawValue } else { false }
        }
        #expect(logged, "the feed item is in the box's log: `vigil why` can show it")
    }

    /// The hub's refusal of `body`, as (status, error code); nil when it was not refused.
    static func refusal(_ body: () async throws -> Void) async throws -> (status: Int, error: String)? {
        do {
            try await body()
            return nil
        } catch let failure as HubClient.Failure {
            guard case .refused(let status, let refusal) = failure else { throw failure }
            return (status, refusal.error)
        }
    }

    @Test func aBoxThatComesWithANewKeyHasItsOldOneRevokedAndNoBoxGetsAnotherBoxsKeyOrFrameID() async throws {
        let hub = HubHarness()
        try await hub.start()
        let kitchen = Box()
        try await kitchen.join(hub, as: "kitchen")
        let first = try await HubJoin.certifyKey(dataDirectory: kitchen.directory.path)
        let firstKeyFile = try String(contentsOfFile: kitchen.directory.path("box.key"), encoding: .utf8)
        // The same key again is certified again (a renewal) and revokes nothing.
        let renewed = try await HubJoin.certifyKey(dataDirectory: kitchen.directory.path)
        #expect(renewed.boxKey == first.boxKey)
        // A new card: a new key. The old one is revoked on the feed in the same step.
        try FileManager.default.removeItem(atPath: kitchen.directory.path("box.key"))
        let second = try await HubJoin.certifyKey(dataDirectory: kitchen.directory.path)
        #expect(second.boxKey != first.boxKey)
        let revocations = try await hub.database { db in
            try await db.feed(after: 0, for: 1).compactMap { item -> [UInt8]? in
                guard item.kind == EventKind.boxKeyRevoked.rawValue,
                      case .boxKeyRevoked(let r) = try EventCodec.decode(kind: item.kind, payload: item.payload, sequence: 0) else { return nil }
                return [UInt8](r.revocation)
            }
        }
        let revocation = try Revocation(bytes: try #require(revocations.first))
        #expect(revocations.count == 1 && revocation.boxKey == first.boxKey && revocation.node == first.node)
        try revocation.verify(network: try #require(try BoxKeyFiles.networkKey(directory: kitchen.directory.path)))

        // A third key within the hour is refused (a box cannot flood every box with revocations),
        // and so is the revoked key brought back: every box refuses it for good.
        try FileManager.default.removeItem(atPath: kitchen.directory.path("box.key"))
        let tooSoon = try await Self.refusal { _ = try await HubJoin.certifyKey(dataDirectory: kitchen.directory.path) }
        #expect(tooSoon?.status == 429 && tooSoon?.error == "too_soon")
        try FileManager.default.removeItem(atPath: kitchen.directory.path("box.key"))
        try FileSystem.createExclusive(kitchen.directory.path("box.key"), contents: Array(firstKeyFile.utf8), mode: 0o600)
        let revokedAgain = try await Self.refusal { _ = try await HubJoin.certifyKey(dataDirectory: kitchen.directory.path) }
        #expect(revokedAgain?.status == 409 && revokedAgain?.error == "key_revoked")

        // A cloned card in another box (a key of the kitchen's): not certified for a second box.
        let desk = Box()
        try await desk.join(hub, as: "front-desk")
        try FileSystem.createExclusive(desk.directory.path("box.key"),
                                       contents: Array(Hex.encode(try BoxSigningKey(seed: Self.seed(kitchen.directory.path("box.key"))).seed).utf8),
                                       mode: 0o600)
        let taken = try await Self.refusal { _ = try await HubJoin.certifyKey(dataDirectory: desk.directory.path) }
        #expect(taken?.status == 409 && taken?.error == "key_taken")

        // The kitchen's public key, sent by another box without its private key: the proof fails.
        let certificatePEM = try String(contentsOfFile: hub.hubData + "/tls/hub.crt", encoding: .utf8)
        // This hub does not say its clock is synchronised: its answers give a box no time (the
        // first test's hub does, and its box takes the hub's time).
        let heard = LockedValue<[UInt64]>([])
        let timeless = try HubClient(url: hub.url, certificatePEM: certificatePEM, credential: nil,
                                     heardTime: { microseconds in heard.withLock { $0.append(microseconds) } })
        _ = try await timeless.info()
        timeless.close()
        #expect(heard.withLock { $0 }.isEmpty, "an unsynchronised hub's Date is not taken")
        let deskNode = try NodeIdentity.load(dataDirectory: desk.directory.path)
        let deskLink = try #require(try HubLinks.load(dataDirectory: desk.directory.path).hubs.first)
        let deskClient = try HubClient(url: hub.url, certificatePEM: certificatePEM, credential: BoxCredential(node: deskNode, secret: deskLink.credential))
        defer { deskClient.close() }
        let stolenKey = try await Self.refusal {
            _ = try await deskClient.certify(node: deskNode, boxKey: second.boxKey,
                                             proof: try KeyPossession.prove(node: deskNode, key: BoxSigningKey(), hubFingerprint: hub.fingerprint))
        }
        #expect(stolenKey?.status == 400 && stolenKey?.error == "bad_proof")
        // A proof made for another hub is no proof here.
        let mine = BoxSigningKey()
        let otherHub = try await Self.refusal {
            _ = try await deskClient.certify(node: deskNode, boxKey: mine.publicKey,
                                             proof: try KeyPossession.prove(node: deskNode, key: mine, hubFingerprint: String(repeating: "0", count: 64)))
        }
        #expect(otherHub?.error == "bad_proof")

        // A box that enrolled with a 64-bit node id whose low 32 bits are the kitchen's (frames
        // carry those) gets no certificate: it would speak for the kitchen on the air.
        let kitchenNode = try NodeIdentity.load(dataDirectory: kitchen.directory.path)
        let clone = (UInt64(0x5EED) << 32) | kitchenNode
        let token = try await hub.enrolmentToken(for: "clone")
        let anonymous = try HubClient(url: hub.url, certificatePEM: certificatePEM, credential: nil)
        let enrolled = try await anonymous.enrol(token: token.secret, node: clone)
        anonymous.close()
        let cloneClient = try HubClient(url: hub.url, certificatePEM: certificatePEM, credential: BoxCredential(node: clone, secret: enrolled.credential))
        defer { cloneClient.close() }
        let cloneKey = BoxSigningKey()
        let clash = try await Self.refusal {
            _ = try await cloneClient.certify(node: clone, boxKey: cloneKey.publicKey,
                                              proof: try KeyPossession.prove(node: clone, key: cloneKey, hubFingerprint: hub.fingerprint))
        }
        #expect(clash?.status == 409 && clash?.error == "node_id_clash")

        // Without the box's credential nothing is certified; a key that is not one is refused.
        let stranger = try HubClient(url: hub.url, certificatePEM: certificatePEM, credential: nil)
        defer { stranger.close() }
        let anonymousAsk = try await Self.refusal {
            _ = try await stranger.certify(node: kitchenNode, boxKey: cloneKey.publicKey,
                                           proof: try KeyPossession.prove(node: kitchenNode, key: cloneKey, hubFingerprint: hub.fingerprint))
        }
        #expect(anonymousAsk?.status == 401)
        var request = HTTPClientRequest(url: hub.url + "/api/v1/boxes/\(NodeIDText.format(deskNode))/certificate")
        request.method = .POST
        request.headers.add(name: "Authorization", value: BoxCredential(node: deskNode, secret: deskLink.credential).headerValue)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"box_key":"00","proof":"00"}"#))
        let raw = try hub.rawClient()
        let answer = try await raw.execute(request, timeout: .seconds(30))
        try await raw.shutdown()
        #expect(answer.status.code == 400)
        await hub.stop()
    }

    @Test func aBoxWithEightKeysGetsNoNinthUntilItIsRevokedAndJoinsAnew() async throws {
        let hub = HubHarness()
        try await hub.start()
        let kitchen = Box()
        try await kitchen.join(hub, as: "kitchen")
        /// A new key, certified (the earlier ones made older than the hourly limit looks at).
        func newKey() async throws -> (status: Int, error: String)? {
            try await hub.database { db in
                _ = try await db.client.query("UPDATE box_keys SET certified_at = certified_at - interval '2 hours'", logger: quietLogger)
                _ = try await db.client.query("UPDATE boxes SET enrolled_at = enrolled_at - interval '2 hours'", logger: quietLogger)
            }
            if FileManager.default.fileExists(atPath: kitchen.directory.path("box.key")) {
                try FileManager.default.removeItem(atPath: kitchen.directory.path("box.key"))
            }
            return try await Self.refusal { _ = try await HubJoin.certifyKey(dataDirectory: kitchen.directory.path) }
        }
        for _ in 0..<HubDatabase.maximumKeysPerBox {
            let refused = try await newKey()
            #expect(refused == nil, "\(String(describing: refused))")
        }
        let ninth = try await newKey()
        #expect(ninth?.status == 409 && ninth?.error == "too_many_keys")
        let feedItems = try await hub.database { db in
            try await db.feed(after: 0, for: 1).filter { $0.kind == EventKind.boxKeyRevoked.rawValue }.count
        }
        #expect(feedItems == HubDatabase.maximumKeysPerBox - 1, "each new key revoked the one before, on the feed")

        // Its owner revokes it and has it join again: the count starts again.
        #expect(try await Hub.revoke(name: "kitchen", configuration: hub.configuration, logger: quietLogger))
        try await kitchen.join(hub, as: "kitchen")
        let again = try await newKey()
        #expect(again == nil, "\(String(describing: again))")
        await hub.stop()
    }

    static func seed(_ path: String) throws -> [UInt8] {
        try #require(Hex.decode(try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}
