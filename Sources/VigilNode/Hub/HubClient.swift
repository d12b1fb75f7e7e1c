import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import VigilRadio
import VigilHubProtocol
import VigilSystem

/// The box's HTTPS client of one hub. It trusts exactly the hub's certificate it pinned at join
/// (no CA, no host name: a shelter's hub is reached by address) and sends the box's credential.
public final class HubClient: Sendable {
    public let url: String
    let http: HTTPClient
    let credential: BoxCredential?
    /// Told the hub's time (Unix microseconds) from each answer's `Date` header as the answer
    /// arrives, when the hub says its clock is synchronised: over the pinned TLS, a time the box
    /// can vouch for (`VouchedClock`).
    let heardTime: (@Sendable (UInt64) -> Void)?

    public enum Failure: Error, CustomStringConvertible, Sendable {
        /// The hub could not be reached or did not answer in time.
        case unreachable(String)
        /// The hub answered with a refusal.
        case refused(status: Int, Refusal)
        /// The hub answered something this box cannot read.
        case badAnswer(String)
        /// The hub is not the one the token or the pin names.
        case wrongHub(String)
        /// The answer is longer than the box reads.
        case tooLarge(limit: Int)

        public var description: String {
            switch self {
            case .unreachable(let s): "the hub is unreachable: \(s)"
            case .refused(let status, let r): "the hub refused (\(status) \(r.error)): \(r.message)"
            case .badAnswer(let s): "the hub's answer is unreadable: \(s)"
            case .wrongHub(let s): s
            case .tooLarge(let limit): "the hub's answer is longer than \(limit) bytes"
            }
        }
    }

