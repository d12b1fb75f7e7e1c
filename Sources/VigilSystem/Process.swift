internal import CVigilLinux
#if canImport(Glibc)
import Glibc
#endif

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
            var ready: Result<Int32, Errno>
            let deadline = cvigil_monotonic_ns() &+ UInt64(max(0, timeoutMilliseconds)) * 1_000_000
            repeat {
                // After an interruption, only what is left of the limit.
                let now = cvigil_monotonic_ns()
                let left = deadline > now ? Int32(min((deadline - now) / 1_000_000, UInt64(Int32.max))) : 0
                ready = ErrnoCall.negativeFails { poll(&watched, 1, left) }
            } while ready == .failure(.interrupted)
            _ = Glibc.close(exited)
            if ready == .success(0) { _ = Glibc.kill(child, SIGKILL) }
        }
    }
    var status: Int32 = 0
    _ = try check("waitpid", path) { waitpid(child, &status, 0) }
    let signal = status & 0x7F
    return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
}

/// Starts a program beside this process and returns its pid; the caller waits for it. Its
/// standard descriptors are `input`, `output` and `error` (-1: /dev/null; 0, 1, 2 in their own
/// place: this process's), and it gets no other descriptor of this process's, close-on-exec or
/// not; it runs in `directory` (nil: this one), in a process group of its own, with
/// `environment` (`NAME=value`; nil: this process's).
///
/// Foundation's `Process` on Linux closes in the child only the descriptors it saw open before
/// it spawned: a socket another thread opened meanwhile (libmosquitto opens its broker
/// connection without SOCK_CLOEXEC) goes with the child. The tests start their programs here.
public func spawnProgram(path: String, arguments: [String], environment: [String]?,
                         input: Int32, output: Int32, error: Int32, directory: String?) throws(SystemError) -> Int32 {
    var child: pid_t = 0
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { $0.map { strdup($0) } + [nil] }
    defer {
        for a in argv { free(a) }
        for e in envp ?? [] { free(e) }
    }
    let rc = argv.withUnsafeBufferPointer { a in
        if let envp {
            return envp.withUnsafeBufferPointer { e in cvigil_spawn_program(&child, path, a.baseAddress, e.baseAddress, input, output, error, directory) }
        }
        return cvigil_spawn_program(&child, path, a.baseAddress, nil, input, output, error, directory)
    }
    guard rc == 0 else { throw SystemError("spawn", path, errno: Errno(rawValue: rc)) }
    return child
}

/// A program the node starts (a notifier, `vigil log check`): a process group of its own, none
/// of the node's descriptors, only `passedEnvironment` of its environment, and none of its
/// ambient capabilities (systemd gives the node CAP_NET_ADMIN, CAP_NET_RAW and CAP_SYS_NICE; a
/// notifier that a config file names must not get them). `runToCompletion` (the start's own
/// `vigil log check` and salvage, the node's own binary) keeps the environment. The inheritable
/// set is kept: a program with file-inheritable capabilities could still gain them.
///
/// The event loop learns of its exit from a pidfd (readable on exit): no SIGCHLD handler, no
/// thread blocked in waitpid.
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
        switch ErrnoCall.negativeFails({ cvigil_pidfd_open(child) }) {
        case .success(let fd):
            exitDescriptor = fd
        case .failure(let e):
            _ = Glibc.kill(child, SIGKILL)
            _ = waitpid(child, nil, 0)
            _ = Glibc.close(stderrPipe[0])
            throw SystemError("pidfd_open", path, errno: e)
        }
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
