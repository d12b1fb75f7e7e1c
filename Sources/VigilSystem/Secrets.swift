#if canImport(Glibc)
import Glibc
#endif

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

/// Random bytes from the kernel (getrandom), for node ids and alert ids.
public func secureRandomUInt64() -> UInt64 {
    var generator = SystemRandomNumberGenerator()
    return generator.next()
}
