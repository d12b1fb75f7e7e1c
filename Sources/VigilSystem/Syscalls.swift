internal import CVigilLinux
#if canImport(Glibc)
import Glibc
#endif

// Every raw syscall Vigil makes is in this file: each retries EINTR where that is correct and
// turns a failure into a typed `SystemError`. Nothing else in the code base reads `errno`.

@inline(__always)
func check<T: BinaryInteger>(_ operation: String, _ subject: String? = nil, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let e = Errno.current
        if e == .interrupted { continue }
        throw SystemError(operation, subject, errno: e)
    }
}

/// The one write-everything loop: calls `step` (write(2), send(2)) until all of `bytes` is out,
/// retrying short writes and EINTR; any other failure (or a write of nothing) is thrown.
func writeAll(_ bytes: UnsafeRawBufferPointer, _ operation: String,
              _ step: (UnsafeRawPointer, Int) -> Int) throws(SystemError) {
    guard let base = bytes.baseAddress else { return }
    var offset = 0
    while offset < bytes.count {
        let n = step(base + offset, bytes.count - offset)
        if n > 0 { offset += n; continue }
        let e = Errno.current
        if n < 0 && e == .interrupted { continue }
        throw SystemError(operation, errno: n < 0 ? e : Errno(rawValue: EIO))
    }
}

func writeAll(_ bytes: [UInt8], _ operation: String, _ step: (UnsafeRawPointer, Int) -> Int) throws(SystemError) {
    // withUnsafeBytes rethrows untyped errors, so carry the typed one out by hand.
    let failure = bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> SystemError? in
        do throws(SystemError) {
            try writeAll(raw, operation, step)
            return nil
        } catch {
            return error
        }
    }
    if let failure { throw failure }
}

/// Writes all of `text` to a descriptor this code does not own (stdout, stderr).
public func writeAll(_ text: String, toDescriptor fd: Int32) throws(SystemError) {
    try writeAll(Array(text.utf8), "write") { Glibc.write(fd, $0, $1) }
}

/// Reads what `fd` (not owned: stdin, say) has, up to `count` bytes: [] at end of file, nil when
/// nothing is waiting (EAGAIN); EINTR is retried.
public func readAvailable(_ fd: Int32, upTo count: Int) throws(SystemError) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: max(count, 1))
    let read = buffer.withUnsafeMutableBytes { bytes in Result { () throws(SystemError) in try readRetrying(fd, into: bytes) } }
    return try read.get().map { Array(buffer.prefix($0)) }
}

/// One read(2): EINTR retried, nil on EAGAIN (a non-blocking descriptor with nothing waiting).
private func readRetrying(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int? {
    while true {
        let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
        if n >= 0 { return n }
        let e = Errno.current
        if e == .interrupted { continue }
        if e == .wouldBlock { return nil }
        throw SystemError("read", errno: e)
    }
}

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
        if fstat(fd, &info) != 0 {
            let e = Errno.current
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
            let n = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n > 0 { done += n; continue }
            if n == 0 { break }
            let e = Errno.current
            if e == .interrupted { continue }
            throw SystemError("pread", errno: e)
        }
        if done < count { buffer.removeLast(count - done) }
        return buffer
    }
}

public final class EventFD: Sendable {
    public let fd: Int32
    public init() throws(SystemError) {
        fd = try check("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
    }
    deinit { _ = Glibc.close(fd) }

    /// Adds one to the counter. Safe from any thread; never blocks (the counter cannot realistically overflow).
    public func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(fd, $0.baseAddress, 8) }
    }

    /// Resets the counter; returns how many signals were pending.
    @discardableResult
    public func drain() -> UInt64 {
        var value: UInt64 = 0
        let n = withUnsafeMutableBytes(of: &value) { Glibc.read(fd, $0.baseAddress, 8) }
        return n == 8 ? value : 0
    }
}