    /// A client that trusts only `certificatePEM`.
    public init(url: String, certificatePEM: String, credential: BoxCredential?,
                heardTime: (@Sendable (UInt64) -> Void)? = nil) throws(Failure) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.credential = credential
        self.heardTime = heardTime
        var tls = TLSConfiguration.makeClientConfiguration()
        do {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)))
        } catch {
            throw .badAnswer("the pinned certificate is unreadable: \(error)")
        }
        tls.certificateVerification = .noHostnameVerification
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: Self.configuration(tls))
    }

    private init(url: String, unverified: Void) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        credential = nil
        heardTime = nil
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: Self.configuration(tls))
    }

    static func configuration(_ tls: TLSConfiguration) -> HTTPClient.Configuration {
        var c = HTTPClient.Configuration(tlsConfiguration: tls)
        c.timeout = .init(connect: .seconds(5), read: .seconds(30))
        c.redirectConfiguration = .disallow
        return c
    }

    /// Fetches the hub's certificate over an unverified connection and checks it against the
    /// fingerprint an enrolment token carries: nothing secret is sent before this matches.
    public static func pinnedCertificate(url: String, fingerprint: String) async throws(Failure) -> String {
        let probe = HubClient(url: url, unverified: ())
        defer { probe.close() }
        let (status, body) = try await probe.send("GET", "/api/v1/hub/certificate", body: nil, limit: 64 << 10)
        guard status == 200, let pem = String(bytes: body, encoding: .utf8) else {
            throw .badAnswer("no certificate at \(url) (HTTP \(status))")
        }
        guard let seen = CertificateFingerprint.of(pem: pem) else { throw .badAnswer("the certificate at \(url) is not PEM") }
        guard seen == fingerprint.lowercased() else {
            throw .wrongHub("the hub at \(url) is not the hub this token was made by (its certificate is \(seen.prefix(16))…, the token names \(fingerprint.prefix(16))…)")
        }
        return pem
    }

    public func enrol(token: String, node: UInt64) async throws(Failure) -> EnrolAnswer {
        try await call("POST", "/api/v1/boxes/enrol", EnrolRequest(token: token, node: NodeIDText.format(node)), as: EnrolAnswer.self)
    }

    /// Has the hub certify this box's signing key (docs/signed-frames.md "With a hub").
    /// `proof` is `KeyPossession.prove` for this node, key and hub.
    public func certify(node: UInt64, boxKey: BoxPublicKey, proof: [UInt8]) async throws(Failure) -> CertificateAnswer {
        try await call("POST", "/api/v1/boxes/\(NodeIDText.format(node))/certificate",
                       CertificateRequest(boxKey: Hex.encode(boxKey.rawRepresentation), proof: Hex.encode(proof)), as: CertificateAnswer.self)
    }

    /// Sends a batch in binary (`application/x-protobuf`): no base64 or hex on either side. A hub
    /// from before the binary body reads it as bad JSON: this client then sends it, and every
    /// later batch, as JSON.
    public func upload(_ batch: UploadBatch) async throws(Failure) -> UploadAnswer {
        let path = "/api/v1/boxes/\(batch.node)/events"
        if !sendsJSON.withLock({ $0 }) {
            let body: [UInt8]
            do { body = try batch.protobuf() } catch { throw .badAnswer("cannot encode the batch: \(error)") }
            let (status, answer) = try await send("POST", path, body: body, limit: 1 << 20, contentType: UploadBatch.protobufContentType)
            let refusal = status == 400 || status == 415 ? try? JSONDecoder().decode(Refusal.self, from: Data(answer)) : nil
            guard status == 415 || refusal?.error == "bad_json" else { return try Self.answer(status, answer, as: UploadAnswer.self) }
            sendsJSON.withLock { $0 = true }
        }
        return try await call("POST", path, batch, as: UploadAnswer.self)
    }

    /// Set once the hub showed it reads only JSON uploads.
    private let sendsJSON = LockedValue(false)

    /// Who the hub is and which network it serves (anonymous: no credential is sent).
    public func info() async throws(Failure) -> HubInfo {
        try await call("GET", "/api/v1/hub", Optional<UploadBatch>.none, as: HubInfo.self)
    }

    public func syncState(node: UInt64) async throws(Failure) -> SyncState {
        try await call("GET", "/api/v1/boxes/\(NodeIDText.format(node))/sync", Optional<UploadBatch>.none, as: SyncState.self)
    }

    /// Feed items after `after` (waiting up to `wait` seconds for one); `at`, the fingerprint of
    /// the item the box took at `after`, makes a hub that holds another there answer at once.
    public func feed(node: UInt64, after: UInt64, wait: Int, at: UInt64? = nil) async throws(Failure) -> FeedAnswer {
        let digest = at.map { "&at=" + FeedAnswer.digestText($0) } ?? ""
        return try await call("GET", "/api/v1/boxes/\(NodeIDText.format(node))/feed?after=\(after)&wait=\(wait)" + digest,
                              Optional<UploadBatch>.none, as: FeedAnswer.self)
    }

    /// The feed as a stream from `after` (`at` as for `feed`): `each` gets every answer, the
    /// first at once, until it returns false or the hub ends the stream (after 5 to 15 minutes;
    /// the caller opens the next). A hub without streams answers one long poll of `wait` seconds,
    /// and `each` gets that answer. Returns how many answers `each` got, and whether they came
    /// as a stream. The hub's failures are `Failure`; `each`'s own errors pass through.
    ///
    /// A quiet stream still gets a line every 20 s, so the client's 30 s read timeout ends one
    /// the hub or the network dropped.
    public func followFeed(node: UInt64, after: UInt64, at: UInt64? = nil, wait: Int,
                           each: (FeedAnswer) async throws -> Bool) async throws -> (answers: Int, streamed: Bool) {
        let digest = at.map { "&at=" + FeedAnswer.digestText($0) } ?? ""
        var request = HTTPClientRequest(url: url + "/api/v1/boxes/\(NodeIDText.format(node))/feed?after=\(after)&wait=\(wait)&stream=1" + digest)
        if let credential { request.headers.add(name: "Authorization", value: credential.headerValue) }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .minutes(5))
        } catch {
            throw Failure.unreachable("\(error)")
        }
        noteTime(response.headers.first(name: "date"), clock: response.headers.first(name: "vigil-clock"))
        let streamed = response.headers.first(name: "content-type")?.hasPrefix("application/x-ndjson") ?? false
        guard response.status == .ok, streamed else {
            let bytes: [UInt8]
            do { bytes = Array(try await response.body.collect(upTo: 8 << 20).readableBytesView) } catch is NIOTooManyBytesError {
                throw Failure.tooLarge(limit: 8 << 20)
            } catch {
                throw Failure.unreachable("\(error)")
            }
            _ = try await each(try Self.answer(Int(response.status.code), bytes, as: FeedAnswer.self))
            return (1, false)
        }
        var lines = FeedLines()
        var answers = 0
        do {
            for try await piece in response.body {
                let complete: [[UInt8]]
                do { complete = try lines.take(piece.readableBytesView) } catch { throw Failure.tooLarge(limit: lines.maximumLength) }
                for line in complete {
                    let answer: FeedAnswer
                    do { answer = try JSONDecoder().decode(FeedAnswer.self, from: Data(line)) } catch {
                        throw Failure.badAnswer("a feed line: \(error)")
                    }
                    answers += 1
                    guard try await each(answer) else { return (answers, true) }
                }
            }
        } catch let failure as Failure {
            throw failure
        } catch let error as HTTPClientError {
            throw Failure.unreachable("\(error)")
        } catch let error as NIOSSLError {
            throw Failure.unreachable("\(error)")
        } catch let error as IOError {
            throw Failure.unreachable("\(error)")
        } catch let error as ChannelError {
            throw Failure.unreachable("\(error)")
        }
        // A stream that ends without a line, or inside one, was cut.
        guard answers > 0, lines.unfinished == 0 else { throw Failure.unreachable("the feed stream ended early") }
        return (answers, true)
    }

    /// A part of a key file the feed offered (`export.bin`, or `export.sig` with `signature`),
    /// at most `limit` bytes.
    /// A large file on a slow link takes long: the whole exchange may take up to 10 minutes (the
    /// read timeout still ends one that stalls). A part over `limit` is `.tooLarge`.
    public func keyFilePart(node: UInt64, file: UInt64, signature: Bool, limit: Int) async throws(Failure) -> [UInt8] {
        let (status, answer) = try await send("GET", "/api/v1/boxes/\(NodeIDText.format(node))/key-files/\(file)/export.\(signature ? "sig" : "bin")",
                                              body: nil, limit: limit, timeout: .minutes(10))
        guard status == 200 else {
            let refusal = (try? JSONDecoder().decode(Refusal.self, from: Data(answer)))
                ?? Refusal(error: "http_\(status)", message: String(decoding: answer.prefix(200), as: UTF8.self))
            throw .refused(status: status, refusal)
        }
        return answer
    }

    /// An answer's `Date` header, when the hub says its clock is synchronised (`Vigil-Clock`): a
    /// hub whose own clock nobody vouches for gives the box nothing to vouch for either.
    private func noteTime(_ date: String?, clock: String?) {
        guard let heardTime, clock == "synchronised", let date, let seconds = HTTPDate.seconds(date) else { return }
        heardTime(seconds * 1_000_000)
    }

    /// Closes the connections (waits for none).
    public func close() {
        http.shutdown { _ in }
    }

    // MARK: Requests

    private func call<Body: Encodable, Answer: Decodable>(_ method: String, _ path: String, _ body: Body?, as: Answer.Type) async throws(Failure) -> Answer {
        let data: [UInt8]?
        do { data = try body.map { Array(try JSONEncoder().encode($0)) } } catch { throw .badAnswer("cannot encode the request: \(error)") }
        let (status, answer) = try await send(method, path, body: data, limit: 8 << 20)
        return try Self.answer(status, answer, as: Answer.self)
    }

    /// A JSON answer, or the hub's refusal.
    private static func answer<Answer: Decodable>(_ status: Int, _ answer: [UInt8], as: Answer.Type) throws(Failure) -> Answer {
        guard (200..<300).contains(status) else {
            let refusal = (try? JSONDecoder().decode(Refusal.self, from: Data(answer)))
                ?? Refusal(error: "http_\(status)", message: String(decoding: answer.prefix(200), as: UTF8.self))
            throw .refused(status: status, refusal)
        }
        do { return try JSONDecoder().decode(Answer.self, from: Data(answer)) } catch {
            throw .badAnswer("\(error)")
        }
    }

    private func send(_ method: String, _ path: String, body: [UInt8]?, limit: Int,
                      contentType: String = "application/json", timeout: TimeAmount = .seconds(60)) async throws(Failure) -> (Int, [UInt8]) {
        var request = HTTPClientRequest(url: url + path)
        request.method = .RAW(value: method)
        if let credential { request.headers.add(name: "Authorization", value: credential.headerValue) }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        do {
            let response = try await http.execute(request, timeout: timeout)
            noteTime(response.headers.first(name: "date"), clock: response.headers.first(name: "vigil-clock"))
            let bytes = try await response.body.collect(upTo: limit)
            return (Int(response.status.code), Array(bytes.readableBytesView))
        } catch is NIOTooManyBytesError {
            throw .tooLarge(limit: limit)
        } catch {
            throw .unreachable("\(error)")
        }
    }
}

