internal import CVigilLinux
#if canImport(Glibc)
import Glibc
#endif

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
            if case .failure(let e) = ErrnoCall.negativeFails({ mkdir(prefix, mode_t(mode)) }), e != .exists {
                throw SystemError("mkdir", prefix, errno: e)
            }
        }
    }

    public static func remove(_ path: String) { _ = unlink(path) }
    /// Removes `path` if it is there; a file that cannot be removed is an error (EROFS on a card
    /// the kernel stopped writing), unlike `remove`.
    public static func removeIfPresent(_ path: String) throws(SystemError) {
        if case .failure(let e) = ErrnoCall.negativeFails({ unlink(path) }), e != .noEntry {
            throw SystemError("unlink", path, errno: e)
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
        _ = try check("lstat", path) { lstat(path, &st) }
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
    public static func createExclusive(_ path: String, contents: [UInt8], mode: UInt32 = 0o600,
                                       owner: FileOwner? = nil) throws(SystemError) {
        let fd = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_EXCL, mode: mode)
        if let owner, case .failure(let e) = ErrnoCall.negativeFails({ fchown(fd.rawValue, owner.user, owner.group) }) {
            throw SystemError("fchown", path, errno: e)
        }
        // The mode exactly, whatever the umask took from it at creation.
        if case .failure(let e) = ErrnoCall.negativeFails({ fchmod(fd.rawValue, mode_t(mode)) }) { throw SystemError("fchmod", path, errno: e) }
        try fd.writeAll(contents)
        try fd.fsync()
    }

    /// Who owns a file: user and group ids.
    public struct FileOwner: Sendable, Equatable {
        public var user: UInt32
        public var group: UInt32
        public init(user: UInt32, group: UInt32) {
            self.user = user
            self.group = group
        }
    }

    /// The owner and permission bits of `path` (following links), or nil when it does not exist.
    public static func ownerAndMode(_ path: String) -> (owner: FileOwner, mode: UInt32)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (FileOwner(user: info.st_uid, group: info.st_gid), UInt32(info.st_mode) & 0o7777)
    }

    /// Gives `path` (not following a link) to `owner`.
    public static func changeOwner(_ path: String, to owner: FileOwner) throws(SystemError) {
        if case .failure(let e) = ErrnoCall.negativeFails({ lchown(path, owner.user, owner.group) }) { throw SystemError("lchown", path, errno: e) }
    }

    /// The id of the group `name`, or nil when this system has no such group.
    public static func groupID(named name: String) -> UInt32? {
        guard let entry = getgrnam(name) else { return nil }
        return entry.pointee.gr_gid
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
    /// (mode 0600 unless told) and fsynced, renamed into place, then the directory fsynced. A
    /// crash leaves either the old file or the new one, never a torn one. The one way Vigil
    /// replaces a small file (keys, links, credentials, settings it writes itself).
    public static func replaceDurably(_ path: String, contents: [UInt8], mode: UInt32 = 0o600,
                                      owner: FileOwner? = nil) throws(SystemError) {
        let fresh = path + ".new"
        remove(fresh)
        try createExclusive(fresh, contents: contents, mode: mode, owner: owner) // fsynced
        try renameDurably(fresh, over: path)
    }

    /// The second half of `replaceDurably`, for a new file another program wrote (openssl's key
    /// and certificate): fsyncs `fresh`, renames it over `path`, fsyncs the directory.
    public static func moveIntoPlace(_ fresh: String, over path: String) throws(SystemError) {
        let file = try FileDescriptor.open(fresh, flags: O_RDONLY | O_CLOEXEC)
        try file.fsync()
        try renameDurably(fresh, over: path)
    }

    /// Renames a file already durable over `path` and fsyncs the directory, so the new name
    /// survives a power cut.
    private static func renameDurably(_ fresh: String, over path: String) throws(SystemError) {
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

extension FileSystem {
    /// The names in `directory` (not . and ..), at most `limit` of them.
    public static func names(inDirectory directory: String, limit: Int = 100_000) throws(SystemError) -> [String] {
        let dir: OpaquePointer
        switch ErrnoCall.nilFails({ opendir(directory) }) {
        case .success(let opened): dir = opened
        case .failure(let e): throw SystemError("opendir", directory, errno: e)
        }
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
        _ = try check("fstat", path) { fstat(fd, &info) }
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
