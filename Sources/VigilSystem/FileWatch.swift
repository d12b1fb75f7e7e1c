#if canImport(Glibc)
import Glibc
#endif

/// inotify, so `vigil log tail -f` wakes when the log file changes instead of polling.
public final class FileWatch: Sendable {
    public let fd: Int32
    public init(path: String) throws(SystemError) {
        // Stored only once the watch is on: a class whose properties are all set runs its deinit
        // when its init throws, and closing here as well would close a number that by then may
        // be another thread's descriptor.
        let descriptor = try check("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC)) }
        do {
            _ = try check("inotify_add_watch", path) { inotify_add_watch(descriptor, path, UInt32(IN_MODIFY | IN_CLOSE_WRITE)) }
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
        fd = descriptor
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
        // As in `FileWatch`: stored only once the watch is on, so a failed init closes it once.
        let descriptor = try check("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) }
        do {
            _ = try check("inotify_add_watch", directory) { inotify_add_watch(descriptor, directory, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)) }
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
        fd = descriptor
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