/// A monotonic one-shot timerfd, re-armed by the loop for its next deadline.
public final class TimerFD: Sendable {
    public let fd: Int32
    public init() throws(SystemError) {
        fd = try check("timerfd_create") { timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC)) }
    }
    deinit { _ = Glibc.close(fd) }

    public func arm(afterNanoseconds ns: UInt64) throws(SystemError) {
        _ = try check("timerfd_settime") { cvigil_timerfd_arm_ns(fd, ns) }
    }
    public func disarm() throws(SystemError) {
        _ = try check("timerfd_settime") { cvigil_timerfd_disarm(fd) }
    }
    public func drain() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { Glibc.read(fd, $0.baseAddress, 8) }
    }
}

/// An epoll instance. Tokens are caller-chosen identifiers handed back with readiness.
public final class Epoll: Sendable {
    public let fd: Int32
    public struct Ready: Sendable { public let token: UInt64; public let events: UInt32 }

    public static let readable = UInt32(EPOLLIN.rawValue)
    public static let writable = UInt32(EPOLLOUT.rawValue)
    public static let hangup = UInt32(EPOLLHUP.rawValue) | UInt32(EPOLLERR.rawValue)

    public init() throws(SystemError) {
        fd = try check("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }
    deinit { _ = Glibc.close(fd) }

    public func add(_ watched: Int32, token: UInt64, events: UInt32 = Epoll.readable) throws(SystemError) {
        _ = try check("epoll_ctl(ADD)") { cvigil_epoll_ctl(fd, EPOLL_CTL_ADD, watched, events, token) }
    }
    /// Changes what a watched descriptor is watched for (an MQTT socket's output while it has
    /// bytes queued), keeping its token.
    public func modify(_ watched: Int32, token: UInt64, events: UInt32) throws(SystemError) {
        _ = try check("epoll_ctl(MOD)") { cvigil_epoll_ctl(fd, EPOLL_CTL_MOD, watched, events, token) }
    }
    public func remove(_ watched: Int32) throws(SystemError) {
        _ = try check("epoll_ctl(DEL)") { cvigil_epoll_ctl(fd, EPOLL_CTL_DEL, watched, 0, 0) }
    }

    /// Blocks until at least one descriptor is ready (or `timeoutMilliseconds`, -1 = forever).
    public func wait(timeoutMilliseconds: Int32 = -1) throws(SystemError) -> [Ready] {
        var tokens = [UInt64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        let n = try check("epoll_wait") { cvigil_epoll_wait(fd, &tokens, &events, 64, timeoutMilliseconds) }
        return (0..<Int(n)).map { Ready(token: tokens[$0], events: events[$0]) }
    }
}

/// Small, safe wrappers for file-system calls used by the CLI and the node.
public enum FileSystem {
    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Creates a directory and its parents (like `mkdir -p`).
    public static func createDirectory(_ path: String, mode: UInt32 = 0o750) throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part + "/"
            if mkdir(prefix, mode_t(mode)) != 0 {
                let e = Errno.current
                if e != .exists { throw SystemError("mkdir", prefix, errno: e) }
            }
        }
    }

    public static func remove(_ path: String) { _ = unlink(path) }
    /// Removes `path` if it is there; a file that cannot be removed is an error (EROFS on a card
    /// the kernel stopped writing), unlike `remove`.
    public static func removeIfPresent(_ path: String) throws(SystemError) {
        guard unlink(path) == 0 else {
            let e = Errno.current
            if e != .noEntry { throw SystemError("unlink", path, errno: e) }
            return
        }
    }
    /// Removes an empty directory; does nothing if it is not empty or absent.
    public static func removeEmptyDirectory(_ path: String) { _ = rmdir(path) }

    /// What `path` itself is (lstat: a symbolic link is not followed).
    public struct Entry: Sendable, Equatable {
        public var isDirectory: Bool
        public var isSymbolicLink: Bool
        public var owner: UInt32
        public var mode: UInt32
        /// The file's identity: another file moved into its place has another.
        public var device: UInt64 = 0
        public var inode: UInt64 = 0
        /// Last modification, µs since the epoch.
        public var modifiedMicroseconds: UInt64 = 0
    }

    public static func entry(_ path: String) throws(SystemError) -> Entry {
        var st = stat()
        guard lstat(path, &st) == 0 else { throw SystemError("lstat", path, errno: Errno.current) }
        let type = st.st_mode & S_IFMT
        return Entry(isDirectory: type == S_IFDIR, isSymbolicLink: type == S_IFLNK, owner: st.st_uid, mode: st.st_mode & 0o7777,
                     device: UInt64(st.st_dev), inode: UInt64(st.st_ino),
                     modifiedMicroseconds: UInt64(max(0, st.st_mtim.tv_sec)) &* 1_000_000 &+ UInt64(max(0, st.st_mtim.tv_nsec)) / 1_000)
    }

    /// The uid of the user called `name`, if there is one.
    public static func userID(named name: String) -> UInt32? {
        guard let entry = getpwnam(name) else { return nil }
        return entry.pointee.pw_uid
    }

    /// Creates `path` with `contents` and `mode`, failing if it exists (EEXIST: never overwrites),
    /// and makes it durable. The file is never readable by others, not even for a moment: the
    /// mode is set by open itself. For secrets (keys) that must not be lost or leaked.
    public static func createExclusive(_ path: String, contents: [UInt8], mode: UInt32 = 0o600) throws(SystemError) {
        let fd = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_EXCL, mode: mode)
        try fd.writeAll(contents)
        try fd.fsync()
    }

