internal import CVigilLinux
#if canImport(Glibc)
import Glibc
#endif

// The one reader of errno. Every wrapper of a C call, in this target (file descriptors, the file
// system, sockets, processes) and in the targets that wrap a C library of their own (libgpiod,
// libmosquitto, the Bluetooth sockets), goes through `check` or `ErrnoCall`, which read errno
// right after the call fails, before anything else can overwrite it. The compiler holds it:
// `Errno.afterFailure` is private to this file.

/// One C call that reports failure through errno, and the errno it left when it failed.
///
/// A failure that left errno 0 (a failed allocation inside a library may) is reported as EIO,
/// so an error never reads "Success". EINTR is returned like any errno: retrying is the caller's
/// decision (`check` retries).
public enum ErrnoCall {
    /// `body`'s result, or the errno it left when it returned a negative number (most of libc,
    /// libgpiod, the Bluetooth shims).
    @inline(__always)
    public static func negativeFails<T: BinaryInteger>(_ body: () -> T) -> Result<T, Errno> {
        run(body, failedWhen: { $0 < 0 })
    }

    /// `body`'s result, or the errno it left when it returned nil (a C pointer).
    @inline(__always)
    public static func nilFails<T>(_ body: () -> T?) -> Result<T, Errno> {
        if let value = body() { return .success(value) }
        return .failure(.afterFailure)
    }

    /// `body`'s result, or the errno it left when `failed` says the result is a failure (a
    /// library's own error code that may mean "see errno").
    @inline(__always)
    public static func run<T>(_ body: () -> T, failedWhen failed: (T) -> Bool) -> Result<T, Errno> {
        let value = body()
        return failed(value) ? .failure(.afterFailure) : .success(value)
    }
}

extension Errno {
    /// The calling thread's errno after a failed call; EIO when the call left none.
    fileprivate static var afterFailure: Errno {
        let value = cvigil_errno()
        return Errno(rawValue: value == 0 ? EIO : value)
    }
}

@inline(__always)
func check<T: BinaryInteger>(_ operation: String, _ subject: String? = nil, _ body: () -> T) throws(SystemError) -> T {
    while true {
        switch ErrnoCall.negativeFails(body) {
        case .success(let result): return result
        case .failure(.interrupted): continue
        case .failure(let e): throw SystemError(operation, subject, errno: e)
        }
    }
}

/// The one write-everything loop: calls `step` (write(2), send(2)) until all of `bytes` is out,
/// retrying short writes and EINTR; any other failure (or a write of nothing) is thrown.
func writeAll(_ bytes: UnsafeRawBufferPointer, _ operation: String,
              _ step: (UnsafeRawPointer, Int) -> Int) throws(SystemError) {
    guard let base = bytes.baseAddress else { return }
    var offset = 0
    while offset < bytes.count {
        switch ErrnoCall.negativeFails({ step(base + offset, bytes.count - offset) }) {
        case .success(0): throw SystemError(operation, errno: .io) // a write of nothing: it would never end
        case .success(let n): offset += n
        case .failure(.interrupted): continue
        case .failure(let e): throw SystemError(operation, errno: e)
        }
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
func readRetrying(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int? {
    while true {
        switch ErrnoCall.negativeFails({ Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
        case .success(let n): return n
        case .failure(.interrupted): continue
        case .failure(.wouldBlock): return nil
        case .failure(let e): throw SystemError("read", errno: e)
        }
    }
}
