import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import VigilAccess
import VigilCAP
import VigilNode

/// CAP out on the box's page (docs/warnings.md "CAP out"): `/cap.atom`, an Atom index of the
/// box's alerts, and `/cap/IDENTIFIER.xml`, each a CAP 1.2 document, for Home Assistant, EAS-style
/// systems and public alert aggregators. Staff (a bearer token, a session) read every alert;
/// anyone else, when `http.public_view` or `http.cap_public` is on, every alert but calls for help
/// (that someone at this shelter needs medical help now is for those who answer). What they say
/// holds no personal data (`CAPOut`).
///
/// Both answer `If-None-Match` with 304 when nothing changed: a reader polling every minute costs
/// the box one snapshot's mapping, not the bytes.
struct CAPRoutes: Sendable {
    let node: NodeHandle
    let settings: HTTPSettings
    let api: APIRoutes

    func register(on router: Router<WebContext>) {
        router.get("cap.atom") { request, _ in
            try await authorised(request) { staff in
                guard let (documents, writer, nodeID) = current(staff: staff) else { return Self.starting() }
                let selfLink = settings.publicURL.map { $0 + "/cap.atom" }
                let bytes = CAPOut.index(documents, writer: writer, id: "urn:vigil:box:\(nodeID)", selfLink: selfLink)
                return Self.answer(bytes, type: "application/atom+xml", request: request)
            }
        }
        router.get("cap/:name") { request, context in
            try await authorised(request) { staff in
                guard let (documents, _, _) = current(staff: staff) else { return Self.starting() }
                let name = context.parameters.get("name") ?? ""
                guard let document = documents.first(where: { CAPOut.link($0) == "cap/" + name }) else {
                    return WebRoutes.text("no such alert here (the index is /cap.atom)\n", status: .notFound)
                }
                return Self.answer(CAPWriter.write(document), type: "application/cap+xml", request: request)
            }
        }
    }

    /// `body` with whether staff ask (a token, which must be one of the box's, or a session);
    /// anyone else only where the settings allow.
    private func authorised(_ request: Request, _ body: (Bool) async throws -> Response) async throws -> Response {
        if request.headers[.authorization] != nil {
            return try await api.authorised(request, acting: false) { try await body(true) }
        }
        if let token = WebRoutes.sessionToken(request),
           await api.sessions.session(token, currentHash: api.credentials.adminHash) != nil {
            return try await body(true)
        }
        guard settings.publicView || settings.capPublic else {
            return try await api.authorised(request, acting: false) { try await body(true) } // answers 401, saying how
        }
        return try await body(false)
    }

    /// The documents for the latest snapshot (all alerts for staff, all but calls for help for
    /// anyone else), who writes them, and the box's id.
    func current(staff: Bool) -> ([CAPAlert], CAPOut.Writer, String)? {
        guard let snapshot = node.snapshots.latest else { return nil }
        let name = settings.siteName.isEmpty ? "Vigil box \(snapshot.nodeID)" : "Vigil at \(settings.siteName)"
        let writer = CAPOut.Writer(sender: "vigil-box-\(snapshot.nodeID)", name: name)
        let site = CAPOut.Place(name: settings.siteName.isEmpty ? "the shelter of Vigil box \(snapshot.nodeID)" : settings.siteName,
                                point: settings.siteLocation)
        let alerts = snapshot.capAlerts(site: site).filter { staff || !CAPOut.isCallForHelp($0) }
        return (CAPOut.documents(alerts, writer: writer), writer, snapshot.nodeID)
    }

    static func starting() -> Response {
        var response = WebRoutes.text("the box is starting\n", status: .serviceUnavailable)
        response.headers[.retryAfter] = "5"
        return response
    }

    static func answer(_ bytes: [UInt8], type: String, request: Request) -> Response {
        ConditionalGet.response(bytes, contentType: type + "; charset=utf-8", request: request)
    }
}