    /// Makes `path` hold `bytes` of allocated disk space (creating it, mode 0600), so that space
    /// can be handed back later by removing the file. posix_fallocate reserves blocks without
    /// writing them where the file system can (ext4, tmpfs, f2fs); elsewhere glibc writes zeros.
    /// ENOSPC when the file system has not that much room left.
    public static func allocate(_ path: String, bytes: Int) throws(SystemError) {
        let fd = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_CLOEXEC, mode: 0o600)
        let rc = posix_fallocate(fd.rawValue, 0, off_t(bytes))
        guard rc == 0 else { throw SystemError("posix_fallocate", path, errno: Errno(rawValue: rc)) }
        try fd.fsync()
    }

    /// Bytes an unprivileged writer may still allocate on the file system holding `path` (statvfs:
    /// f_bavail × f_frsize), or nil.
    public static func availableBytes(_ path: String) -> Int? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        // 64-bit arithmetic: a 32-bit Pi OS has a 32-bit Int, and a card has more than 2 GiB.
        let bytes = Int64(clamping: UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize)).partialValue)
        return Int(clamping: bytes)
    }

    /// Whether the file system holding `path` is mounted read-only (statvfs ST_RDONLY).
    public static func isOnReadOnlyFileSystem(_ path: String) -> Bool {
        var info = statvfs()
        return statvfs(path, &info) == 0 && (info.f_flag & UInt(ST_RDONLY)) != 0
    }

    /// The size of `path` in bytes (stat: a symbolic link is followed), or nil.
    public static func size(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    /// Makes a rename or a new file in `directory` durable (the directory entry itself).
    public static func syncDirectory(_ directory: String) throws(SystemError) {
        let fd = try FileDescriptor.open(directory, flags: O_RDONLY | O_DIRECTORY)
        try fd.fsync()
    }

    /// Replaces `path` with `contents`, whole or not at all, and durably: written to `path.new`
    /// (mode 0600) and fsynced, renamed into place, then the directory fsynced. A crash leaves
    /// either the old file or the new one, never a torn one.
    public static func replaceDurably(_ path: String, contents: [UInt8]) throws(SystemError) {
        let fresh = path + ".new"
        remove(fresh)
        try createExclusive(fresh, contents: contents)
        try rename(fresh, to: path)
        let slash = path.lastIndex(of: "/")
        try syncDirectory(slash.map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? ".")
    }

    /// The file's permission bits, or nil if it cannot be examined.
    public static func permissions(_ path: String) -> UInt32? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt32(info.st_mode) & 0o777
    }

    /// Renames atomically (replacing `to`); used for rotating capture files.
    public static func rename(_ from: String, to: String) throws(SystemError) {
        _ = try check("rename", "\(from) -> \(to)") { Glibc.rename(from, to) }
    }

    /// The absolute path with symlinks resolved; the path itself when it cannot be resolved.
    public static func canonicalPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Runs `body` holding the exclusive lock on `path`; fails with EWOULDBLOCK if another holds it.
    public static func withExclusiveLock<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let fd = try lockExclusive(path)
        defer { fd.unlock() }
        return try body()
    }

    /// Takes an exclusive advisory lock on `path`, or fails with EWOULDBLOCK if another process holds it.
    public static func lockExclusive(_ path: String) throws(SystemError) -> FileDescriptor {
        // On a read-only file system the file is opened for reading: flock needs no write access.
        let writable = access(path, F_OK) != 0 || access(path, W_OK) == 0
        let fd = try FileDescriptor.open(path, flags: writable ? O_RDWR | O_CREAT : O_RDONLY, mode: 0o640)
        _ = try check("flock", path) { flock(fd.rawValue, LOCK_EX | LOCK_NB) }
        return fd
    }
}

