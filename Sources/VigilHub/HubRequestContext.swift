import Hummingbird
import NIOCore
import VigilAccess

/// A request's context at the hub: the client's address, which coordinator sign-ins are counted
/// by (`ClientAddress.key`).
struct HubRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    var client: String { ClientAddress.key(remoteAddress) }
}
