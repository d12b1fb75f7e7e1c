import Foundation
import VigilHubProtocol
import VigilSystem

/// The hubs this box has joined (`vigil hub join`), kept in `DATA/hub.json` (mode 0600: it holds
/// the box's credentials). Each entry pins its hub's certificate.
public struct HubLinks: Codable, Sendable, Equatable {
    public struct Link: Codable, Sendable, Equatable {
        public var url: String
        /// The hub certificate's SHA-256, hex (the hub's identity in events and status).
        public var fingerprint: String
        /// The pinned certificate, PEM.
        public var certificate: String
        /// The box's name at the hub.
        public var name: String
        /// The box's credential at the hub (`BoxCredential.secret`).
        public var credential: String
        /// The hub's reference location, "LATITUDE,LONGITUDE" (`--location`): the box uses the
        /// nearest hub that answers.
        public var location: String?
        /// The network the hub serves (`HubInfo.network`): every entry point of one network
        /// answers the same (nil in links written before it existed).
        public var network: String?

        public init(url: String, fingerprint: String, certificate: String, name: String, credential: String, location: String? = nil,
                    network: String? = nil) {
            self.url = url
            self.fingerprint = fingerprint
            self.certificate = certificate
            self.name = name
            self.credential = credential
            self.location = location
            self.network = network
        }
    }

    public var hubs: [Link] = []

    public init(hubs: [Link] = []) { self.hubs = hubs }

    public static func path(dataDirectory: String) -> String { dataDirectory + "/hub.json" }

    /// The links in `DATA/hub.json`; none when the box has joined no hub.
    public static func load(dataDirectory: String) throws(NodeError) -> HubLinks {
        let path = path(dataDirectory: dataDirectory)
        guard FileManager.default.fileExists(atPath: path) else { return HubLinks() }
        do {
            return try JSONDecoder().decode(HubLinks.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .unsupported("\(path) is unreadable (\(error)); join the hub again with `vigil hub join`")
        }
    }

    /// Writes the links atomically and durably, readable by the box's user only.
    public func save(dataDirectory: String) throws(NodeError) {
        let path = Self.path(dataDirectory: dataDirectory)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do { data = try encoder.encode(self) } catch { throw .unsupported("cannot encode the hub links: \(error)") }
        do throws(SystemError) {
            try FileSystem.replaceDurably(path, contents: Array(data))
        } catch {
            throw .system(error)
        }
    }

    /// Adds or replaces the link to the hub at `link.fingerprint`.
    public mutating func upsert(_ link: Link) {
        hubs.removeAll { $0.fingerprint == link.fingerprint }
        hubs.append(link)
    }
}