/// Makes writes to a closed pipe or socket fail with EPIPE instead of killing the process.
/// Called once at start by the node and the CLI.
public func ignoreBrokenPipes() { cvigil_ignore_sigpipe() }
/// A write past a file-size limit (RLIMIT_FSIZE) fails with EFBIG instead of killing the process:
/// for the node that is a write failure like any other, handled, not a crash.
public func ignoreFileSizeSignal() { cvigil_ignore_sigxfsz() }

/// For a command reading a file through a memory map (LMDB): a damaged page (SIGSEGV) or an
/// unreadable sector (SIGBUS) ends the process with `message` on stderr and `status`, instead of
/// a crash. Not for the node: its crashes keep their backtraces, and its next start checks the log.
public func exitOnMemoryFault(message: String, status: Int32) {
    // Kept for the process's life: the handler reads it.
    let text = strdup(message)
    _ = cvigil_exit_on_memory_fault(text, status)
}

/// The calling thread's scheduling weight: Linux schedules each thread by its own nice value, so
/// the threads that keep residents safe (the loop, the log's writer) can come before the page's
/// and the hub sync's on a busy box. Raising it (a negative value) needs CAP_SYS_NICE; without
/// it the call fails with EPERM (EACCES) and the thread keeps its weight. The thread is marked
/// reset-on-fork in the same call: processes and threads it creates start at nice 0.
public func setThreadNice(_ nice: Int32) throws(SystemError) {
    _ = try check("sched_setattr(thread, nice \(nice), reset on fork)") { cvigil_set_thread_nice(nice) }
}

