import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import VigilAccess
import VigilNode

/// The JSON API, `/api/v1` (described by `Sources/VigilWeb/openapi.yaml`, served at
/// `/api/v1/openapi.yaml`): the node's snapshot, and the same typed `NodeCommand`s the CLI and
/// the control socket send, answered with the same `NodeReply` once the event is durable.
///
/// Access: scripts send a bearer token (`vigil http token add NAME`); a signed-in browser may
/// use its session cookie with the session's CSRF token in `X-CSRF-Token`. Reading the status
/// needs neither where `http.public_view` allows viewing. Nothing is writable anonymously.
struct APIRoutes: Sendable {
    let node: NodeHandle
    let settings: HTTPSettings
    let credentials: WebCredentials
    let sessions: WebSessions
    let logger: Logger

    static let maxBodyBytes = 64 * 1_024

    func register(on router: Router<WebContext>) {
        let api = router.group("api/v1")
        api.get("status") { request, _ in try await status(request) }
        api.get("openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml", .cacheControl: "max-age=3600"],
                     body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.text)))
        }
        api.post("commands") { request, _ in
            try await authorised(request, acting: true) {
                guard let body = try? await request.body.collect(upTo: Self.maxBodyBytes) else {
                    return Self.problem(.contentTooLarge, "a command is at most \(Self.maxBodyBytes) bytes")
                }
                let command: NodeCommand
                do {
                    command = try JSONDecoder().decode(NodeCommand.self, from: Data(buffer: body))
                } catch {
                    return Self.problem(.badRequest, "not a command this node knows: \(Self.describe(error))")
                }
                return await perform(command)
            }
        }
        // The commands staff use most, by path (each takes the command's arguments as its body).
        api.post("residents/:id/check-in") { request, context in
            try await authorised(request, acting: true) {
                await perform(.checkIn(CheckInRequest(resident: Self.pathID(context))))
            }
        }
        api.post("alarms/silence") { request, _ in
            try await authorised(request, acting: true) { await perform(.silenceAlarms(SilenceRequest(by: "api"))) }
        }
        api.post("alerts") { request, _ in
            try await authorised(request, acting: true) {
                switch await Self.decode(AlertRequest.self, request) {
                case .success(let r): await perform(.raiseAlert(r))
                case .failure(let refused): refused.response
                }
            }
        }
        api.post("alerts/:id/acknowledge") { request, context in
            try await authorised(request, acting: true) {
                await perform(.acknowledgeAlert(AlertReference(id: Self.pathID(context))))
            }
        }
        api.post("calls/:id/take") { request, context in
            try await authorised(request, acting: true) {
                switch await Self.decode(TakeBody.self, request) {
                case .success(let body): await perform(.takeCall(TakeRequest(call: Self.pathID(context), by: body.by, via: "api")))
                case .failure(let refused): refused.response
                }
            }
        }
        for (action, confirm) in [("confirm", true), ("dismiss", false)] {
            api.post("calls/:id/\(action)") { request, context in
                try await authorised(request, acting: true) {
                    switch await Self.decode(TakeBody.self, request) {
                    case .success(let body):
                        await perform(.decidePhoneCall(PhoneCallDecision(call: Self.pathID(context), confirm: confirm, by: body.by, via: "api")))
                    case .failure(let refused): refused.response
                    }
                }
            }
        }
        // A webhook recipient takes a call with the token its message carried: the token is the
        // authentication (no session, no bearer token), checked by the node, which holds the key.
        api.post("callbacks/take") { request, _ in
            switch await Self.decode(CallbackTakeRequest.self, request) {
            case .success(let body): return await callback(body)
            case .failure(let refused): return refused.response
            }
        }
        api.post("alerts/:id/cancel") { request, context in
            try await authorised(request, acting: true) {
                await perform(.cancelAlert(AlertCancelRequest(id: Self.pathID(context), reason: "cancelled through the API")))
            }
        }
        api.post("residents") { request, _ in
            try await authorised(request, acting: true) {
                switch await Self.decode(ResidentSettings.self, request) {
                case .success(let r): await perform(.enrolResident(r))
                case .failure(let refused): refused.response
                }
            }
        }
        api.patch("residents/:id") { request, context in
            try await authorised(request, acting: true) {
                switch await Self.decode(ResidentSettings.self, request) {
                case .success(var r):
                    r.id = Self.pathID(context)
                    return await perform(.updateResident(r))
                case .failure(let refused): return refused.response
                }
            }
        }
        api.delete("residents/:id") { request, context in
            try await authorised(request, acting: true) {
                await perform(.removeResident(ResidentReference(id: Self.pathID(context))))
            }
        }
    }

    /// The `{id}` of a path, percent-decoded ("" when it is not valid percent-encoding: the node
    /// refuses that as it refuses any id that is not one).
    /// The body of a taking (and of a phone's call confirmed or dismissed): who.
    struct TakeBody: Decodable { var by: String }

    static func pathID(_ context: WebContext) -> String {
        context.parameters.get("id")?.removingPercentEncoding ?? ""
    }

    // MARK: Handlers

    func status(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let past = query["seq"] != nil || query["at"] != nil
        // The past is for staff and scripts: each past view is a replay of the log.
        return try await authorised(request, acting: false, publicAllowed: !past) {
            if let seq = query["seq"] {
                guard let n = UInt64(String(seq)) else { return Self.problem(.badRequest, "seq must be an event's number") }
                return await pastView(.sequence(n), asked: "right after event \(n)")
            }
            if let at = query["at"] {
                let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
                let moment: PastMoment
                do {
                    moment = try PastMoment.parse(String(at), nowMicroseconds: now)
                } catch {
                    return Self.problem(.badRequest, "at: \(error)")
                }
                return await pastView(moment, asked: "as it was at \(at)")
            }
            guard let snapshot = node.snapshots.latest else { return Self.problem(.serviceUnavailable, "the box is starting") }
            // Chats are the shelter's: a public view gets only their counts.
            return Self.json(await knownCaller(request) ? snapshot : snapshot.forPublic())
        }
    }

    func pastView(_ moment: PastMoment, asked: String) async -> Response {
        do {
            return Self.json(try await node.pastSnapshot(at: moment, asked: asked))
        } catch let busy as PastViewBusy {
            var response = Self.problem(.serviceUnavailable, busy.description)
            response.headers[.retryAfter] = "5"
            return response
        } catch {
            return Self.problem(.serviceUnavailable, "the log could not be read back to that moment: \(error)")
        }
    }

    func perform(_ command: NodeCommand) async -> Response {
        guard let reply = await node.perform(command) else {
            return Self.problem(.serviceUnavailable, "the node did not answer: it is stopping or restarting")
        }
        let status: HTTPResponse.Status = switch (reply.ok, reply.refusal) {
        case (true, _): .ok
        case (false, .conflict): .conflict
        case (false, .unavailable): .serviceUnavailable
        case (false, .logRefused): .insufficientStorage
        default: .unprocessableContent
        }
        if reply.ok { logger.notice("api: command taken", metadata: ["command": "\(command.name)", "sequence": "\(reply.sequence ?? 0)"]) }
        return Self.json(reply, status: status)
    }

    /// A callback's answer: 403 for a token that does not take the call (whatever was wrong),
    /// 409 for a call already taken or ended, else as any command.
    func callback(_ body: CallbackTakeRequest) async -> Response {
        // A request that cannot be genuine is answered here, without a turn of the node's loop.
        guard body.isWellFormed else {
            node.noteMalformedCallback()
            return Self.problem(.forbidden, CallbackTakeRequest.refusal)
        }
        guard let reply = await node.perform(.takeCallByCallback(body)) else {
            return Self.problem(.serviceUnavailable, "the node did not answer: it is stopping or restarting")
        }
        if reply.ok {
            logger.notice("api: a webhook took a call", metadata: ["sequence": "\(reply.sequence ?? 0)"])
            return Self.json(reply)
        }
        switch reply.refusal {
        case .invalid?: return Self.problem(.forbidden, reply.error ?? "this token does not take that call")
        case .conflict?: return Self.json(reply, status: .conflict)
        case .logRefused?: return Self.json(reply, status: .insufficientStorage)
        default: return Self.json(reply, status: .serviceUnavailable)
        }
    }

    // MARK: Access

    /// Runs `body` for a caller allowed to read (`acting: false`) or to act. A bearer token
    /// allows both; a session allows reading, and acting with its CSRF token in `X-CSRF-Token`;
    /// `http.public_view` allows anyone to read.
    func authorised(_ request: Request, acting: Bool, publicAllowed: Bool = true,
                    _ body: () async throws -> Response) async throws -> Response {
        if let authorization = request.headers[.authorization] {
            guard authorization.hasPrefix("Bearer "), credentials.tokenName(String(authorization.dropFirst(7))) != nil else {
                logger.notice("api: a request with a token the box does not know was refused")
                var response = Self.problem(.unauthorized, "that token is not one of this box's (vigil http token list)")
                response.headers[.wwwAuthenticate] = "Bearer realm=\"vigil\""
                return response
            }
            return try await body()
        }
        if let token = WebRoutes.sessionToken(request),
           let session = await sessions.session(token, currentHash: credentials.adminHash) {
            if acting {
                let presented = request.headers[.csrfToken] ?? ""
                guard PasswordHash.constantTimeEqual(Array(presented.utf8), Array(session.csrf.utf8)) else {
                    return Self.problem(.forbidden, "a browser acting through the API sends its page's CSRF token in X-CSRF-Token")
                }
            }
            return try await body()
        }
        if !acting && publicAllowed && settings.publicView { return try await body() }
        var response = Self.problem(.unauthorized, "send a bearer token (vigil http token add NAME)")
        response.headers[.wwwAuthenticate] = "Bearer realm=\"vigil\""
        return response
    }

    /// A caller with a token or a session (not merely the public view), without judging
    /// whether it may act.
    func knownCaller(_ request: Request) async -> Bool {
        if let authorization = request.headers[.authorization] {
            return authorization.hasPrefix("Bearer ") && credentials.tokenName(String(authorization.dropFirst(7))) != nil
        }
        guard let token = WebRoutes.sessionToken(request) else { return false }
        return await sessions.session(token, currentHash: credentials.adminHash) != nil
    }

    // MARK: Bodies

    /// A body that cannot be taken, as the response that says why.
    struct Refused: Error {
        var response: Response
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: Request) async -> Result<T, Refused> {
        guard let body = try? await request.body.collect(upTo: maxBodyBytes) else {
            return .failure(Refused(response: problem(.contentTooLarge, "a body is at most \(maxBodyBytes) bytes")))
        }
        do {
            return .success(try JSONDecoder().decode(T.self, from: Data(buffer: body)))
        } catch {
            return .failure(Refused(response: problem(.badRequest, "the body is not what this takes: \(describe(error))")))
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _)?: "\(key.stringValue) is missing"
        case .typeMismatch(_, let c)?, .valueNotFound(_, let c)?, .dataCorrupted(let c)?:
            (c.codingPath.map(\.stringValue).joined(separator: ".") + " " + c.debugDescription).trimmingCharacters(in: .whitespaces)
        default: "not JSON"
        }
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }()

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// An error as RFC 9457 problem details.
    static func problem(_ status: HTTPResponse.Status, _ detail: String) -> Response {
        struct Problem: Encodable {
            var status: Int
            var title: String
            var detail: String
        }
        let data = (try? encoder.encode(Problem(status: status.code, title: status.reasonPhrase, detail: detail))) ?? Data()
        return Response(status: status, headers: [.contentType: "application/problem+json", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension HTTPField.Name {
    static let csrfToken = HTTPField.Name("X-CSRF-Token")!
}
