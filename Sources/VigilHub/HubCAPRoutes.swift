import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import VigilAccess
import VigilCAP
import VigilEvents

/// CAP out at the hub (docs/warnings.md "CAP out"): the network's alerts (calls for help, hazards,
/// evacuations, coordinators' alerts) as CAP 1.2 documents and an Atom index at `/cap.atom`, for
/// Home Assistant, EAS-style systems and public alert aggregators. The same mapping as a box's
/// (`CAPOut`): no text anyone wrote, no names, rooms or numbers; an alert raised at a box is placed
/// at that box's registered site.
///
/// Access: coordinators signed in, or anyone when hub.yaml says `cap: {public: true}`. Anyone
/// not signed in gets no calls for help (sos, medical): that someone at a named shelter needs
/// medical help now is for those who answer it, not for every reader of a public feed.
/// An alert of a box since revoked (stolen, perhaps) is left out.
///
/// Cost: the documents are made from the boxes and the alerts (not the residents) once per feed
/// change, at most once every `minimumRemakeMicroseconds` and at least once a minute (so expired
/// alerts leave); one remake at a time, which every reader that arrives meanwhile waits for. So a
/// flood of readers costs the database what one reader does. Answers carry an ETag;
/// `If-None-Match` gets 304.
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
    /// And at most this often, however busy the feed.
    static let minimumRemakeMicroseconds: UInt64 = 2_000_000

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
            try await authorised(request) { coordinator in
                let made = try await current().served(toCoordinator: coordinator)
                return Self.answer(made.index, type: "application/atom+xml", request: request)
            }
        }
        router.get("cap/:name") { request, context in
            try await authorised(request) { coordinator in
                let made = try await current().served(toCoordinator: coordinator)
                guard let name = context.parameters.get("name"), let document = made.documents["cap/" + name] else {
                    return Response(status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                                    body: .init(byteBuffer: ByteBuffer(string: "no such alert here (the index is /cap.atom)\n")))
                }
                return Self.answer(document, type: "application/cap+xml", request: request)
            }
        }
    }

    /// `body` with whether a coordinator asks, when the reader may read at all.
    private func authorised(_ request: Request, _ body: (Bool) async throws -> Response) async throws -> Response {
        if let token = CoordinatorRoutes.sessionToken(request), try await database.session(token: token) != nil { return try await body(true) }
        if publicAccess { return try await body(false) }
        return Response(status: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(string: "sign in as a coordinator (or hub.yaml: cap: {public: true})\n")))
    }

    /// The documents as of the feed's latest change.
    private func current() async throws -> HubCAPCache.Made {
        let generation = await signal.generation
        let now = self.now()
        let database = self.database, writer = self.writer, feedID = self.feedID
        return try await cache.current(generation: generation, nowMicroseconds: now) {
            Self.make(try await database.capOverview(nowMicroseconds: now), writer: writer, feedID: feedID)
        }
    }

    /// The overview's alerts in force and those cancelled within the hour, as documents: all of
    /// them for coordinators, all but calls for help for anyone else.
    static func make(_ overview: HubOverview, writer: CAPOut.Writer, feedID: String) -> HubCAPCache.Made {
        let now = overview.nowMicroseconds
        let revoked = Set(overview.boxes.filter(\.revoked).map(\.node))
        // A box's registered site; never its name (a label a coordinator chose, perhaps a person's).
        let sites = Dictionary(overview.boxes.compactMap { box -> (UInt64, CAPOut.Place)? in
            guard let site = box.site, !site.isEmpty else { return nil }
            return (box.node, CAPOut.Place(name: site, point: box.latitude.flatMap { lat in box.longitude.map { CAPPoint(latitude: lat, longitude: $0) } }))
        }, uniquingKeysWith: { a, _ in a })
        let rows = overview.alerts.filter { row in
            !revoked.contains(row.id.origin)
                && (row.isOpen(at: now) || (row.cancelled && now &- (row.cancelledMicroseconds ?? row.raisedMicroseconds) < cancelledForMicroseconds))
        }.prefix(maximumDocuments)
        let alerts = rows.map { row in
            CAPOut.Alert(id: row.id.text, kind: row.kind.slug, severity: row.severity.name, raisedMicroseconds: row.raisedMicroseconds,
                         expiresMicroseconds: row.expiresAtMicroseconds,
                         place: row.fromCoordinator ? CAPOut.Place(name: "all shelters of the Vigil network", point: nil) : sites[row.id.origin],
                         observed: !row.fromCoordinator, cancelledMicroseconds: row.cancelled ? row.cancelledMicroseconds ?? row.raisedMicroseconds : nil)
        }
        func served(_ alerts: [CAPOut.Alert]) -> HubCAPCache.Served {
            let documents = CAPOut.documents(alerts, writer: writer)
            return HubCAPCache.Served(index: CAPOut.index(documents, writer: writer, id: feedID, selfLink: nil),
                                      documents: Dictionary(documents.map { (CAPOut.link($0), CAPWriter.write($0)) }, uniquingKeysWith: { a, _ in a }))
        }
        return HubCAPCache.Made(coordinators: served(Array(alerts)), everyone: served(alerts.filter { !CAPOut.isCallForHelp($0) }))
    }

    static func answer(_ bytes: [UInt8], type: String, request: Request) -> Response {
        ConditionalGet.response(bytes, contentType: type + "; charset=utf-8", request: request)
    }
}

/// The documents made last, the feed generation and the time they were made at, and the one
/// remake in progress.
actor HubCAPCache {
    struct Served: Sendable {
        var index: [UInt8]
        /// By link (`cap/IDENTIFIER.xml`).
        var documents: [String: [UInt8]]
    }

    struct Made: Sendable {
        var coordinators: Served
        var everyone: Served
        func served(toCoordinator coordinator: Bool) -> Served { coordinator ? coordinators : everyone }
    }

    private var made: Made?
    private var generation: UInt64 = 0
    private var madeAt: UInt64 = 0
    private var making: Task<Made, any Error>?

    /// What was made, when it is of `generation` and younger than a minute (or younger than the
    /// minimum interval whatever the generation); otherwise what `make` makes, one at a time.
    func current(generation: UInt64, nowMicroseconds now: UInt64, make: @escaping @Sendable () async throws -> Made) async throws -> Made {
        if let made, now >= madeAt {
            let age = now - madeAt
            if age < HubCAPRoutes.minimumRemakeMicroseconds || (generation == self.generation && age < HubCAPRoutes.remakeMicroseconds) {
                return made
            }
        }
        if let making { return try await making.value }
        let task = Task { try await make() }
        making = task
        defer { making = nil }
        let result = try await task.value
        made = result
        self.generation = generation
        madeAt = now
        return result
    }
}
