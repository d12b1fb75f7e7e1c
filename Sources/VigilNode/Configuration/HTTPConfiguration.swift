import Foundation
import VigilAccess
import VigilCAP

/// The `http:` section: the box's page and API.
extension NodeConfiguration {
    /// The `http:` section.
    static func readHTTP(_ http: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try http.string("listen"), !v.isEmpty {
            guard HTTPSettings.parseListen(v) != nil else { throw http.error("http.listen must be HOST:PORT (0.0.0.0:8443)") }
            config.http.listen = v
        }
        if let v = try http.bool("tls") { config.http.tls = v }
        if let v = try http.bool("public_view") { config.http.publicView = v }
        if let v = try http.bool("cap_public") { config.http.capPublic = v }
        if let v = try http.integer("max_connections", in: 16...100_000) { config.http.connections.total = v }
        if let v = try http.integer("max_connections_per_client", in: 1...100_000) { config.http.connections.perClient = v }
        if let v = try http.duration("idle_timeout") {
            guard (1_000_000...3_600_000_000).contains(v) else { throw http.error("http.idle_timeout must be from 1s to 1h") }
            config.http.connections.idleTimeoutSeconds = Int(v / 1_000_000)
        }
        if let v = try http.string("public_url"), !v.isEmpty {
            guard let url = HTTPSettings.parsePublicURL(v) else {
                throw http.error("http.public_url must be the page's https address as others reach it, such as https://vigil-a.lan:8443")
            }
            config.http.publicURL = url
        }
        try http.finish()
    }
}

/// The box's page and API (docs/page.md "The box's page").
public struct HTTPSettings: Sendable, Equatable {
    /// `HOST:PORT` to serve on; nil (the default): no page at all.
    public var listen: String?
    /// HTTPS with the box's self-signed certificate (`DATA/http/box.crt`, its fingerprint in
    /// `vigil status`); plain HTTP only by explicit choice (`http.tls: false`).
    public var tls = true
    /// Anyone who reaches the page may see the read-only view without signing in. Off by
    /// default: residents' names and rooms are not for everyone on a shelter's Wi-Fi.
    public var publicView = false
    /// Anyone may read the box's alerts as CAP (`/cap.atom`), without the rest of the public view
    /// (`http.cap_public`); calls for help are left out for them (docs/warnings.md "CAP out").
    public var capPublic = false
    /// The page's address as the servers of webhook recipients reach it (`https://vigil-a.lan:8443`),
    /// without a trailing slash: messages to webhooks carry a take link under it. nil: they carry
    /// the link's path and token only.
    public var publicURL: String?
    /// Connections held at once (`http.max_connections`, `http.max_connections_per_client`) and
    /// how long one may sit idle (`http.idle_timeout`), fitted at start to the descriptors the
    /// process may hold, less a reserve for the log, the control socket, notifiers and GATT.
    public var connections = ConnectionLimits.boxPage
    /// The site (`site.name`, `site.location`), as CAP out names and places the box's alerts
    /// (docs/warnings.md "CAP out"); set from `site:` when the configuration is read.
    public var siteName = ""
    public var siteLocation: CAPPoint?

    public init() {}

    /// An `https://host[:port][/prefix]` URL without spaces, query or fragment, at most 200
    /// bytes (plain `http://` only to this box itself: a take token must not cross a network in
    /// the clear); returned without its trailing slash.
    public static func parsePublicURL(_ text: String) -> String? {
        let trimmed = text.hasSuffix("/") ? String(text.dropLast()) : text
        guard trimmed.utf8.count <= 200, trimmed.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
              trimmed.hasPrefix("https://") || isLoopback(url: trimmed),
              let url = URL(string: trimmed), let host = url.host, !host.isEmpty,
              url.query == nil, url.fragment == nil, url.user == nil else { return nil }
        return trimmed
    }

    /// Whether `url` is plain http to this box itself (127.0.0.0/8, ::1, localhost).
    public static func isLoopback(url: String) -> Bool {
        guard url.lowercased().hasPrefix("http://"), let host = URL(string: url)?.host?.lowercased() else { return false }
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// `HOST:PORT` (an IPv6 host in brackets), or nil.
    public static func parseListen(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65_535).contains(port) else { return nil }
        let host = String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        guard !host.isEmpty else { return nil }
        return (host, port)
    }
}
