#if canImport(Glibc)
import Glibc
#endif

/// A POSIX error number, as returned by a failed system call.
///
/// Only `Syscalls.swift` reads the global errno (`check`, `ErrnoCall`); everything else gets
/// this type from them.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let noEntry = Errno(rawValue: ENOENT)
    public static let exists = Errno(rawValue: EEXIST)
    public static let accessDenied = Errno(rawValue: EACCES)
    public static let busy = Errno(rawValue: EBUSY)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let invalid = Errno(rawValue: EINVAL)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let io = Errno(rawValue: EIO)
    public static let readOnlyFileSystem = Errno(rawValue: EROFS)
    public static let badDescriptor = Errno(rawValue: EBADF)
    public static let inProgress = Errno(rawValue: EINPROGRESS)

    public var description: String {
        guard let message = strerror(rawValue) else { return "errno \(rawValue)" }
        return "\(String(cString: message)) (errno \(rawValue))"
    }
}

/// An errno together with the operation and object it concerns, for messages a volunteer can act on.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    public let operation: String
    public let subject: String?
    public let errno: Errno

    public init(_ operation: String, _ subject: String? = nil, errno: Errno) {
        self.operation = operation
        self.subject = subject
        self.errno = errno
    }

    public var description: String {
        if let subject { return "\(operation) \(subject): \(errno)" }
        return "\(operation): \(errno)"
    }
}
