import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import VigilEvents
import VigilHex
import VigilHubProtocol
import VigilTrust

/// The box-facing API, `/api/v1` (OpenAPI: `Sources/VigilHub/openapi.yaml`).
///
/// Anonymous: health, the hub's certificate and fingerprint, and enrolment with a single-use
/// token. Everything else needs the box's own credential for the node in the path.
struct SyncRoutes: Sendable {
    let database: HubDatabase
    let identity: HubIdentity
    let signal: FeedSignal
    let cache: FeedCache
    let streams: FeedStreams
    let polls = PollLimit()
    let credentials = CredentialCache()
    let keyFileSlots = KeyFileSlots()
    let logger: Logger

    /// A long poll waits at most this long (seconds) for a new item.
    static let maxWaitSeconds = 30.0

    /// An upload's body at most (a batch is bounded by the box at 1 MiB of payload).
    static let maxUploadBytes = 4 << 20
    /// Events in one batch at most.
    static let maxBatchEvents = 5_000
    static let maxEnrolBytes = 4_096

    func register(on router: Router<HubRequestContext>) {
        let api = router.group("api/v1")
        api.get("health") { _, _ in Self.json(["status": "ok"]) }
        api.get("hub") { _, _ in
            do {
                return Self.json(HubInfo(fingerprint: identity.fingerprint, network: NodeIDText.format(try await database.networkAlertOrigin())))
            } catch {
                return Self.refuse(.serviceUnavailable, "database_unavailable", "the hub's database is not answering; try again")
            }
        }
        api.get("hub/certificate") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/x-pem-file"],
                     body: .init(byteBuffer: ByteBuffer(string: identity.certificatePEM)))
        }
        api.post("boxes/enrol") { request, _ in try await enrol(request) }
        api.post("boxes/{node}/events") { request, context in try await upload(request, context) }
        api.get("boxes/{node}/sync") { request, context in try await sync(request, context) }
        api.get("boxes/{node}/feed") { request, context in try await feed(request, context) }
        api.get("boxes/{node}/key-files/{file}/{part}") { request, context in try await keyFile(request, context) }
        api.post("boxes/{node}/certificate") { request, context in try await certify(request, context) }
    }

    /// Certifies the signing key of an enrolled box (`BoxKeys`): its credential says which box
    /// asks, its proof (`KeyPossession`) that it holds the key.
    func certify(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        let node: UInt64
        switch await authenticate(request, context) {
        case .success(let n): node = n
        case .failure(let refusal): return refusal.response
        }
        let asked: CertificateRequest
        switch await Self.decode(CertificateRequest.self, request, limit: Self.maxEnrolBytes) {
        case .success(let r): asked = r
        case .failure(let refusal): return refusal.response
        }
        guard let raw = Hex.decode(asked.boxKey), let key = try? BoxPublicKey(rawRepresentation: raw), (try? key.signingKey()) != nil else {
            return Self.refuse(.badRequest, "bad_key", "box_key must be an Ed25519 public key, 64 hex digits")
        }
        guard let proof = Hex.decode(asked.proof), KeyPossession.isProven(proof, node: node, boxKey: key, hubFingerprint: identity.fingerprint) else {
            return Self.refuse(.badRequest, "bad_proof", "proof must be the box key's signature of its possession for this node and this hub (docs/signed-frames.md)")
        }
        do {
            switch try await database.certify(node: node, boxKey: key, nowSeconds: UInt32(clamping: Int(Date().timeIntervalSince1970))) {
            case .certified(let certificate, let network, let revokedKeys):
                logger.info("hub: a box's key was certified", metadata: ["node": "\(NodeIDText.format(node))", "old_keys_revoked": "\(revokedKeys)"])
                return Self.json(CertificateAnswer(certificate: Hex.encode(certificate.bytes), networkKey: Hex.encode(network.rawRepresentation)))
            case .nodeIDClash(let holder):
                return Self.refuse(.conflict, "node_id_clash",
                                   "this box's node id has the same low 32 bits as \(holder)'s, which frames name it by; give the box a new node id and join again")
            case .keyTaken:
                return Self.refuse(.conflict, "key_taken", "this key is certified for another box")
            case .keyRevoked:
                return Self.refuse(.conflict, "key_revoked", "this key was revoked and every box refuses it: make a new one (move DATA/box.key away) and ask again")
            case .tooManyKeys:
                return Self.refuse(.conflict, "too_many_keys",
                                   "this box has had \(HubDatabase.maximumKeysPerBox) keys certified: revoke it (vigil-hub revoke) and have it join anew")
            case .tooSoon:
                var refused = Self.refuse(.tooManyRequests, "too_soon",
                                          "this box got \(HubDatabase.newKeysPerInterval) new keys in the last \(HubDatabase.newKeyIntervalSeconds / 60) minutes; ask again later")
                refused.headers[.retryAfter] = "\(HubDatabase.newKeyIntervalSeconds)"
                return refused
            case .revoked:
                return Self.refuse(.unauthorized, "unauthenticated", "unknown or revoked credential")
            }
        } catch {
            logger.error("hub: a certification failed", metadata: ["error": "\(String(reflecting: error))"])
            return Self.refuse(.serviceUnavailable, "database_unavailable", "the hub's database is not answering; try again")
        }
    }

    /// A part of a key file the feed offered, for an enrolled box.
    func keyFile(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        switch await authenticate(request, context) {
        case .success: break
        case .failure(let refusal): return refusal.response
        }
        guard let text = context.parameters.get("file"), let id = UInt64(text), id > 0, id <= UInt64(Int64.max) else {
            return Self.refuse(.badRequest, "bad_file", "the path's file must be a key file id (1 or more)")
        }
        let signature: Bool
        switch context.parameters.get("part") {
        case "export.bin": signature = false
        case "export.sig": signature = true
        default: return Self.refuse(.notFound, "unknown_part", "a key file has two parts: export.bin and export.sig")
        }
        guard let slot = await keyFileSlots.enter() else {
            var busy = Self.refuse(.serviceUnavailable, "busy", "\(KeyFileSlots.limit) key files are being sent; try again in a few seconds")
            busy.headers[.retryAfter] = "5"
            return busy
        }
        let part: ByteBuffer?
        do {
            part = try await database.keyFilePart(id: id, signature: signature)
        } catch {
            await keyFileSlots.leave(slot)
            throw error
        }
        guard let bytes = part else {
            await keyFileSlots.leave(slot)
            return Self.refuse(.notFound, "unknown_file", "the hub holds no key file \(id)")
        }
        // The slot is held until the bytes are written (or the box went away).
        let slots = keyFileSlots
        return Response(status: .ok, headers: [.contentType: "application/octet-stream"],
                        body: ResponseBody(contentLength: bytes.readableBytes) { writer in
                            do {
                                try await writer.write(bytes)
                                try await writer.finish(nil)
                                await slots.leave(slot)
                            } catch {
                                await slots.leave(slot)
                                throw error
                            }
                        })
    }

    // MARK: Handlers

    func enrol(_ request: Request) async throws -> Response {
        let enrol: EnrolRequest
        switch await Self.decode(EnrolRequest.self, request, limit: Self.maxEnrolBytes) {
        case .success(let e): enrol = e
        case .failure(let refusal): return refusal.response
        }
        guard let node = NodeIDText.parse(enrol.node), node != 0 else {
            return Self.refuse(.badRequest, "bad_node", "node must be 16 lower-case hex digits, not all zero")
        }
        do {
            switch try await database.enrol(token: enrol.token, node: node) {
            case .enrolled(let name, let credential):
                logger.info("hub: a box joined", metadata: ["node": "\(enrol.node)", "name": "\(name)"])
                return Self.json(EnrolAnswer(node: enrol.node, name: name, credential: credential))
            case .tokenRefused:
                return Self.refuse(.forbidden, "token_refused", "this enrolment token is unknown, used or expired")
            case .nameTaken(let name):
                return Self.refuse(.conflict, "name_taken", "another box is already called \(name)")
            case .nodeReserved:
                return Self.refuse(.badRequest, "reserved_node", "this node id is the network's own alert origin; a box cannot take it")
            case .nodeEnrolled(let name):
                return Self.refuse(.conflict, "node_enrolled", "this node is enrolled as \(name); join again with a token made for that name")
            }
        }
    }

    func upload(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        let node: UInt64
        switch await authenticate(request, context) {
        case .success(let n): node = n
        case .failure(let refusal): return refusal.response
        }
        let batch: UploadBatch
        switch await Self.decodeBatch(request) {
        case .success(let b): batch = b
        case .failure(let refusal): return refusal.response
        }
        switch Self.validate(batch, node: node) {
        case .failure(let refusal): return refusal.response
        case .success(let decoded):
            switch try await database.upload(batch, node: node, events: decoded) {
            case .stored(let answer): return Self.json(answer)
            case .refused(let status, let refusal): return Self.json(refusal, status: HTTPResponse.Status(code: status))
            }
        }
    }

    func sync(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        switch await authenticate(request, context) {
        case .success(let node): return Self.json(try await database.syncState(node: node))
        case .failure(let refusal): return refusal.response
        }
    }

    /// Items after `after` from other boxes and coordinators; waits up to `wait` seconds for
    /// one when there is none (a long poll, woken by any hub process's commit).
    func feed(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        let node: UInt64
        let longPoll = request.uri.queryParameters["wait"].flatMap { Double(String($0)) }.map { $0 > 0 } ?? false
        switch await authenticate(request, context, longPoll: longPoll) {
        case .success(let n): node = n
        case .failure(let refusal): return refusal.response
        }
        let query = request.uri.queryParameters
        guard let after = UInt64(query["after"].map(String.init) ?? "0") else {
            return Self.refuse(.badRequest, "bad_query", "after must be a feed position (0 or more)")
        }
        guard let wait = Double(query["wait"].map(String.init) ?? "0"), wait >= 0, wait <= Self.maxWaitSeconds else {
            return Self.refuse(.badRequest, "bad_query", "wait must be 0 to \(Int(Self.maxWaitSeconds)) seconds")
        }
        // The box's fingerprint of the item at its cursor: when the hub holds another there (or
        // none), the answer goes at once, not after the wait.
        let at = query["at"].map(String.init)
        if let at, at.count != 16 || !at.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) {
            return Self.refuse(.badRequest, "bad_query", "at must be 16 lower-case hex digits")
        }
        if query["stream"] == "1", let header = request.headers[.authorization], let credential = BoxCredential(headerValue: header) {
            return try await stream(after: after, for: node, credentialHash: HubDatabase.hashHex(credential.secret), at: at)
        }
        guard wait > 0 else { return try await poll(after: after, for: node, wait: 0, at: at) }
        guard await polls.enter(node) else {
            return Self.refuse(.tooManyRequests, "too_many_polls", "this box already holds \(PollLimit.perBox) long polls open; wait for their answers")
        }
        // The slot is given back before the answer goes, so the box's next poll finds it free.
        do {
            let answer = try await poll(after: after, for: node, wait: wait, at: at)
            await polls.leave(node)
            return answer
        } catch {
            await polls.leave(node)
            throw error
        }
    }

    /// The feed as a stream of lines (`FeedStreams` has the contract). It holds one of the box's
    /// poll places while it is open.
    func stream(after: UInt64, for node: UInt64, credentialHash: String, at: String?) async throws -> Response {
        // A cursor the shared window cannot judge (a box catching up from long ago, or one ahead
        // of this process) is answered here, as one plain read: the database's pages are read in
        // this request, never by the reader every stream waits on. The box reads the answer as
        // one and asks again; once its cursor is in the window, it gets a stream.
        let seen = await signal.generation
        if try await cache.items(after: after, for: node, generation: seen, limit: 1, database: database) == nil {
            return try await poll(after: after, for: node, wait: 0, at: at)
        }
        guard await polls.enter(node) else {
            return Self.refuse(.tooManyRequests, "too_many_polls", "this box already holds \(PollLimit.perBox) feed reads open; wait for their answers")
        }
        let polls = self.polls, streams = self.streams
        // The place goes back when the hub ends the stream (or its body ends, below).
        let place = OnceFlag()
        let giveBack: @Sendable () -> Void = { if place.set() { Task { await polls.leave(node) } } }
        guard let subscription = await streams.open(node: node, credentialHash: credentialHash, after: after, at: at, onClose: giveBack) else {
            giveBack()
            return Self.refuse(.serviceUnavailable, "shutting_down", "the hub is shutting down; read the feed from another")
        }
        // The stream is the body's: ended when the body ends, or when Hummingbird drops the
        // body unrun (the box left before the head went out).
        let lease = StreamLease {
            Task { await streams.close(subscription.id) }
            giveBack()
        }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: "no-store"], body: ResponseBody { writer in
            defer { lease.release() }
            for await line in subscription.lines { try await writer.write(line) }
            try await writer.finish(nil)
        })
    }

    /// Items after `after`, waiting up to `wait` seconds for one.
    func poll(after: UInt64, for node: UInt64, wait: Double, at: String? = nil) async throws -> Response {
        let deadline = ContinuousClock.now + .seconds(wait)
        while true {
            let seen = await signal.generation
            // A long poll reads through this process's shared window; a plain read (wait=0), or
            // a cursor the window cannot judge, asks the database, so it sees every commit up to now.
            var page: HubDatabase.FeedPage?
            if wait > 0 { page = try await cache.items(after: after, for: node, generation: seen, limit: 200, database: database) }
            if page == nil { page = try await database.feedPage(after: after, for: node) }
            guard let page else { continue }
            let items = page.items
            let left = deadline - ContinuousClock.now
            // A cursor the feed no longer holds as the box took it is answered at once (when the
            // box said what it took): the box reads again.
            let atCursor = page.atCursor.map { FeedAnswer.digestText(FeedItemDigest.of(kind: $0.kind, timeMicroseconds: $0.timeUs, payload: $0.payload)) }
            let lost = at != nil && after > 0 && atCursor != at
            if !items.isEmpty || left <= .zero || lost {
                let entries = items.map {
                    FeedEntry(position: $0.position, origin: $0.originNode == 0 ? "" : NodeIDText.format($0.originNode),
                              kind: $0.kind, timeUs: $0.timeUs, payload: Data($0.payload).base64EncodedString())
                }
                return Self.json(FeedAnswer(items: entries, cursor: items.last?.position ?? after, head: page.head, atCursor: atCursor))
            }
            guard await !signal.isClosing else { return Self.json(FeedAnswer(items: [], cursor: after)) }
            await signal.wait(after: seen, seconds: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
        }
    }

    // MARK: Checks

    /// The credential must be the current one of the node named in the path. A long poll may be
    /// let in by a recent check (`CredentialCache`); everything else asks the database.
    func authenticate(_ request: Request, _ context: HubRequestContext, longPoll: Bool = false) async -> Result<UInt64, Refused> {
        guard let text = context.parameters.get("node"), let node = NodeIDText.parse(text) else {
            return .failure(Refused(Self.refuse(.badRequest, "bad_node", "the path's node must be 16 lower-case hex digits")))
        }
        guard let header = request.headers[.authorization], let credential = BoxCredential(headerValue: header) else {
            return .failure(Refused(Self.refuse(.unauthorized, "unauthenticated", "a box credential is needed (Authorization: Bearer NODE.SECRET)")))
        }
        guard credential.node == node else {
            return .failure(Refused(Self.refuse(.forbidden, "wrong_box", "this credential belongs to another box")))
        }
        if longPoll && credentials.accepts(credential) { return .success(node) }
        let checked = ContinuousClock.now
        do {
            guard try await database.authenticate(credential) else {
                credentials.forget(credential)
                return .failure(Refused(Self.refuse(.unauthorized, "unauthenticated", "unknown or revoked credential")))
            }
            credentials.remember(credential, now: checked)
        } catch {
            logger.error("hub: the database failed while checking a credential", metadata: ["error": "\(String(reflecting: error))"])
            return .failure(Refused(Self.refuse(.serviceUnavailable, "database_unavailable", "the hub's database is not answering; try again")))
        }
        return .success(node)
    }

    typealias DecodedEvent = HubDatabase.IncomingEvent

    /// A batch the hub can store: its own node, a sane range, events in order inside it, each
    /// one's hash right, each a kind that may leave a box and readable as that kind.
    static func validate(_ batch: UploadBatch, node: UInt64) -> Result<[DecodedEvent], Refused> {
        func bad(_ code: String, _ message: String) -> Result<[DecodedEvent], Refused> {
            .failure(Refused(refuse(.unprocessableContent, code, message)))
        }
        guard NodeIDText.parse(batch.node) == node else { return bad("wrong_box", "the batch names another box") }
        guard batch.from >= 1, batch.through >= batch.from, batch.epochFirst >= 1, batch.epochFirst <= batch.from else {
            return bad("bad_range", "from must be at least 1 and at least epoch_first, and through at least from")
        }
        guard batch.events.count <= maxBatchEvents else { return bad("too_many_events", "at most \(maxBatchEvents) events a batch") }
        var decoded: [DecodedEvent] = []
        decoded.reserveCapacity(batch.events.count)
        var previous: UInt64 = 0
        for e in batch.events {
            guard e.seq >= batch.from, e.seq <= batch.through, e.seq > previous else {
                return bad("bad_order", "event \(e.seq) is out of order or outside \(batch.from)...\(batch.through)")
            }
            previous = e.seq
            let (payload, hash) = (e.payload, e.hash)
            guard hash.count == 32 else { return bad("bad_event", "event \(e.seq): the hash must be 32 bytes (64 hex digits)") }
            guard ContentHash.bytes(kind: e.kind, timeMicroseconds: e.timeUs, payload: payload) == hash else {
                return bad("hash_mismatch", "event \(e.seq): the hash does not match its content")
            }
            guard let kind = EventKind(rawValue: Int(e.kind)), EventKind.known.contains(kind), kind.leavesBox else {
                return bad("not_shared", "event \(e.seq): kind \(e.kind) never leaves a box (scan data and exposure data stay there)")
            }
            guard let body = try? EventCodec.decode(kind: e.kind, payload: payload, sequence: e.seq) else {
                return bad("bad_event", "event \(e.seq): the payload is not a readable \(kind.name)")
            }
            // A box speaks for its own alerts only: what the feed would carry to every box must
            // not name another box as its origin.
            let feeds: Bool
            var occupancy: (minute: UInt64, advertisers: UInt32)?
            switch body {
            case .alertRaised(let a):
                guard a.id.origin == node else { return bad("forged_origin", "event \(e.seq): an alert raised here must have this box as its origin") }
                feeds = true
            case .alertReaffirmed(let r):
                guard r.id.origin == node else { return bad("forged_origin", "event \(e.seq): only the box that raised an alert re-affirms it") }
                feeds = true
            case .alertCancelled(let c):
                // A cancel heard over the air is recorded, not fed again; one made here must be of
                // this box's own alert.
                if c.heardFrom == 0, c.id.origin != node { return bad("forged_origin", "event \(e.seq): a box cancels only its own alerts") }
                feeds = c.heardFrom == 0
            case .alertAcknowledged(let k):
                feeds = k.heardFrom == 0
            case .alertTaken(let t):
                // Who took an alert's call goes to every box; a resident's call is the box's own,
                // and a taking heard from the feed is not fed again.
                feeds = t.heardFrom == 0 && t.hasID
            case .occupancySampled(let o):
                feeds = false
                // A minute the radio was off for part of is no head count.
                occupancy = o.radioOn ? (o.minuteStartUs, o.advertisers) : nil
            default:
                feeds = false
            }
            if feeds, payload.count > HubDatabase.maxFeedPayload {
                return bad("too_large", "event \(e.seq): an alert is at most \(HubDatabase.maxFeedPayload) bytes")
            }
            decoded.append(DecodedEvent(seq: e.seq, kind: e.kind, timeUs: e.timeUs, payload: payload, hash: hash, feeds: feeds,
                                       occupancy: occupancy))
        }
        return .success(decoded)
    }
}
