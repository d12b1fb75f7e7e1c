import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import VigilCAP
import VigilEvents

/// CAP out at the hub (docs/warnings.md "CAP out"): the network's alerts (calls for help, hazards,
/// evacuations, coordinators' alerts) as CAP 1.2 documents and an Atom index at `/cap.atom`, for
/// Home Assistant, EAS-style systems and public alert aggregators. The same mapping as a box's
/// (`CAPOut`): no text anyone wrote, no names, rooms or numbers; an alert raised at a box is placed
/// at that box's registered site.
///
/// Access: coordinators signed in, or anyone when hub.yaml says `cap: {public: true}`.
/// Cost: the documents are made from the coordinators' overview at most once per feed change
/// (and once a minute, so expired alerts leave): a reader polling every second, or a thousand of
/// them, costs no more database work than one. Answers carry an ETag; `If-None-Match` gets 304.
struct HubCAPRoutes: Sendable {
    let database: HubDatabase
    let signal: FeedSignal
    let cache: HubCAPCache
    let publicAccess: Bool
    let writer: CAPOut.Writer
    let feedID: String
    let now: @Sendable () -> UInt64

    /// A cancelled alert's Cancel is served this long after the cancel (as a box remembers it).
    static let cancelledForMicroseconds: UInt64 = 3_600_000_000
    /// At most this many documents: the newest.
    static let maximumDocuments = 500
    /// Made again at least this often, so alerts that expired leave the index.
    static let remakeMicroseconds: UInt64 = 60_000_000

    init(database: HubDatabase, signal: FeedSignal, publicAccess: Bool, fingerprint: String, now: @escaping @Sendable () -> UInt64) {
        self.database = database
        self.signal = signal
        self.cache = HubCAPCache()
        self.publicAccess = publicAccess
        let id = String(fingerprint.lowercased().filter(\.isHexDigit).prefix(16))
        writer = CAPOut.Writer(sender: "vigil-hub-\(id)", name: "Vigil hub \(id)")
        feedID = "urn:vigil:hub:\(id)"
        self.now = now
    }

    func register(on router: Router<HubRequestContext>) {
        router.get("cap.atom") { request, _ in
            try await authorised(request) {
                let made = try await current()
                return Self.answer(made.index, type: "application/atom+xml", request: request)
            }
        }
        router.get("cap/:name") { request, context in
            try await authorised(request) {
                let made = try await current()
                guard let name = context.parameters.get("name"), let document = made.documents["cap/" + name] else {
                    return Response(status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                                    body: .init(byteBuffer: ByteBuffer(string: "no such alert here (the index is /cap.atom)\n")))
                }
                return Self.answer(document, type: "application/cap+xml", request: request)
            }
        }
    }

    private func authorised(_ request: Request, _ body: () async throws -> Response) async throws -> Response {
        if publicAccess { return try await body() }
        if let token = CoordinatorRoutes.sessionToken(request), try await database.session(token: token) != nil { return try await body() }
        return Response(status: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(string: "sign in as a coordinator (or hub.yaml: cap: {public: true})\n")))
    }

    /// The documents as of the feed's latest change.
    private func current() async throws -> HubCAPCache.Made {
        let generation = await signal.generation
        let now = self.now()
        if let made = await cache.made(generation: generation, nowMicroseconds: now, maximumAge: Self.remakeMicroseconds) { return made }
        let overview = try await database.overview(nowMicroseconds: now)
        let made = Self.make(overview, writer: writer, feedID: feedID)
        await cache.store(made, generation: generation, nowMicroseconds: now)
        return made
    }

    /// The overview's alerts in force and those cancelled within the hour, as documents.
    static func make(_ overview: HubOverview, writer: CAPOut.Writer, feedID: String) -> HubCAPCache.Made {
        let now = overview.nowMicroseconds
        let sites = Dictionary(overview.boxes.map { box in
            (box.node, CAPOut.Place(name: box.site ?? box.name,
                                    point: box.latitude.flatMap { lat in box.longitude.map { CAPPoint(latitude: lat, longitude: $0) } }))
        }, uniquingKeysWith: { a, _ in a })
        let alerts = overview.alerts.filter { row in
            row.isOpen(at: now) || (row.cancelled && now &- (row.cancelledMicroseconds ?? row.raisedMicroseconds) < cancelledForMicroseconds)
        }.prefix(maximumDocuments).map { row in
            CAPOut.Alert(id: row.id.text, kind: row.kind.slug, severity: row.severity.name, raisedMicroseconds: row.raisedMicroseconds,
                         expiresMicroseconds: row.expiresAtMicroseconds,
                         place: row.fromCoordinator ? CAPOut.Place(name: "the network's coordinators", point: nil) : sites[row.id.origin],
                         observed: !row.fromCoordinator, cancelledMicroseconds: row.cancelled ? row.cancelledMicroseconds ?? row.raisedMicroseconds : nil)
        }
        let documents = CAPOut.documents(Array(alerts), writer: writer)
        return HubCAPCache.Made(index: CAPOut.index(documents, writer: writer, id: feedID, selfLink: nil),
                                documents: Dictionary(documents.map { (CAPOut.link($0), CAPWriter.write($0)) }, uniquingKeysWith: { a, _ in a }))
    }

    static func answer(_ bytes: [UInt8], type: String, request: Request) -> Response {
        let etag = "\"\(CAPOut.entityTag(bytes))\""
        var headers: HTTPFields = [.contentType: type + "; charset=utf-8", .eTag: etag, .cacheControl: "no-cache",
                                   .xContentTypeOptions: "nosniff"]
        if let asked = request.headers[.ifNoneMatch], CAPOut.matches(asked, etag: etag) {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

/// The documents made last, with the feed generation and the time they were made at.
actor HubCAPCache {
    struct Made: Sendable {
        var index: [UInt8]
        /// By link (`cap/IDENTIFIER.xml`).
        var documents: [String: [UInt8]]
    }

    private var made: Made?
    private var generation: UInt64 = 0
    private var madeAt: UInt64 = 0

    func made(generation: UInt64, nowMicroseconds: UInt64, maximumAge: UInt64) -> Made? {
        guard let made, generation == self.generation, nowMicroseconds >= madeAt, nowMicroseconds - madeAt < maximumAge else { return nil }
        return made
    }

    func store(_ made: Made, generation: UInt64, nowMicroseconds: UInt64) {
        self.made = made
        self.generation = generation
        madeAt = nowMicroseconds
    }
}
