import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import VigilCAP

/// One feed's fetches, beside a box's loop or in the hub's relay (docs/warnings.md, "Feeds"): the feed's address with
/// conditional headers, then the CAP documents its index links to that are new or changed. The
/// documents are read here, off the loop; the loop gets values and decides what to log.
///
/// Bounded: an index at most 2 MiB, a document at most `CAPLimits.maxDocumentBytes`, at most
/// `maximumDocumentsPerPoll` documents fetched a poll (the rest at the next), every request within
/// 30 s; only https, no redirects (a moved feed is configured anew, not followed to anywhere).
public final class WarningFetcher: Sendable {
    public let url: String
    private let http: HTTPClient
    /// The certificates this feed's signatures must chain to (PEM), and whether a document must
    /// carry one (docs/warnings.md "Signatures").
    public let signers: [String]
    public let signaturesRequired: Bool

    static let maximumIndexBytes = 2 << 20
    /// An index is read within the bounds of a document, but for its size.
    static let indexLimits: CAPLimits = {
        var limits = CAPLimits()
        limits.maxDocumentBytes = maximumIndexBytes
        return limits
    }()
    public static let maximumDocumentsPerPoll = 50
    public static let requestSeconds: Int64 = 30

    /// What the last answer said about its version, sent back to ask "only if changed".
    public struct Validators: Sendable, Equatable, Codable {
        public var etag: String?
        public var lastModified: String?

        public init(etag: String? = nil, lastModified: String? = nil) {
            self.etag = etag
            self.lastModified = lastModified
        }
    }

    /// One document read from the feed.
    public struct Document: Sendable {
        public var url: String
        public var bytes: [UInt8]
        public var alert: CAPAlert
        /// Its XML signature verified under one of the feed's signers.
        public var signatureVerified = false
    }

    public struct Poll: Sendable {
        public enum Outcome: Sendable, Equatable {
            case notModified
            case read
            case failed(String)
        }
        public var outcome: Outcome
        public var validators: Validators
        public var documents: [Document] = []
        /// Index entries as now known (link → version), to compare at the next poll.
        public var seen: [String: String]
        /// Documents (or the feed itself) that were not CAP 1.2 as written, with the reason.
        public var refused: [(url: String, reason: String)] = []
        /// Entries left for the next poll (over `maximumDocumentsPerPoll`).
        public var deferred = 0
        /// A linked document could not be fetched (it is asked for again at the next poll).
        public var incomplete = false
    }

    public enum Failure: Error, CustomStringConvertible {
        case status(Int)
        case tooLarge(Int)
        case notSameFeed(String)
        case transport(String)

        public var description: String {
            switch self {
            case .status(let code): "the feed answered HTTP \(code)"
            case .tooLarge(let limit): "the answer is longer than \(limit) bytes"
            case .notSameFeed(let link): "\(link) is not an https:// address on the feed's own host and port"
            case .transport(let why): why
            }
        }
    }

