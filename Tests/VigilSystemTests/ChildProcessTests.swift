import Foundation
import Testing
import VigilSystem

/// A program the node starts (a notifier named in a config file) gets little of the node.
@Suite struct ChildProcessTests {
    /// Runs `script` with /bin/sh and returns what it wrote to stderr.
    static func run(_ script: String) throws -> String {
        let child = try ChildProcess(path: "/bin/sh", arguments: ["-c", script], input: [])
        var exited = pollfd(fd: child.exitDescriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&exited, 1, 10_000) == 1, "the child ended")
        #expect(child.reap() == 0)
        return child.standardError(limit: 16_384)
    }

    @Test func aChildGetsOnlyThePassedEnvironment() throws {
        setenv("VIGIL_TEST_UNIT_SECRET", "do-not-pass", 1)
        setenv("LANG", "C.UTF-8", 1)
        let environment = try Self.run("env >&2").split(separator: "\n").map(String.init)
        #expect(!environment.contains { $0.contains("VIGIL_TEST_UNIT_SECRET") || $0.contains("do-not-pass") })
        #expect(environment.contains { $0.hasPrefix("PATH=") })
        #expect(environment.contains("LANG=C.UTF-8"))
        let names = Set(environment.compactMap { $0.split(separator: "=", maxSplits: 1).first.map(String.init) })
        // /bin/sh adds PWD (and dash nothing else); everything else came from the list.
        #expect(names.subtracting(ChildProcess.passedEnvironment + ["PWD", "SHLVL", "_", "OLDPWD"]).isEmpty, "\(names)")
    }

    @Test func aChildInheritsNoDescriptorButItsOwnThree() throws {
        // A descriptor opened without O_CLOEXEC, as a C library may open its sockets.
        let leaky = open("/dev/null", O_RDONLY)
        #expect(leaky > 2)
        defer { close(leaky) }
        let listed = try Self.run("ls /proc/$$/fd >&2").split(separator: "\n").compactMap { Int32($0) }
        #expect(!listed.contains(leaky), "\(listed)")
        #expect(Set([0, 1, 2]).isSubset(of: Set(listed)), "\(listed)")
    }

    @Test func aChildStartsWithNoSignalBlockedOrIgnored() throws {
        // The node blocks SIGTERM for its signalfd and the runtime ignores SIGPIPE: a notifier
        // inheriting either would not stop when told to, or its pipelines would not end.
        var term = sigset_t(), before = sigset_t()
        sigemptyset(&term)
        sigaddset(&term, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &term, &before)
        defer { pthread_sigmask(SIG_SETMASK, &before, nil) }
        _ = Glibc.signal(SIGPIPE, SIG_IGN) // as the node and its libraries have it
        let status = try Self.run("grep -E '^Sig(Blk|Ign)' /proc/self/status >&2")
        let masks = Dictionary(uniqueKeysWithValues: status.split(separator: "\n").compactMap { line -> (String, UInt64)? in
            let parts = line.split(separator: "\t")
            guard parts.count == 2, let value = UInt64(parts[1], radix: 16) else { return nil }
            return (String(parts[0]), value)
        })
        #expect(masks["SigBlk:"] == 0, "\(status)")
        // Signal n is bit n - 1. (glibc's own two real-time signals, 32 and 33, are its business.)
        let ignored = try #require(masks["SigIgn:"], "\(status)")
        #expect(ignored & (1 << (UInt64(SIGPIPE) - 1)) == 0 && ignored & (1 << (UInt64(SIGTERM) - 1)) == 0, "\(status)")
    }

    @Test func aChildHasNoAmbientCapabilities() throws {
        let status = try Self.run("grep CapAmb /proc/self/status >&2")
        #expect(status == "CapAmb:\t0000000000000000", "\(status)")
    }
}
