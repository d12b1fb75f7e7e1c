import VigilAccess

/// A request's context at the hub: the client's address, which coordinator sign-ins are counted
/// by.
typealias HubRequestContext = AddressedContext