    /// A client for `url`, trusting the system's roots, or only the certificates in `caFile`.
    public init(url: String, caFile: String?, signers: [String] = [], signaturesRequired: Bool = false) throws {
        self.url = url
        self.signers = signers
        self.signaturesRequired = signaturesRequired
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let caFile { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(Self.requestSeconds))
        configuration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func close() {
        let http = self.http
        Task { try? await http.shutdown() }
    }

    /// One poll: the feed (conditionally), then what its index links to that is new or changed.
    public func poll(validators: Validators, seen: [String: String]) async -> Poll {
        var result = Poll(outcome: .read, validators: validators, seen: seen)
        let answer: (status: Int, body: [UInt8], validators: Validators)
        do {
            answer = try await get(url, validators: validators, limit: Self.maximumIndexBytes)
        } catch {
            result.outcome = .failed("\(error)")
            return result
        }
        if answer.status == 304 {
            result.outcome = .notModified
            return result
        }
        result.validators = answer.validators
        let document: CAPFeedDocument
        do {
            document = try CAPFeedReader.read(answer.body, limits: Self.indexLimits)
        } catch {
            result.outcome = .failed("not a CAP 1.2 document, Atom feed or RSS channel: \(error)")
            return result
        }
        switch document {
        case .alert(let alert):
            // Read within an index's bounds; the log and replay read a document within a document's.
            guard answer.body.count <= CAPLimits.standard.maxDocumentBytes else {
                result.outcome = .failed(Failure.tooLarge(CAPLimits.standard.maxDocumentBytes).description)
                return result
            }
            switch signature(answer.body, alert) {
            case .success(let verified): result.documents.append(Document(url: url, bytes: answer.body, alert: alert, signatureVerified: verified))
            case .failure(let refusal) where refusal.retry:
                result.outcome = .failed(refusal.description)
                result.validators = Validators()
            case .failure(let refusal): result.refused.append((url, refusal.description))
            }
        case .index(let entries):
            var now: [String: String] = [:]
            var fetched = 0
            for entry in entries {
                guard let link = Self.resolve(entry.link, against: url) else {
                    result.refused.append((String(entry.link.prefix(200)), Failure.notSameFeed(String(entry.link.prefix(200))).description))
                    continue
                }
                if seen[link] == entry.version, !entry.version.isEmpty {
                    now[link] = entry.version
                    continue
                }
                guard fetched < Self.maximumDocumentsPerPoll else {
                    result.deferred += 1
                    continue
                }
                fetched += 1
                do {
                    let got = try await get(link, validators: Validators(), limit: CAPLimits.standard.maxDocumentBytes)
                    guard got.status == 200 else { throw Failure.status(got.status) }
                    let alert = try CAPReader.read(got.body)
                    let verified = try signature(got.body, alert).get()
                    result.documents.append(Document(url: link, bytes: got.body, alert: alert, signatureVerified: verified))
                    now[link] = entry.version
                } catch let error as SignatureRefusal {
                    result.refused.append((link, error.description))
                    if error.retry {
                        // Not the document's fault: asked for again at the next poll.
                        result.incomplete = true
                    } else {
                        // Not fetched again until the index says it changed.
                        now[link] = entry.version
                    }
                } catch let error as CAPError {
                    // Not fetched again until the index says it changed.
                    result.refused.append((link, error.description))
                    now[link] = entry.version
                } catch {
                    // A document that could not be fetched is tried again at the next poll.
                    result.refused.append((link, "\(error)"))
                    result.incomplete = true
                }
            }
            result.seen = now
            // Entries left for later, or not fetched: the index is read whole again next time
            // (with its validators, an unchanged index would answer 304 and they would wait for
            // it to change).
            if result.deferred > 0 || result.incomplete { result.validators = Validators() }
        }
        return result
    }

    public struct SignatureRefusal: Error, CustomStringConvertible {
        public let description: String
        /// The box could not judge the signature (not the document's fault): ask again later.
        public var retry = false

        public init(description: String, retry: Bool = false) {
            self.description = description
            self.retry = retry
        }
    }

    /// The feed's rule for signatures on a document read: taken (with whether its signature
    /// verified) or refused. A signature that does not verify under the feed's signers is refused
    /// whatever the rule (a forgery, or a broken feed); an unsigned document only when signatures
    /// are required. Without signers nothing can be verified: a signed document is taken,
    /// unverified (the configuration refuses `required` without signers).
    public func signature(_ bytes: [UInt8], _ alert: CAPAlert) -> Result<Bool, SignatureRefusal> {
        guard !signers.isEmpty, alert.hasSignature || signaturesRequired else {
            return signaturesRequired ? .failure(SignatureRefusal(description: "unsigned, and this feed's signatures are required")) : .success(false)
        }
        switch CAPSignature.verify(bytes, trusted: signers) {
        case .verified: return .success(true)
        case .unsigned:
            return signaturesRequired ? .failure(SignatureRefusal(description: "unsigned, and this feed's signatures are required")) : .success(false)
        case .invalid(let why): return .failure(SignatureRefusal(description: "its signature does not verify: \(why)"))
        case .unverifiable(let why): return .failure(SignatureRefusal(description: "its signature could not be checked: \(why)", retry: true))
        }
    }

    /// An index's link as an absolute https address on the feed's own host and port (relative
    /// links are resolved against the index's address); nil for anything else: an index cannot
    /// send the box to another host (an address inside the shelter's network, say).
    public static func resolve(_ link: String, against base: String) -> String? {
        guard link.utf8.count <= 2_048, let feed = URL(string: base), let url = URL(string: link, relativeTo: feed)?.absoluteURL,
              url.scheme?.lowercased() == "https", let host = url.host, host.lowercased() == feed.host?.lowercased(),
              (url.port ?? 443) == (feed.port ?? 443), url.user == nil else { return nil }
        return url.absoluteString
    }

    /// One GET, whole within `requestSeconds` (the client's own timeouts bound each read, not a
    /// server that drips its answer a byte at a time).
    private func get(_ address: String, validators: Validators, limit: Int) async throws -> (status: Int, body: [UInt8], validators: Validators) {
        try await withThrowingTaskGroup(of: (status: Int, body: [UInt8], validators: Validators).self) { group in
            group.addTask { try await self.exchange(address, validators: validators, limit: limit) }
            group.addTask {
                try await Task.sleep(for: .seconds(Self.requestSeconds))
                throw Failure.transport("no whole answer within \(Self.requestSeconds) s")
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw Failure.transport("no answer") }
            return first
        }
    }

    private func exchange(_ address: String, validators: Validators, limit: Int) async throws -> (status: Int, body: [UInt8], validators: Validators) {
        var request = HTTPClientRequest(url: address)
        request.headers.add(name: "User-Agent", value: "vigil (public warnings; CAP 1.2)")
        request.headers.add(name: "Accept", value: "application/cap+xml, application/atom+xml, application/rss+xml, application/xml;q=0.9, */*;q=0.1")
        if let etag = validators.etag { request.headers.add(name: "If-None-Match", value: etag) }
        if let lastModified = validators.lastModified { request.headers.add(name: "If-Modified-Since", value: lastModified) }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .seconds(Self.requestSeconds))
        } catch {
            throw Failure.transport("\(error)")
        }
        let status = Int(response.status.code)
        let answered = Validators(etag: response.headers.first(name: "ETag").map { String($0.prefix(256)) },
                                  lastModified: response.headers.first(name: "Last-Modified").map { String($0.prefix(64)) })
        if status == 304 { return (304, [], validators) }
        guard status == 200 else { throw Failure.status(status) }
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: limit)
        } catch {
            throw Failure.tooLarge(limit)
        }
        return (status, Array(buffer: body), answered)
    }
}