/// A secret (an enrolment token, a database URL with its password) read from a file or from
/// standard input (`-`), never from a command line: `/proc/PID/cmdline` and `ps` show every
/// process's arguments to every user of the machine.
public enum SecretInput {
    /// The first line of `source` (a path, or `-` for standard input), without surrounding
    /// white space; at most `maxBytes` are read. Empty, or unreadable, is an error that names
    /// `what`.
    public static func read(_ source: String, what: String, maxBytes: Int = 4096) throws(SystemError) -> String {
        let bytes: [UInt8]
        if source == "-" {
            bytes = try readUpTo(STDIN_FILENO, maxBytes, subject: "standard input")
        } else {
            let file = try FileDescriptor.open(source, flags: O_RDONLY | O_CLOEXEC)
            bytes = try readUpTo(file.rawValue, maxBytes, subject: source)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let trimmed = String(line.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        guard !trimmed.isEmpty else { throw SystemError("read \(what)", source == "-" ? "standard input" : source, errno: .invalid) }
        return trimmed
    }

    /// Up to `maxBytes`, to the first newline (a token pasted at a terminal ends with Enter, not
    /// Ctrl-D), or to the end of the file; a descriptor with nothing waiting (EAGAIN) ends the
    /// read too.
    private static func readUpTo(_ fd: Int32, _ maxBytes: Int, subject: String) throws(SystemError) -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < maxBytes {
            let chunk: [UInt8]?
            do {
                chunk = try readAvailable(fd, upTo: min(1024, maxBytes - bytes.count))
            } catch {
                throw SystemError("read", subject, errno: error.errno)
            }
            guard let chunk, !chunk.isEmpty else { break }
            bytes += chunk
            if chunk.contains(UInt8(ascii: "\n")) { break }
        }
        return bytes
    }
}

/// The descriptors a process may hold (RLIMIT_NOFILE).
public enum DescriptorLimit {
    /// Raises the soft limit to the hard one (an unprivileged process may) and returns the soft
    /// limit in force. A server sizes its connection caps from it, keeping a reserve for what
    /// must never fail for want of a descriptor: the log, the control socket, a notifier's pipes,
    /// GATT. systemd starts services at 1024 unless the unit says otherwise (`LimitNOFILE`).
    public static func raiseToHard() throws(SystemError) -> Int {
        var limit = rlimit()
        _ = try check("getrlimit(RLIMIT_NOFILE)") { getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            // Refused only where the hard limit moved meanwhile: the soft one stays as it was.
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        // RLIM_INFINITY is not a count; no server needs more than this many.
        return Int(min(limit.rlim_cur, 1 << 20))
    }
}

/// Monotonic nanoseconds, for measuring intervals (never for event times).
public func monotonicNanoseconds() -> UInt64 { cvigil_monotonic_ns() }

/// Wall-clock microseconds since the Unix epoch.
public func realtimeMicroseconds() -> UInt64 { cvigil_realtime_us() }

/// The process's effective user id.
public func effectiveUserID() -> UInt32 { geteuid() }

/// The running kernel's release (`uname -r`), nil if uname fails.
public func kernelRelease() -> String? {
    var names = utsname()
    guard uname(&names) == 0 else { return nil }
    return withUnsafeBytes(of: &names.release) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
}

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
            let raw = cvigil_accept(listener.rawValue)
            if raw >= 0 { return FileDescriptor(adopting: raw) }
            let e = Errno.current
            if e == .interrupted { continue }
            if e == .wouldBlock { return nil }
            throw SystemError("accept", errno: e)
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
            let sent = name.withUnsafeBufferPointer { n in
                bytes.withUnsafeBytes { b in
                    n.withMemoryRebound(to: CChar.self) { cvigil_unix_sendto(descriptor, $0.baseAddress, n.count, b.baseAddress, b.count) }
                }
            }
            if sent >= 0 { return }
            let e = Errno.current
            if e == .interrupted { continue }
            throw SystemError("sendto", path, errno: e)
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
            let ready = poll(&poller, 1, timeoutMilliseconds)
            if ready == 0 { return nil }
            if ready < 0 {
                if Errno.current == .interrupted { continue }
                throw SystemError("poll", errno: Errno.current)
            }
            var buffer = [UInt8](repeating: 0, count: maxBytes)
            let n = buffer.withUnsafeMutableBytes { recv(socket.rawValue, $0.baseAddress, $0.count, 0) }
            if n >= 0 { return Array(buffer[..<n]) }
            let e = Errno.current
            if e == .interrupted || e == .wouldBlock { continue }
            throw SystemError("recv", errno: e)
        }
    }
}

