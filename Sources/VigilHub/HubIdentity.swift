import Logging
import NIOSSL
import VigilAccess

/// The hub's TLS identity: a self-signed certificate made at first start (`DATA/tls/hub.crt`)
/// and its key (`DATA/tls/hub.key`, 0600). Boxes pin it: an enrolment token carries the
/// certificate's SHA-256, and a box trusts only that certificate from then on.
public struct HubIdentity: Sendable {
    let identity: SelfSignedIdentity
    public var certificatePEM: String { identity.certificatePEM }
    public var fingerprint: String { identity.fingerprint }

    /// Loads the identity from `DATA/tls`, making it first if it is not there.
    public static func loadOrCreate(dataDirectory: String, logger: Logger) throws(HubError) -> HubIdentity {
        do {
            return HubIdentity(identity: try SelfSignedIdentity.loadOrCreate(directory: dataDirectory + "/tls", name: "hub",
                                                                              commonName: "vigil-hub", logger: logger))
        } catch {
            throw .setup("hub: \(error)")
        }
    }

    /// The server's TLS configuration.
    public func serverTLS() throws(HubError) -> TLSConfiguration {
        do {
            return try identity.serverTLS()
        } catch {
            throw .setup("\(error)")
        }
    }
}
