internal import CVigilLinux
#if canImport(Glibc)
import Glibc
#endif

/// Unix-domain stream sockets: the node's control socket and the CLI's client side.
public enum UnixSocket {
    /// A connected pair of non-blocking packet sockets (SOCK_SEQPACKET): each write is read whole,
    /// as on an HCI socket. Returned as raw descriptors the caller closes.
    public static func packetPair() throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        let flags = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        _ = try check("socketpair(AF_UNIX)") { fds.withUnsafeMutableBufferPointer { socketpair(AF_UNIX, flags, 0, $0.baseAddress) } }
        return (fds[0], fds[1])
    }

    /// Binds and listens at `path` (a stale socket file from a crashed node is replaced). The
    /// file gets `mode` between the bind and the listen: nobody can connect before the listen,
    /// so there is no moment when the umask's mode lets others in (a socket's own descriptor
    /// cannot `fchmod` its file on Linux).
    public static func listen(path: String, backlog: Int32 = 8, mode: UInt32 = 0o600) throws(SystemError) -> FileDescriptor {
        let raw = try check("socket(AF_UNIX)") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        let fd = FileDescriptor(adopting: raw)
        _ = unlink(path)
        _ = try check("bind", path) { cvigil_unix_bind(raw, path) }
        _ = try check("chmod", path) { chmod(path, mode_t(mode)) }
        _ = try check("listen", path) { Glibc.listen(raw, backlog) }
        return fd
    }

    /// The user id of the process at the other end of a connected Unix socket.
    public static func peerUserID(_ fd: borrowing FileDescriptor) throws(SystemError) -> UInt32 {
        var uid: UInt32 = 0
        _ = try check("getsockopt(SO_PEERCRED)") { cvigil_peer_uid(fd.rawValue, &uid) }
        return uid
    }

    /// Accepts one pending connection; nil when none is waiting.
    public static func accept(_ listener: borrowing FileDescriptor) throws(SystemError) -> FileDescriptor? {
        while true {
            switch ErrnoCall.negativeFails({ cvigil_accept(listener.rawValue) }) {
            case .success(let raw): return FileDescriptor(adopting: raw)
            case .failure(.interrupted): continue
            case .failure(.wouldBlock): return nil
            case .failure(let e): throw SystemError("accept", errno: e)
            }
        }
    }

    /// Connects to `path` (blocking), with send/receive timeouts.
    public static func connect(path: String, timeoutMilliseconds: Int = 3_000) throws(SystemError) -> FileDescriptor {
        let raw = try check("socket(AF_UNIX)") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        let fd = FileDescriptor(adopting: raw)
        var tv = timeval(tv_sec: timeoutMilliseconds / 1_000, tv_usec: (timeoutMilliseconds % 1_000) * 1_000)
        _ = setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(raw, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = try check("connect", path) { cvigil_unix_connect(raw, path) }
        return fd
    }
}

/// TCP client sockets to numeric addresses (the alarm receiving centre's receivers): non-blocking
/// from the first call, so the event loop never waits on one.
public enum TCPStream {
    /// Starts connecting to `address` (an IPv4 or IPv6 literal) on `port`. The socket comes back
    /// at once, connected or connecting: watch it for output, then ask `connectionError`.
    public static func connect(address: String, port: UInt16) throws(SystemError) -> FileDescriptor {
        let raw = try check("connect", "\(address) port \(port)") { cvigil_tcp_connect(address, port) }
        return FileDescriptor(adopting: raw)
    }

    /// Whether `connect` takes `address`: an IPv4 dotted quad or an IPv6 literal, as inet_pton(3)
    /// reads them (no zone, no name).
    public static func isNumericAddress(_ address: String) -> Bool {
        !address.contains("\0") && cvigil_is_numeric_address(address) == 1
    }

    /// After a connecting socket turned writable: nil when it is connected, else why not.
    public static func connectionError(_ socket: borrowing FileDescriptor) -> SystemError? {
        let error = cvigil_socket_error(socket.rawValue)
        return error == 0 ? nil : SystemError("connect", errno: Errno(rawValue: error))
    }
}

/// Unix-domain datagram sockets: the service manager's notification socket (`NOTIFY_SOCKET`).
public enum UnixDatagram {
    /// An unbound, non-blocking datagram socket to send from.
    public static func socket() throws(SystemError) -> FileDescriptor {
        let raw = try check("socket(AF_UNIX, SOCK_DGRAM)") {
            Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        return FileDescriptor(adopting: raw)
    }

    /// Sends `bytes` as one datagram to `path` (a leading '@' names the abstract namespace).
    public static func send(_ bytes: [UInt8], from socket: borrowing FileDescriptor, to path: String) throws(SystemError) {
        try send(bytes, fromDescriptor: socket.rawValue, to: path)
    }

    /// The same from a descriptor held elsewhere (an optional socket of a component).
    public static func send(_ bytes: [UInt8], fromDescriptor descriptor: Int32, to path: String) throws(SystemError) {
        let name = Array(path.utf8)
        while true {
            let sent = ErrnoCall.negativeFails {
                name.withUnsafeBufferPointer { n in
                    bytes.withUnsafeBytes { b in
                        n.withMemoryRebound(to: CChar.self) { cvigil_unix_sendto(descriptor, $0.baseAddress, n.count, b.baseAddress, b.count) }
                    }
                }
            }
            switch sent {
            case .success: return
            case .failure(.interrupted): continue
            case .failure(let e): throw SystemError("sendto", path, errno: e)
            }
        }
    }

    /// A datagram socket bound at `path` (replacing a stale one; '@' names the abstract
    /// namespace), for a listener: what a service
    /// manager does with NOTIFY_SOCKET, and what tests of the protocol do.
    public static func bind(path: String) throws(SystemError) -> FileDescriptor {
        let fd = try socket()
        if !path.hasPrefix("@") { _ = unlink(path) }
        let name = Array(path.utf8)
        _ = try check("bind", path) {
            name.withUnsafeBufferPointer { n in n.withMemoryRebound(to: CChar.self) { cvigil_unix_bind_name(fd.rawValue, $0.baseAddress, n.count) } }
        }
        return fd
    }

    /// The next datagram, waiting at most `timeoutMilliseconds`; nil when none came in time.
    public static func receive(_ socket: borrowing FileDescriptor, timeoutMilliseconds: Int32, maxBytes: Int = 4_096) throws(SystemError) -> [UInt8]? {
        var poller = pollfd(fd: socket.rawValue, events: Int16(POLLIN), revents: 0)
        while true {
            switch ErrnoCall.negativeFails({ poll(&poller, 1, timeoutMilliseconds) }) {
            case .success(0): return nil
            case .success: break
            case .failure(.interrupted): continue
            case .failure(let e): throw SystemError("poll", errno: e)
            }
            var buffer = [UInt8](repeating: 0, count: maxBytes)
            switch ErrnoCall.negativeFails({ buffer.withUnsafeMutableBytes { recv(socket.rawValue, $0.baseAddress, $0.count, 0) } }) {
            case .success(let n): return Array(buffer[..<n])
            case .failure(.interrupted), .failure(.wouldBlock): continue
            case .failure(let e): throw SystemError("recv", errno: e)
            }
        }
    }
}