/// Joining a hub (`vigil hub join`): check the hub is the one the token names, trade the token
/// for the box's own credential, and keep both in `DATA/hub.json`.
public enum HubJoin {
    public static func join(url: String, token: EnrolmentToken, dataDirectory: String, location: String? = nil) async throws -> HubLinks.Link {
        let node = try NodeIdentity.load(dataDirectory: dataDirectory)
        let certificate = try await HubClient.pinnedCertificate(url: url, fingerprint: token.hubFingerprint)
        let client = try HubClient(url: url, certificatePEM: certificate, credential: nil)
        defer { client.close() }
        let answer = try await client.enrol(token: token.secret, node: node)
        let network = try await client.info().network
        let link = HubLinks.Link(url: url, fingerprint: token.hubFingerprint, certificate: certificate,
                                 name: answer.name, credential: answer.credential, location: location, network: network)
        // Joining is joining a network anew: the links to the one before go (their credential is
        // no longer this box's); its other entry points are added again with `vigil hub add`.
        try HubLinks(hubs: [link]).save(dataDirectory: dataDirectory)
        return link
    }

    /// Has the hub the box joined certify its signing key (made now when the box has none), and
    /// keeps the certificate and the network's public key in the data directory (`BoxKeyFiles`).
    /// The answer is checked before anything is kept: a certificate of this node's key, signed by
    /// the network key that came with it. A running node takes them at its next start.
    ///
    /// Run at every join (`vigil hub join`), and again with `vigil hub certify` (a box that
    /// joined before hubs certified keys, or whose certificate nears its end).
    public static func certifyKey(dataDirectory: String) async throws -> BoxCertificate {
        let links = try HubLinks.load(dataDirectory: dataDirectory)
        guard let link = links.hubs.first else {
            throw HubClient.Failure.wrongHub("the box has joined no hub yet: `vigil hub join URL --token-file -` first")
        }
        let node = try NodeIdentity.load(dataDirectory: dataDirectory)
        let key = try BoxKeyFiles.loadOrCreateKey(directory: dataDirectory)
        let client = try HubClient(url: link.url, certificatePEM: link.certificate, credential: BoxCredential(node: node, secret: link.credential))
        defer { client.close() }
        let answer = try await client.certify(node: node, boxKey: key.publicKey,
                                              proof: try KeyPossession.prove(node: node, key: key, hubFingerprint: link.fingerprint))
        guard let certificateBytes = Hex.decode(answer.certificate), let certificate = try? BoxCertificate(bytes: certificateBytes),
              let networkBytes = Hex.decode(answer.networkKey), let network = try? NetworkPublicKey(rawRepresentation: networkBytes) else {
            throw HubClient.Failure.badAnswer("the certificate or the network key is unreadable")
        }
        guard (try? certificate.verify(network: network)) != nil, certificate.boxKey == key.publicKey,
              certificate.node == UInt32(truncatingIfNeeded: node) else {
            throw HubClient.Failure.badAnswer("the certificate is not of this box's key under the network key given with it")
        }
        try BoxKeyFiles.writeCertificate(certificate, directory: dataDirectory)
        try BoxKeyFiles.writeNetworkKey(network, directory: dataDirectory)
        return certificate
    }

