#if canImport(Glibc)
import Glibc
#endif

/// The terminal a person types at, for prompts that must not echo (a password).
public enum Terminal {
    /// Whether `fd` is a terminal (not a pipe or a file: a scripted run).
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// Runs `body` with echo off on the terminal `fd`, and puts the terminal back as it was,
    /// whatever `body` does. On a descriptor that is not a terminal `body` just runs.
    public static func withoutEcho<T>(_ fd: Int32, _ body: () throws -> T) throws -> T {
        guard isTerminal(fd) else { return try body() }
        var saved = termios()
        if case .failure(let e) = ErrnoCall.negativeFails({ tcgetattr(fd, &saved) }) { throw SystemError("tcgetattr", "the terminal", errno: e) }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        if case .failure(let e) = ErrnoCall.negativeFails({ tcsetattr(fd, TCSAFLUSH, &quiet) }) { throw SystemError("tcsetattr", "the terminal", errno: e) }
        defer { _ = tcsetattr(fd, TCSAFLUSH, &saved) }
        return try body()
    }
}
