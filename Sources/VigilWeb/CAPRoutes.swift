import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import VigilCAP
import VigilNode

/// CAP out on the box's page (docs/warnings.md "CAP out"): `/cap.atom`, an Atom index of the
/// box's alerts, and `/cap/IDENTIFIER.xml`, each a CAP 1.2 document, for Home Assistant, EAS-style
/// systems and public alert aggregators. Readable as the status is: a bearer token, a session,
/// or anyone when `http.public_view` is on. What they say holds no personal data (`CAPOut`), so
/// everyone who may read them reads the same bytes.
///
/// Both answer `If-None-Match` with 304 when nothing changed: a reader polling every minute costs
/// the box one snapshot's mapping, not the bytes.
struct CAPRoutes: Sendable {
    let node: NodeHandle
    let settings: HTTPSettings
    let api: APIRoutes

    func register(on router: Router<WebContext>) {
        router.get("cap.atom") { request, _ in
            try await api.authorised(request, acting: false) {
                guard let (documents, writer, nodeID) = current() else { return Self.starting() }
                let selfLink = settings.publicURL.map { $0 + "/cap.atom" }
                let bytes = CAPOut.index(documents, writer: writer, id: "urn:vigil:box:\(nodeID)", selfLink: selfLink)
                return Self.answer(bytes, type: "application/atom+xml", request: request)
            }
        }
        router.get("cap/:name") { request, context in
            try await api.authorised(request, acting: false) {
                guard let (documents, _, _) = current() else { return Self.starting() }
                let name = context.parameters.get("name") ?? ""
                guard let document = documents.first(where: { CAPOut.link($0) == "cap/" + name }) else {
                    return WebRoutes.text("no such alert here (the index is /cap.atom)\n", status: .notFound)
                }
                return Self.answer(CAPWriter.write(document), type: "application/cap+xml", request: request)
            }
        }
    }

    /// The documents for the latest snapshot, who writes them, and the box's id.
    func current() -> ([CAPAlert], CAPOut.Writer, String)? {
        guard let snapshot = node.snapshots.latest else { return nil }
        let name = settings.siteName.isEmpty ? "Vigil box \(snapshot.nodeID)" : "Vigil at \(settings.siteName)"
        let writer = CAPOut.Writer(sender: "vigil-box-\(snapshot.nodeID)", name: name)
        let site = CAPOut.Place(name: settings.siteName.isEmpty ? "the shelter of Vigil box \(snapshot.nodeID)" : settings.siteName,
                                point: settings.siteLocation)
        return (CAPOut.documents(snapshot.capAlerts(site: site), writer: writer), writer, snapshot.nodeID)
    }

    static func starting() -> Response {
        var response = WebRoutes.text("the box is starting\n", status: .serviceUnavailable)
        response.headers[.retryAfter] = "5"
        return response
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