    /// Adds another entry point of the network the box has joined (`vigil hub add`): a hub
    /// process on the same database, elsewhere. Its certificate must be `fingerprint`, and it
    /// must know this box's credential (else it is another network, and nothing is kept).
    public static func addEntryPoint(url: String, fingerprint: String, location: String?, dataDirectory: String) async throws -> HubLinks.Link {
        var links = try HubLinks.load(dataDirectory: dataDirectory)
        guard let joined = links.hubs.first else {
            throw HubClient.Failure.wrongHub("the box has joined no hub yet: `vigil hub join URL --token-file -` first")
        }
        let node = try NodeIdentity.load(dataDirectory: dataDirectory)
        let certificate = try await HubClient.pinnedCertificate(url: url, fingerprint: fingerprint)
        // The credential goes only to a hub of the network it belongs to: asked first, without it.
        let anonymous = try HubClient(url: url, certificatePEM: certificate, credential: nil)
        let network: String
        do {
            network = try await anonymous.info().network
            anonymous.close()
        } catch {
            anonymous.close()
            throw error
        }
        if let joinedNetwork = joined.network, joinedNetwork != network {
            throw HubClient.Failure.wrongHub("the hub at \(url) serves another network (\(network), not \(joinedNetwork)): nothing was sent to it")
        }
        let client = try HubClient(url: url, certificatePEM: certificate, credential: BoxCredential(node: node, secret: joined.credential))
        defer { client.close() }
        do {
            _ = try await client.syncState(node: node)
        } catch {
            // (A `catch .refused(let status, _) where` pattern here crashes Swift 6.3's SILGen.)
            guard case .refused(let status, _) = error, status == 401 || status == 403 else { throw error }
            throw HubClient.Failure.wrongHub("the hub at \(url) does not know this box: it is not an entry point of the network the box joined")
        }
        let link = HubLinks.Link(url: url, fingerprint: fingerprint, certificate: certificate, name: joined.name,
                                 credential: joined.credential, location: location, network: network)
        links.upsert(link)
        try links.save(dataDirectory: dataDirectory)
        return link
    }
}
