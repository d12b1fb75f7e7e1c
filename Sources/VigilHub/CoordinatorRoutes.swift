import Synchronization
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import VigilEvents
import VigilAccess
import VigilHubProtocol

/// The coordinators' page: sign in with a password, see every box, act (raise an alert for the
/// network, acknowledge a call for help, cancel a network alert).
///
/// Access: nothing here is readable or writable without a session. The session cookie is
/// HttpOnly, Secure and SameSite=Strict; every form carries the session's CSRF token as well,
/// and a POST without the right one changes nothing (403). Pages send a Content-Security-Policy
/// that allows only the hub's own script, no frame and no form target elsewhere.
///
/// Live: `/events` (Server-Sent Events, a session's only) says "change" whenever any hub process
/// commits to the feed — a box's call for help, a taking, a coordinator's alert — so the page
/// shows a new call within a second instead of at its next reload.
struct CoordinatorRoutes: Sendable {
    let database: HubDatabase
    let signal: FeedSignal
    let streams: LiveStreams
    let logger: Logger
    let now: @Sendable () -> UInt64

    static let cookieName = "vigil_hub_session"
    static let maxFormBytes = 16 * 1_024

    func register(on router: Router<HubRequestContext>) {
        router.get("/") { request, _ in try await overview(request) }
        router.get("login") { _, _ in Self.html(CoordinatorPage.signIn()) }
        router.post("login") { request, context in try await signIn(request, context) }
        router.post("logout") { request, _ in try await withSession(request) { session, token, _ in
            try await database.signOut(token: token)
            logger.info("hub: a coordinator signed out", metadata: ["coordinator": "\(session.coordinator)"])
            return Self.redirect("/login", cookie: "\(Self.cookieName)=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict")
        } }
        router.post("alerts") { request, _ in try await withSession(request) { session, _, form in
            try await raise(form, by: session.coordinator)
        } }
        router.post("alerts/ack") { request, _ in try await withSession(request) { session, _, form in
            try await act(form, by: session.coordinator, acknowledge: true)
        } }
        router.post("alerts/cancel") { request, _ in try await withSession(request) { session, _, form in
            try await act(form, by: session.coordinator, acknowledge: false)
        } }
        router.get("events") { request, _ in try await events(request) }
        router.get("static/hub.js") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "max-age=3600"],
                     body: .init(byteBuffer: ByteBuffer(string: CoordinatorPage.script)))
        }
        router.get("static/hub.css") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "max-age=3600"],
                     body: .init(byteBuffer: ByteBuffer(string: CoordinatorPage.stylesheet)))
        }
    }

    // MARK: Handlers

    func overview(_ request: Request) async throws -> Response {
        guard let token = Self.sessionToken(request), let session = try await database.session(token: token) else {
            return Self.redirect("/login")
        }
        let notice = request.uri.queryParameters["done"].flatMap { Self.notices[String($0)] }
        let o = try await database.overview(nowMicroseconds: now())
        return Self.html(CoordinatorPage.overview(o, coordinator: session.coordinator, csrf: session.csrf, notice: notice))
    }

    /// How long a stream waits for a change before it sends a keep-alive comment (and checks
    /// that its session still holds).
    static let keepAliveSeconds = 20.0

    /// The live stream: "event: change" after commits to the feed (at most one a second: the
    /// page fetches the overview on each), a comment every 20 s otherwise. It ends when the
    /// session does (looked at every 20 s however busy the feed), when the hub shuts down or the
    /// task is cancelled; refused with 503 beyond `LiveStreams.perSession` for one session or
    /// `LiveStreams.maximum` in all.
    func events(_ request: Request) async throws -> Response {
        guard let token = Self.sessionToken(request), try await database.session(token: token) != nil else {
            return Response(status: .unauthorized, headers: [.cacheControl: "no-store"])
        }
        guard let lease = await streams.open(session: token) else {
            logger.warning("hub: a live stream refused at its limit", metadata: [
                "per-session": "\(LiveStreams.perSession)", "limit": "\(LiveStreams.maximum)",
            ])
            return Response(status: .serviceUnavailable, headers: [.retryAfter: "30", .cacheControl: "no-store"])
        }
        let database = self.database, signal = self.signal
        var headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
        for (name, value) in Self.securityHeaders where name != .cacheControl { headers[name] = value }
        // The lease is the body's: released when the body ends, or when Hummingbird drops the
        // body unrun (the client left before the head went out).
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { lease.release() }
            // The generation before the first byte: a change committed once the client has its
            // first line (the page then fetches the overview) is told, never counted as seen.
            var seen = await signal.generation
            try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
            var checked = ContinuousClock.now
            while await !signal.isClosing {
                try Task.checkCancellation()
                await signal.wait(after: seen, seconds: Self.keepAliveSeconds)
                try Task.checkCancellation()
                if ContinuousClock.now - checked >= .seconds(Self.keepAliveSeconds) {
                    guard try await database.session(token: token) != nil else { break }
                    checked = ContinuousClock.now
                }
                let now = await signal.generation
                let changed = now != seen
                seen = now
                try await writer.write(ByteBuffer(string: changed ? "event: change\ndata: \n\n" : ": keep-alive\n\n"))
                // Changes in the next second are told together, after it.
                if changed { try await Task.sleep(for: .seconds(1)) }
            }
            try await writer.finish(nil)
        })
    }

    static let notices: [String: String] = [
        "raised": "The alert was raised: every box hears it at its next feed read (within seconds).",
        "acknowledged": "Acknowledged: the box that called, and every other box, hear that help is coming.",
        "cancelled": "The alert was cancelled for every box.",
        "already": "That was already done (by you or another coordinator): nothing new was sent.",
        "ended": "That alert was cancelled already: nothing was sent.",
    ]

    func signIn(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        // A sign-in form posted from another site would sign this browser in as someone else
        // (login CSRF): a browser says where a form came from.
        if let origin = request.headers[.origin], !Self.sameOrigin(origin, request) {
            return Self.html(CoordinatorPage.signIn(message: "Sign in from this hub's own page."), status: .forbidden)
        }
        guard let fields = await Self.fields(request), let name = fields["name"], let password = fields["password"] else {
            return Self.html(CoordinatorPage.signIn(message: "Give a name and a password."), status: .badRequest)
        }
        switch try await database.signIn(name: name, password: password, client: context.client) {
        case .signedIn(let token, _):
            logger.info("hub: a coordinator signed in", metadata: ["coordinator": "\(name)"])
            return Self.redirect("/", cookie: "\(Self.cookieName)=\(token); Path=/; Max-Age=\(HubDatabase.sessionSeconds); HttpOnly; Secure; SameSite=Strict")
        case .refused:
            logger.notice("hub: a sign-in was refused", metadata: ["name": "\(name.prefix(64))"])
            return Self.html(CoordinatorPage.signIn(message: "Wrong name or password."), status: .unauthorized)
        case .rateLimited(let seconds):
            logger.warning("hub: sign-ins refused for a while after repeated failures", metadata: ["name": "\(name.prefix(64))"])
            var response = Self.html(CoordinatorPage.signIn(message: "Too many failed sign-ins from here: try again in \((seconds + 59) / 60) minutes."),
                                     status: .tooManyRequests)
            response.headers[.retryAfter] = "\(seconds)"
            return response
        case .busy:
            logger.warning("hub: a sign-in was turned away: too many password checks wait their turn")
            var response = Self.html(CoordinatorPage.signIn(message: "The hub is busy checking sign-ins: try again in a few seconds."),
                                     status: .serviceUnavailable)
            response.headers[.retryAfter] = "5"
            return response
        }
    }

    func raise(_ fields: [String: String], by coordinator: String) async throws -> Response {
        guard let slug = fields["kind"], let kind = CoordinatorPage.kind(slug: slug),
              let text = fields["text"]?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty, text.utf8.count <= 200,
              let hours = fields["hours"].flatMap(Int.init), (1...168).contains(hours) else {
            return Self.html(CoordinatorPage.message("Not raised", "An alert needs a kind, a text of at most 200 bytes and 1 to 168 hours."),
                             status: .badRequest)
        }
        let severity: AlertSeverity = kind == .info ? .info : (kind == .areaHazard ? .warning : .critical)
        let id = try await database.raiseAlert(by: coordinator, kind: kind, severity: severity, text: text,
                                               validSeconds: hours * 3_600, nowMicroseconds: now())
        logger.notice("hub: a coordinator raised an alert for the network",
                      metadata: ["coordinator": "\(coordinator)", "alert": "\(id.text)", "kind": "\(slug)"])
        return Self.redirect("/?done=raised")
    }

    func act(_ fields: [String: String], by coordinator: String, acknowledge: Bool) async throws -> Response {
        guard let id = fields["alert"].flatMap(Self.alertID) else {
            return Self.html(CoordinatorPage.message("Nothing done", "That is not an alert id."), status: .badRequest)
        }
        let outcome = acknowledge
            ? try await database.acknowledge(id, by: coordinator, nowMicroseconds: now())
            : try await database.cancelNetworkAlert(id, by: coordinator, nowMicroseconds: now())
        switch outcome {
        case .done:
            logger.notice(acknowledge ? "hub: a coordinator acknowledged an alert" : "hub: a coordinator cancelled a network alert",
                          metadata: ["coordinator": "\(coordinator)", "alert": "\(id.text)"])
            return Self.redirect(acknowledge ? "/?done=acknowledged" : "/?done=cancelled")
        case .alreadyDone:
            return Self.redirect("/?done=already")
        case .ended:
            return Self.redirect("/?done=ended")
        case .unknownAlert:
            return Self.html(CoordinatorPage.message("Nothing done", "The hub knows no such alert."), status: .notFound)
        }
    }

    // MARK: Sessions and forms

    /// Runs `body` for a POST from a signed-in coordinator whose form carries the session's CSRF
    /// token; anything else changes nothing.
    func withSession(_ request: Request,
                     _ body: (HubDatabase.Session, String, [String: String]) async throws -> Response) async throws -> Response {
        guard let token = Self.sessionToken(request), let session = try await database.session(token: token) else {
            return Self.html(CoordinatorPage.message("Signed out", "Sign in again to do that."), status: .unauthorized)
        }
        guard let fields = await Self.fields(request),
              PasswordHash.constantTimeEqual(Array((fields["csrf"] ?? "").utf8), Array(session.csrf.utf8)) else {
            logger.warning("hub: a coordinator's form came without its CSRF token; nothing done", metadata: ["coordinator": "\(session.coordinator)"])
            return Self.html(CoordinatorPage.message("Refused", "This form is stale or did not come from this hub's page. Reload the page and try again."),
                             status: .forbidden)
        }
        return try await body(session, token, fields)
    }

    static func sessionToken(_ request: Request) -> String? {
        guard let value = request.cookies[cookieName]?.value, !value.isEmpty, value.count <= 64 else { return nil }
        return value
    }

    /// Whether an `Origin` header names the host the request was sent to.
    static func sameOrigin(_ origin: String, _ request: Request) -> Bool {
        guard let host = request.head.authority else { return false }
        return origin == "https://" + host
    }

    /// The form's fields (the last of a repeated name wins).
    static func fields(_ request: Request) async -> [String: String]? {
        guard let body = try? await request.body.collect(upTo: maxFormBytes) else { return nil }
        return FormFields.parse(String(buffer: body))
    }

    /// "ORIGIN-HEX:COUNTER" (`AlertID.text`).
    static func alertID(_ text: String) -> AlertID? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let origin = UInt64(parts[0], radix: 16), let counter = UInt32(parts[1]) else { return nil }
        return AlertID(origin: origin, counter: counter)
    }

    // MARK: Responses

    static let securityHeaders: [(HTTPField.Name, String)] = [
        (.contentSecurityPolicy, "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        (.xContentTypeOptions, "nosniff"),
        // same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on its own
        // forms, and the sign-in form's origin check needs the real one.
        (HTTPField.Name("Referrer-Policy") ?? .cacheControl, "same-origin"),
        (.cacheControl, "no-store"),
    ]

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers: HTTPFields = [.contentType: "text/html; charset=utf-8"]
        for (name, value) in securityHeaders { headers[name] = value }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// 303 See Other: after a POST the browser GETs the page (a reload does not repeat the POST).
    static func redirect(_ location: String, cookie: String? = nil) -> Response {
        var headers: HTTPFields = [.location: location]
        for (name, value) in securityHeaders { headers[name] = value }
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }
}

/// The live streams open at once, bounded in all and per session: each holds a connection and a
/// waiter on the feed's signal, and one stolen cookie must not hold them all.
actor LiveStreams {
    static let maximum = 256
    static let perSession = 4
    private var bySession: [String: Int] = [:]
    private var count = 0

    /// A lease on one stream for `session`, nil at either limit.
    func open(session: String) -> Lease? {
        guard count < Self.maximum, bySession[session, default: 0] < Self.perSession else { return nil }
        count += 1
        bySession[session, default: 0] += 1
        return Lease { Task { await self.close(session: session) } }
    }

    fileprivate func close(session: String) {
        count = max(0, count - 1)
        let left = bySession[session, default: 1] - 1
        bySession[session] = left > 0 ? left : nil
    }

    /// One stream's place: given back once, by `release` or when the lease is dropped
    /// unreleased (the feed's streams hold their places the same way).
    typealias Lease = StreamLease
}

/// A flag set once, from any thread.
final class OnceFlag: Sendable {
    private let value = Mutex(false)
    /// Sets it; true only for the call that set it.
    func set() -> Bool { value.withLock { was in defer { was = true }; return !was } }
}
