import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to `127.0.0.1:port` from the loopback address `source` (all of
/// 127.0.0.0/8 is this machine's), so a test can be many clients to a server's per-client caps.
/// `blocking: false` returns at once with the connection under way (a siege holds it, unwritten).
/// The caller closes the descriptor.
public func connectFromLoopback(_ source: String, port: Int, blocking: Bool = true) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | (blocking ? 0 : Int32(SOCK_NONBLOCK.rawValue)), 0)
    guard fd >= 0 else { throw LoopbackSocketError("socket: errno \(errno)") }
    var local = sockaddr_in(), remote = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr(source)
    remote.sin_family = sa_family_t(AF_INET)
    remote.sin_port = in_port_t(UInt16(port).bigEndian)
    remote.sin_addr.s_addr = inet_addr("127.0.0.1")
    let size = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
    let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }
    guard bound == 0, connected == 0 || (!blocking && errno == EINPROGRESS) else {
        let e = errno
        close(fd)
        throw LoopbackSocketError("connect from \(source) to port \(port): errno \(e)")
    }
    return fd
}

public struct LoopbackSocketError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
