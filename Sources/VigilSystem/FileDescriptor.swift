internal import CVigilLinux
#if canImport(Glibc)
import Glibc
#endif

/// An owned file descriptor. Not copyable, so it is closed exactly once.
public struct FileDescriptor: ~Copyable, Sendable {
    public let rawValue: Int32

    public init(adopting rawValue: Int32) { self.rawValue = rawValue }

    deinit { _ = Glibc.close(rawValue) }

    public static func open(_ path: String, flags: Int32, mode: UInt32 = 0o644) throws(SystemError) -> FileDescriptor {
        let fd = try check("open", path) { cvigil_open(path, flags | O_CLOEXEC, mode_t(mode)) }
        return FileDescriptor(adopting: fd)
    }

    /// Reads up to `count` bytes; returns nil on EAGAIN for non-blocking descriptors.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int? {
        try readRetrying(rawValue, into: buffer)
    }

    /// Writes all of `bytes`, retrying short writes.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try VigilSystem.writeAll(bytes, "write") { Glibc.write(rawValue, $0, $1) }
    }

    /// Sends all of `bytes` on a socket without blocking and without SIGPIPE; a peer that went
    /// away is an error for this connection only.
    public func sendAll(_ bytes: [UInt8]) throws(SystemError) {
        try VigilSystem.writeAll(bytes, "send") { cvigil_send(rawValue, $0, $1) }
    }

    public func writeAll(_ bytes: [UInt8]) throws(SystemError) {
        try VigilSystem.writeAll(bytes, "write") { Glibc.write(rawValue, $0, $1) }
    }

    /// Opens an existing file for reading (close-on-exec).
    public static func openForReading(_ path: String) throws(SystemError) -> FileDescriptor {
        try open(path, flags: O_RDONLY | O_CLOEXEC)
    }

    public func fsync() throws(SystemError) {
        _ = try check("fsync") { Glibc.fsync(rawValue) }
    }

    /// Releases an advisory lock taken with `FileSystem.lockExclusive` (closing it also does).
    public func unlock() {
        _ = flock(rawValue, LOCK_UN)
    }

    public func setNonBlocking() throws(SystemError) {
        let flags = try check("fcntl(F_GETFL)") { fcntl(rawValue, F_GETFL) }
        _ = try check("fcntl(F_SETFL)") { fcntl(rawValue, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Marks `fd` (a descriptor a C library opened) closed in programs this process starts.
    public static func setCloseOnExec(_ fd: Int32) throws(SystemError) {
        let flags = try check("fcntl(F_GETFD)") { fcntl(fd, F_GETFD) }
        _ = try check("fcntl(F_SETFD)") { fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
    }

    /// Whether `fd` is closed in programs this process starts.
    public static func closesOnExec(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFD)
        return flags >= 0 && flags & FD_CLOEXEC != 0
    }
}

/// An eventfd: the way other threads wake the event loop.
/// A file opened for positional reads (pread), shareable between closures. Reads through it turn
/// an unreadable sector into an EIO error; a memory map would turn it into SIGBUS.
public final class PositionalFile: Sendable {
    private let descriptor: Int32
    /// The file's size when opened.
    public let size: Int

    public init(readingAt path: String) throws(SystemError) {
        let fd = try check("open", path) { cvigil_open(path, O_RDONLY | O_CLOEXEC, 0) }
        var info = stat()
        if case .failure(let e) = ErrnoCall.negativeFails({ fstat(fd, &info) }) {
            _ = Glibc.close(fd)
            throw SystemError("fstat", path, errno: e)
        }
        descriptor = fd
        size = Int(info.st_size)
    }

    deinit { _ = Glibc.close(descriptor) }

    /// Reads `count` bytes at `offset`; fewer only at the end of the file.
    public func read(count: Int, at offset: Int) throws(SystemError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = ErrnoCall.negativeFails {
                buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            }
            switch read {
            case .success(0): break
            case .success(let n): done += n; continue
            case .failure(.interrupted): continue
            case .failure(let e): throw SystemError("pread", errno: e)
            }
            break
        }
        if done < count { buffer.removeLast(count - done) }
        return buffer
    }
}
