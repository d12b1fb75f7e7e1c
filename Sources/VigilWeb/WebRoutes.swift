import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import VigilAccess
import VigilNode

/// The page's routes: the page and its live stream, signing in and out, staff's actions (forms),
/// health. The JSON API is `APIRoutes`.
///
/// Access: the page and the stream need a session unless `http.public_view` allows anyone to
/// view; every action needs a session and the session's CSRF token in the form (a POST without
/// it changes nothing: 403). The session cookie is HttpOnly and SameSite=Strict (and Secure
/// over TLS). Pages send a Content-Security-Policy that allows only the box's own style and
/// script.
struct WebRoutes: Sendable {
    let node: NodeHandle
    let settings: HTTPSettings
    let credentials: WebCredentials
    let sessions: WebSessions
    let feed: LiveFeed
    let metrics: PrometheusCollectorRegistry?
    let logger: Logger

    static let cookieName = "vigil_session"
    static let maxFormBytes = 16 * 1_024
    /// Password checks run one at a time, each on a thread of its own (scrypt takes 16 MiB and
    /// about 0.1 s): a flood of sign-ins cannot take the box's memory or both cores.
    static let passwordChecks = Gate(width: 1)

    func register(on router: Router<WebContext>) {
        router.get("/") { request, context in try await page(request, context) }
        router.get("events") { request, context in try await events(request, context) }
        router.get("login") { _, _ in Self.html(PageRenderer.signIn()) }
        router.post("login") { request, context in try await signIn(request, context) }
        router.post("logout") { request, _ in try await withSession(request) { _, token, _ in
            await sessions.close(token)
            return redirect("/login", cookie: "\(Self.cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict\(settings.tls ? "; Secure" : "")")
        } }
        router.post("act/:action") { request, context in
            let action = context.parameters.get("action") ?? ""
            return try await withSession(request) { _, _, form in try await act(action, form) }
        }
        router.get("residents/:id") { request, context in
            guard let session = await session(request) else { return redirect("/login") }
            let id = APIRoutes.pathID(context)
            guard let r = node.snapshots.latest?.residents.first(where: { $0.id == id }) else {
                return Self.html(PageRenderer.message("No such resident", "Nobody with that id is enrolled."), status: .notFound)
            }
            return Self.html(PageRenderer.residentForm(r, viewer: .init(acting: true, csrf: session.csrf)))
        }
        router.get("static/page.css") { _, _ in Self.asset(StaticAssets.stylesheet, type: "text/css; charset=utf-8") }
        router.get("static/page.js") { _, _ in Self.asset(StaticAssets.script, type: "text/javascript; charset=utf-8") }
        router.get("healthz") { _, _ in health() }
        router.get("readyz") { _, _ in ready() }
        let api = APIRoutes(node: node, settings: settings, credentials: credentials, sessions: sessions, logger: logger)
        api.register(on: router)
        CAPRoutes(node: node, settings: settings, api: api).register(on: router)
        // Prometheus's scrape: readable as the status is (a token, a session, or a public view).
        router.get("metrics") { request, _ in
            try await api.authorised(request, acting: false) {
                guard let metrics else { return Self.text("no metrics in this process\n", status: .notFound) }
                return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                                body: .init(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
            }
        }
    }

    // MARK: The page

    func page(_ request: Request, _ context: WebContext) async throws -> Response {
        let session = await session(request)
        guard session != nil || settings.publicView else { return redirect("/login") }
        let viewer = PageRenderer.Viewer(acting: session != nil, csrf: session?.csrf ?? "")
        let query = request.uri.queryParameters
        if let past = try await pastMoment(at: query["at"].map(String.init), sequence: query["seq"].map(String.init)) {
            // After-incident review is for staff: a public view shows now only (each past view
            // is a replay of the log).
            guard session != nil else { return redirect("/login") }
            switch past {
            case .failure(let why):
                return Self.html(PageRenderer.message("Not a moment", why.message), status: .badRequest)
            case .success(let (moment, asked)):
                do {
                    let snapshot = try await node.pastSnapshot(at: moment, asked: asked)
                    return Self.html(PageRenderer.page(snapshot, viewer: viewer))
                } catch let busy as PastViewBusy {
                    var response = Self.html(PageRenderer.message("Busy", busy.description), status: .serviceUnavailable)
                    response.headers[.retryAfter] = "5"
                    return response
                } catch {
                    return Self.html(PageRenderer.message("Not rebuilt", "The log could not be read back to that moment: \(error)"),
                                     status: .serviceUnavailable)
                }
            }
        }
        guard let snapshot = node.snapshots.latest else {
            return Self.html(PageRenderer.message("Starting", "The box is starting; this page shows it in a moment."), status: .serviceUnavailable)
        }
        let notice = query["done"].flatMap { Self.notices[String($0)] }
        // A viewer who is not signed in reads the public view, as the API and the live stream give it.
        return Self.html(PageRenderer.page(session != nil ? snapshot : snapshot.forPublic(), viewer: viewer, notice: notice))
    }

    /// `?at=` (a time, "90m ago") or `?seq=` (an event): the moment, and how to say it; nil for now.
    func pastMoment(at: String?, sequence: String?) async throws -> Result<(PastMoment, String), PastMomentError>? {
        if let sequence, !sequence.isEmpty {
            guard let n = UInt64(sequence) else { return .failure(PastMomentError(message: "seq must be an event's number")) }
            return .success((.sequence(n), "right after event \(n)"))
        }
        guard let at, !at.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        do {
            let moment = try PastMoment.parse(at, nowMicroseconds: now)
            guard case .time(let t) = moment else { return .success((moment, "then")) }
            return .success((moment, "as it was at " + PageRenderer.isoTime(t)))
        } catch {
            return .failure(error)
        }
    }

    // MARK: The live stream

    func events(_ request: Request, _ context: WebContext) async throws -> Response {
        let token = Self.sessionToken(request)
        let session = await session(request)
        let bearer = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let script = bearer.flatMap { self.credentials.tokenName($0) } != nil
        guard session != nil || script || settings.publicView else {
            return Response(status: .unauthorized, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "sign in first\n")))
        }
        let lastID = request.headers[.lastEventID].flatMap { UInt64($0) }
        guard let stream = feed.stream(lastEventID: lastID) else {
            var response = Response(status: .serviceUnavailable, headers: [.contentType: "text/plain"],
                                    body: .init(byteBuffer: ByteBuffer(string: "too many live pages; reload later\n")))
            response.headers[.retryAfter] = "30"
            return response
        }
        // Staff and scripts get the whole view (a script's forms carry no CSRF token: it acts
        // through the API); everyone else the public one.
        let acting = session != nil || script
        // Whether the stream may go on: a session signed out, expired or ended by a new password,
        // or a revoked token, ends it (the browser reconnects and is refused). Looked at every
        // few seconds, not every message.
        let sessions = self.sessions
        let web = self.credentials
        let publicView = settings.publicView
        let stillAllowed: @Sendable () async -> Bool = {
            if let token, await sessions.session(token, currentHash: web.adminHash, touch: false) != nil { return true }
            if let bearer, web.tokenName(bearer) != nil { return true }
            return publicView && !acting
        }
        var headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
        headers[.accelBuffering] = "no"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // How long to wait before reconnecting after a drop (EventSource's retry).
            try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
            var checked = sessions.now()
            for await message in stream {
                if sessions.now() &- checked >= 5 {
                    guard await stillAllowed() else { break }
                    checked = sessions.now()
                }
                try await writer.write(message.bytes(acting: acting))
            }
            try await writer.finish(nil)
        })
    }

    // MARK: Signing in

    func signIn(_ request: Request, _ context: WebContext) async throws -> Response {
        // A sign-in form posted from another site would sign this browser in as someone else.
        if let origin = request.headers[.origin], !sameOrigin(origin, request) {
            return Self.html(PageRenderer.signIn(message: "Sign in from this box's own page."), status: .forbidden)
        }
        guard let fields = await Self.fields(request), let password = fields["password"], password.utf8.count <= 256 else {
            return Self.html(PageRenderer.signIn(message: "Give the admin password."), status: .badRequest)
        }
        guard let hash = credentials.adminHash else {
            return Self.html(PageRenderer.signIn(message: "No admin password is set: set one on the box with `vigil http passwd`."),
                             status: .unauthorized)
        }
        let client = context.client
        switch await sessions.beginSignIn(client: client) {
        case .go:
            break
        case .wait(let wait):
            logger.warning("web: sign-ins refused for a while after repeated failures", metadata: ["client": "\(client)"])
            var response = Self.html(PageRenderer.signIn(message: "Too many failed sign-ins from this device: try again in \((wait + 59) / 60) minutes."),
                                     status: .tooManyRequests)
            response.headers[.retryAfter] = "\(wait)"
            return response
        case .busy:
            var response = Self.html(PageRenderer.signIn(message: "The box is checking other sign-ins: try again in a few seconds."),
                                     status: .serviceUnavailable)
            response.headers[.retryAfter] = "5"
            return response
        }
        let matches = await Self.passwordChecks.run { PasswordHash.verify(password, against: hash) }
        await sessions.finishSignIn(client: client, succeeded: matches)
        guard matches else {
            logger.notice("web: a sign-in was refused", metadata: ["client": "\(client)"])
            return Self.html(PageRenderer.signIn(message: "Wrong password."), status: .unauthorized)
        }
        let (token, _) = await sessions.open(passwordHash: hash)
        logger.notice("web: staff signed in", metadata: ["client": "\(client)"])
        // A session cookie (no Max-Age): the box ends it 12 hours after its last use, or when the
        // browser closes.
        return redirect("/", cookie: "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict\(settings.tls ? "; Secure" : "")")
    }

    func session(_ request: Request) async -> WebSessions.Session? {
        guard let token = Self.sessionToken(request) else { return nil }
        return await sessions.session(token, currentHash: credentials.adminHash)
    }

    /// Runs `body` for a POST from signed-in staff whose form carries the session's CSRF token;
    /// anything else changes nothing.
    func withSession(_ request: Request,
                     _ body: (WebSessions.Session, String, [String: String]) async throws -> Response) async throws -> Response {
        guard let token = Self.sessionToken(request),
              let session = await sessions.session(token, currentHash: credentials.adminHash) else {
            return Self.html(PageRenderer.message("Signed out", "Sign in again to do that."), status: .unauthorized)
        }
        guard let fields = await Self.fields(request),
              PasswordHash.constantTimeEqual(Array((fields["csrf"] ?? "").utf8), Array(session.csrf.utf8)) else {
            logger.warning("web: a form came without its CSRF token; nothing done")
            return Self.html(PageRenderer.message("Refused", "This form is stale or did not come from this box's page. Reload the page and try again."),
                             status: .forbidden)
        }
        return try await body(session, token, fields)
    }

    // MARK: Acting

    static let notices: [String: String] = [
        "check-in": "Checked in: the resident's ladder starts over.",
        "silence": "The alarm is silenced.",
        "acknowledge": "Acknowledged: the box that called hears that help is coming.",
        "cancel": "The alert is cancelled.",
        "raise": "The alert is raised and on the air.",
        "enrol": "The resident is enrolled.",
        "edit": "The resident's settings are saved.",
        "remove": "The resident is removed.",
        "chat-send": "The message went out on the link.",
        "chat-open": "The chat is marked read.",
    ]

    func act(_ action: String, _ form: [String: String]) async throws -> Response {
        let command: NodeCommand
        switch FormCommands.command(action, form) {
        case .success(let c): command = c
        case .failure(let why):
            return Self.html(PageRenderer.message("Nothing done", why.message), status: .badRequest)
        }
        guard let reply = await node.perform(command) else {
            return Self.html(PageRenderer.message("Nothing done", "The box did not answer: it is stopping or restarting. Try again in a minute."),
                             status: .serviceUnavailable)
        }
        guard reply.ok else {
            let status: HTTPResponse.Status = switch reply.refusal {
            case .conflict: .conflict
            case .unavailable: .serviceUnavailable
            case .logRefused: .insufficientStorage
            default: .badRequest
            }
            return Self.html(PageRenderer.message("Nothing done", reply.error ?? "The box refused."), status: status)
        }
        logger.notice("web: staff acted", metadata: ["command": "\(command.name)", "sequence": "\(reply.sequence ?? 0)"])
        // The page the browser is sent to shows what was done.
        if let sequence = reply.sequence { await node.snapshots.waitUntil(covering: sequence) }
        return redirect("/?done=\(action)")
    }

    // MARK: Health

    /// Alive: the loop published a snapshot within the last three heartbeats (a stuck loop does
    /// not; systemd's watchdog restarts it, and this tells a monitoring system the same).
    func health() -> Response {
        guard let age = feed.secondsSinceSnapshot else { return Self.text("starting\n", status: .serviceUnavailable) }
        return age < 15 ? Self.text("ok\n") : Self.text("the loop has not reported for \(age) s\n", status: .serviceUnavailable)
    }

    /// Ready: started, and the log takes writes (a box running from memory works, but needs a
    /// new card before it is trusted again).
    func ready() -> Response {
        guard let latest = node.snapshots.latest else { return Self.text("starting\n", status: .serviceUnavailable) }
        // No details: the probes answer anyone (a monitor has no session); the page says more.
        if latest.log.failure != nil { return Self.text("the log stopped taking writes\n", status: .serviceUnavailable) }
        return Self.text("ready\n")
    }

    // MARK: Requests and responses

    static func sessionToken(_ request: Request) -> String? {
        guard let value = request.cookies[cookieName]?.value, !value.isEmpty, value.count <= 64 else { return nil }
        return value
    }

    func sameOrigin(_ origin: String, _ request: Request) -> Bool {
        guard let host = request.head.authority else { return false }
        return origin == (settings.tls ? "https://" : "http://") + host
    }

    static func fields(_ request: Request) async -> [String: String]? {
        guard let body = try? await request.body.collect(upTo: maxFormBytes) else { return nil }
        return FormFields.parse(String(buffer: body))
    }

    static let securityHeaders: [(HTTPField.Name, String)] = [
        (.contentSecurityPolicy, "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        (.xContentTypeOptions, "nosniff"),
        // same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on its own
        // forms, and the sign-in form's origin check needs the real one.
        (.referrerPolicy, "same-origin"),
        (.cacheControl, "no-store"),
    ]

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers: HTTPFields = [.contentType: "text/html; charset=utf-8"]
        for (name, value) in securityHeaders { headers[name] = value }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func text(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type, .cacheControl: "max-age=3600", .xContentTypeOptions: "nosniff"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// 303 See Other: after a POST the browser GETs the page (a reload does not repeat the POST).
    func redirect(_ location: String, cookie: String? = nil) -> Response {
        var headers: HTTPFields = [.location: location]
        for (name, value) in Self.securityHeaders { headers[name] = value }
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }
}

extension HTTPField.Name {
    // Names HTTPTypes does not define; constant and valid, so the force-unwraps cannot fail.
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    /// Asks a reverse proxy (nginx) not to buffer the live stream.
    static let accelBuffering = HTTPField.Name("X-Accel-Buffering")!
}

extension HTTPResponse.Status {
    /// 507: the log refused the event (its card is full or failing); HTTPTypes names no such status.
    static let insufficientStorage = HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
}
