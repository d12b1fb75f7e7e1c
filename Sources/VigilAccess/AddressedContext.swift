import Hummingbird
import NIOCore

/// A request's context that keeps the client's address: what the box's page and the hub count
/// sign-in attempts by (`ClientAddress.key`).
public struct AddressedContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The client's address without its port, as sign-in attempts are counted.
    public var client: String { ClientAddress.key(remoteAddress) }
}