/// inotify, so `vigil log tail -f` wakes when the log file changes instead of polling.
public final class FileWatch: Sendable {
    public let fd: Int32
    public init(path: String) throws(SystemError) {
        fd = try check("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC)) }
        do {
            _ = try check("inotify_add_watch", path) { inotify_add_watch(fd, path, UInt32(IN_MODIFY | IN_CLOSE_WRITE)) }
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
    }
    deinit { _ = Glibc.close(fd) }

    /// Blocks until the file changes or `timeoutMilliseconds` pass (-1: forever). True on change.
    public func wait(timeoutMilliseconds: Int32) throws(SystemError) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let n = try check("poll") { poll(&p, 1, timeoutMilliseconds) }
        guard n > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 4096)
        _ = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        return true
    }
}

/// inotify on one directory for files that arrive whole: closed after writing, or moved in
/// (gammu-smsd's inbox). Non-blocking, for the event loop to watch `fd`; `drain` hands over the
/// names that arrived, at most 64 KiB of events a call.
public final class DirectoryWatch: Sendable {
    public let fd: Int32
    public init(directory: String) throws(SystemError) {
        fd = try check("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) }
        do {
            _ = try check("inotify_add_watch", directory) { inotify_add_watch(fd, directory, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)) }
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
    }
    deinit { _ = Glibc.close(fd) }

    /// The names of files that arrived since the last call, and whether the kernel's queue
    /// overflowed (events were lost: the caller lists the directory again).
    public func drain() throws(SystemError) -> (names: [String], overflowed: Bool) {
        var names: [String] = []
        var overflowed = false
        let header = MemoryLayout<inotify_event>.size
        for _ in 0..<16 {
            guard let bytes = try readAvailable(fd, upTo: 65_536), !bytes.isEmpty else { break }
            var offset = 0
            while offset + header <= bytes.count {
                let mask = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
                let length = Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
                let start = offset + header
                guard length <= bytes.count - start else { break }
                if mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true }
                let name = bytes[start..<(start + length)].prefix { $0 != 0 }
                if !name.isEmpty { names.append(String(decoding: name, as: UTF8.self)) }
                offset = start + length
            }
        }
        return (names, overflowed)
    }
}

extension FileSystem {
    /// The names in `directory` (not . and ..), at most `limit` of them.
    public static func names(inDirectory directory: String, limit: Int = 100_000) throws(SystemError) -> [String] {
        guard let dir = opendir(directory) else { throw SystemError("opendir", directory, errno: Errno.current) }
        defer { closedir(dir) }
        var names: [String] = []
        while names.count < limit, let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// At most `limit` bytes of the file at `path` (refusing a larger one rather than cutting it),
    /// read without following a last-component symlink.
    public static func readSmallFile(_ path: String, limit: Int) throws(SystemError) -> [UInt8] {
        let fd = try check("open", path) { cvigil_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0) }
        defer { _ = Glibc.close(fd) }
        var info = stat()
        if fstat(fd, &info) != 0 { throw SystemError("fstat", path, errno: Errno.current) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw SystemError("open", path, errno: Errno(rawValue: EINVAL)) }
        guard info.st_size <= limit else { throw SystemError("read", path, errno: Errno(rawValue: EFBIG)) }
        var out: [UInt8] = []
        while out.count <= limit {
            guard let chunk = try readAvailable(fd, upTo: limit + 1 - out.count), !chunk.isEmpty else { break }
            out += chunk
        }
        guard out.count <= limit else { throw SystemError("read", path, errno: Errno(rawValue: EFBIG)) }
        return out
    }
}

/// Random bytes from the kernel (getrandom), for node ids and alert ids.
public func secureRandomUInt64() -> UInt64 {
    var generator = SystemRandomNumberGenerator()
    return generator.next()
}

