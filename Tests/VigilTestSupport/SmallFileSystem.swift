import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A tmpfs of a few megabytes, mounted in a temporary directory for one test.
public enum SmallFileSystem {
    public static let canMount: Bool = {
        guard getuid() == 0 else { return false }
        let probe = NSTemporaryDirectory() + "vigil-mount-probe-\(getpid())"
        guard mkdir(probe, 0o700) == 0 else { return false }
        defer { rmdir(probe) }
        guard Glibc.mount("tmpfs", probe, "tmpfs", 0, "size=1m") == 0 else { return false }
        umount2(probe, Int32(MNT_DETACH))
        return true
    }()

    public static func withMounted<T>(megabytes: Int, _ body: (String) async throws -> T) async throws -> T {
        let path = try mount(megabytes: megabytes)
        defer { unmount(path) }
        return try await body(path)
    }

    /// The same, for a synchronous body.
    public static func withMounted<T>(megabytes: Int, _ body: (String) throws -> T) throws -> T {
        let path = try mount(megabytes: megabytes)
        defer { unmount(path) }
        return try body(path)
    }

    /// A fresh directory with a tmpfs of `megabytes` mounted on it.
    private static func mount(megabytes: Int) throws -> String {
        let path = NSTemporaryDirectory() + "vigil-small-fs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        guard Glibc.mount("tmpfs", path, "tmpfs", 0, "size=\(megabytes)m") == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM)
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        return path
    }

    private static func unmount(_ path: String) {
        umount2(path, Int32(MNT_DETACH))
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Remounts the tmpfs at `path` read-only, as the kernel does to a card after an I/O error.
    public static func makeReadOnly(_ path: String) throws {
        guard Glibc.mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), nil) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM)
        }
    }

    /// Writes zeros to `path` until the file system has no room left, then frees `leaving` bytes.
    public static func fill(_ path: String, leaving: Int = 0) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 { break }
        }
        if leaving > 0 {
            var info = stat()
            guard fstat(fd, &info) == 0, ftruncate(fd, max(0, info.st_size - off_t(leaving))) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        }
    }
}