/// A child process whose exit the event loop learns from a pidfd (readable on exit): no SIGCHLD
/// handler, no thread blocked in waitpid.
/// Runs a program to completion, blocking the calling thread (not for the event loop: for setup
/// commands such as the hub's `initdb` and `pg_ctl`). Its stdin is /dev/null; its stdout and
/// stderr go to `outputPath` (a file, not a pipe: a daemon the program starts keeps a pipe open
/// for ever); it runs in "/" (as another user it may not reach the caller's directory). Waits for this process only, never for what it left running. Returns the exit
/// status (or 128 + the signal that killed it).
///
/// `timeoutMilliseconds`: past it the program is killed (SIGKILL) and the status is 128 + 9; the
/// wait is on the child's pidfd, not a sleep.
public func runToCompletion(path: String, arguments: [String], outputPath: String,
                            timeoutMilliseconds: Int32? = nil) throws(SystemError) -> Int32 {
    let output = try check("open", outputPath) { Glibc.open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
    defer { _ = Glibc.close(output) }
    let input = try check("open", "/dev/null") { Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC) }
    defer { _ = Glibc.close(input) }
    var child: pid_t = 0
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    let rc = argv.withUnsafeBufferPointer { cvigil_spawn_io(&child, path, $0.baseAddress, input, output) }
    guard rc == 0 else { throw SystemError("spawn", path, errno: Errno(rawValue: rc)) }
    if let timeoutMilliseconds {
        let exited = cvigil_pidfd_open(child)
        if exited >= 0 {
            var watched = pollfd(fd: exited, events: Int16(POLLIN), revents: 0)
            var ready: Int32
            let deadline = cvigil_monotonic_ns() &+ UInt64(max(0, timeoutMilliseconds)) * 1_000_000
            repeat {
                // After an interruption, only what is left of the limit.
                let now = cvigil_monotonic_ns()
                let left = deadline > now ? Int32(min((deadline - now) / 1_000_000, UInt64(Int32.max))) : 0
                ready = poll(&watched, 1, left)
            } while ready < 0 && Errno.current == .interrupted
            _ = Glibc.close(exited)
            if ready == 0 { _ = Glibc.kill(child, SIGKILL) }
        }
    }
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 {
        let e = Errno.current
        guard e.rawValue == EINTR else { throw SystemError("waitpid", path, errno: e) }
    }
    let signal = status & 0x7F
    return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
}

/// A program the node starts (a notifier, `vigil log check`): a process group of its own, none
/// of the node's descriptors, only `passedEnvironment` of its environment, and none of its
/// ambient capabilities (systemd gives the node CAP_NET_ADMIN, CAP_NET_RAW and CAP_SYS_NICE; a
/// notifier that a config file names must not get them). `runToCompletion` (the start's own
/// `vigil log check` and salvage, the node's own binary) keeps the environment. The inheritable
/// set is kept: a program with file-inheritable capabilities could still gain them.
public final class ChildProcess: @unchecked Sendable {
    /// What a child gets of the node's environment: where programs are, the locale and time
    /// zone, the home directory (curl and Gammu read their files there), and the proxy to reach
    /// a webhook through. Anything else (a token a unit file set, say) stays with the node.
    public static let passedEnvironment = ["PATH", "HOME", "LANG", "LC_ALL", "TZ",
                                           "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"]
    static let defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    /// `NAME=value` for each passed variable the node has (PATH always).
    public static func environment() -> [String] {
        var out: [String] = []
        for name in passedEnvironment {
            if let value = getenv(name) { out.append(name + "=" + String(cString: value)) } else if name == "PATH" { out.append("PATH=" + defaultPath) }
        }
        return out
    }

    public let pid: Int32
    /// Readable when the process has exited.
    public let exitDescriptor: Int32
    /// The read end of the child's stderr (non-blocking), for error messages.
    public let stderrDescriptor: Int32
    private var reaped = false

    /// Starts `path` with `arguments`, writing `input` to its stdin (then closing it).
    /// `input` must fit in a pipe buffer (64 KiB); outbox messages are far smaller.
    public init(path: String, arguments: [String], input: [UInt8]) throws(SystemError) {
        var stdinPipe: [Int32] = [0, 0]
        var stderrPipe: [Int32] = [0, 0]
        _ = try check("pipe2") { cvigil_pipe2(&stdinPipe, O_CLOEXEC) }
        do throws(SystemError) {
            // Only our read end is non-blocking: the child's stderr must block as usual, or a
            // chatty program could fail mid-message and be retried (sending twice).
            _ = try check("pipe2") { cvigil_pipe2(&stderrPipe, O_CLOEXEC) }
            let flags = try check("fcntl(F_GETFL)") { fcntl(stderrPipe[0], F_GETFL) }
            _ = try check("fcntl(F_SETFL)") { fcntl(stderrPipe[0], F_SETFL, flags | O_NONBLOCK) }
            // Our write end of stdin must never block the loop: the message fits in the pipe.
            let inFlags = try check("fcntl(F_GETFL)") { fcntl(stdinPipe[1], F_GETFL) }
            _ = try check("fcntl(F_SETFL)") { fcntl(stdinPipe[1], F_SETFL, inFlags | O_NONBLOCK) }
        } catch {
            _ = Glibc.close(stdinPipe[0]); _ = Glibc.close(stdinPipe[1])
            throw error
        }
        defer {
            _ = Glibc.close(stdinPipe[0])
            _ = Glibc.close(stderrPipe[1])
        }
        guard input.count <= 65_536 else {
            _ = Glibc.close(stdinPipe[1]); _ = Glibc.close(stderrPipe[0])
            throw SystemError("spawn", path, errno: Errno(rawValue: E2BIG))
        }
        var child: pid_t = 0
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = Self.environment().map { strdup($0) } + [nil]
        defer {
            for a in argv { free(a) }
            for e in envp { free(e) }
        }
        let rc = argv.withUnsafeBufferPointer { a in
            envp.withUnsafeBufferPointer { e in cvigil_spawn(&child, path, a.baseAddress, e.baseAddress, stdinPipe[0], stderrPipe[1]) }
        }
        guard rc == 0 else {
            _ = Glibc.close(stdinPipe[1]); _ = Glibc.close(stderrPipe[0])
            throw SystemError("spawn", path, errno: Errno(rawValue: rc))
        }
        pid = child
        stderrDescriptor = stderrPipe[0]
        let writer = FileDescriptor(adopting: stdinPipe[1])
        try? writer.writeAll(input) // a program that ignores stdin may close it early: not an error
        let fd = cvigil_pidfd_open(child)
        if fd < 0 {
            let e = Errno.current
            _ = Glibc.kill(child, SIGKILL)
            _ = waitpid(child, nil, 0)
            _ = Glibc.close(stderrPipe[0])
            throw SystemError("pidfd_open", path, errno: e)
        }
        exitDescriptor = fd
    }

    deinit {
        if !reaped {
            _ = Glibc.kill(-pid, SIGKILL)
            _ = waitpid(pid, nil, 0)
        }
        _ = Glibc.close(exitDescriptor)
        _ = Glibc.close(stderrDescriptor)
    }

    /// Kills the program and everything in its process group (for timeouts).
    public func kill() { _ = Glibc.kill(-pid, SIGKILL) }

    /// Reaps the child once `exitDescriptor` is readable. Returns the exit status (or 128 + the
    /// signal that killed it), or nil if it has not exited yet.
    public func reap() -> Int32? {
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return nil }
        reaped = true
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// What the program wrote to stderr (up to `limit` bytes), read without blocking.
    public func standardError(limit: Int = 2_048) -> String {
        var buffer = [UInt8](repeating: 0, count: limit)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(stderrDescriptor, $0.baseAddress, $0.count) }
        guard n > 0 else { return "" }
        var text = String(decoding: buffer[..<n], as: UTF8.self)
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}
