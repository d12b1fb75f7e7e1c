import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What a notifier gets of the node, and what of a notifier's words reach the node's log.
///
/// Issue 28, finding 8: systemd gives the node ambient CAP_NET_RAW, CAP_NET_ADMIN and
/// CAP_SYS_NICE (board/vigil.service), and a notifier that a config file names inherited them,
/// with the node's whole environment. Here the node runs as systemd would start it: as an
/// unprivileged user with an ambient capability (setpriv), and a notifier records what it got.
@Suite(.serialized) struct NotifierPrivilegeTests {
    @Test func aNotifierStartedByANodeWithAmbientCapabilitiesGetsNoneAndOnlyAMinimalEnvironment() throws {
        let setpriv = try #require(Tool.find("setpriv"), "setpriv (util-linux) is not installed")
        try #require(geteuid() == 0, "setpriv needs root to start the node as another user with capabilities")
        let dir = try Self.boxWithAResident()
        // The notifier writes what it was given, then says "delivered".
        let seen = dir.path + "/notifier-saw"
        let notifier = dir.path + "/notifier"
        try """
        #!/bin/sh
        cat >/dev/null
        { grep '^Cap' /proc/self/status; echo ---; env; } > \(seen).tmp && mv \(seen).tmp \(seen)
        """.write(toFile: notifier, atomically: true, encoding: .utf8)
        let config = dir.path + "/vigil.yaml"
        try """
        notify:
          command: \(notifier)
          retry_base: 1s
        """.write(toFile: config, atomically: true, encoding: .utf8)
        // Everything to nobody, whom the node runs as.
        _ = chmod(dir.path, 0o755)
        _ = chmod(notifier, 0o755)
        let chown = try #require(Tool.find("chown"))
        #expect(try Tool.run(chown, ["-R", "nobody:nogroup", dir.path], input: "").status == 0)

        let node = TestProcess()
        node.executableURL = URL(fileURLWithPath: setpriv)
        node.arguments = ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=+net_admin", "--ambient-caps=+net_admin", "--",
                          CLI.binary, "run", "--config", config, "--data", dir.path, "--time-scale", "60", "--duration", "60s"]
        var environment = ProcessInfo.processInfo.environment
        environment["VIGIL_TEST_NODE_SECRET"] = "not-for-notifiers"
        node.environment = environment
        node.standardOutput = FileHandle.nullDevice
        node.standardError = FileHandle.nullDevice
        try node.run()
        defer { if node.isRunning { kill(node.processIdentifier, SIGKILL) } }
        // The node itself holds the capability (setpriv execs it: same process).
        #expect(eventually(seconds: 10) { Self.capabilities(of: "/proc/\(node.processIdentifier)/status")["CapAmb"] == 1 << 12 },
                "the node runs with ambient CAP_NET_ADMIN (bit 12)")

        // The first "are you OK?" is due about a second in (60x): the notifier runs.
        #expect(eventually(seconds: 30) { FileManager.default.fileExists(atPath: seen) }, "the notifier ran")
        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()
        let text = (try? String(contentsOfFile: seen, encoding: .utf8)) ?? ""
        let parts = text.components(separatedBy: "---\n")
        let caps = Self.capabilities(in: parts.first ?? "")
        #expect(caps["CapAmb"] == 0, "no ambient capabilities: \(text)")
        #expect(caps["CapEff"] == 0, "no effective capabilities: \(text)")
        #expect(caps["CapPrm"] == 0, "no permitted capabilities: \(text)")
        let env = parts.count > 1 ? parts[1] : ""
        #expect(!env.contains("VIGIL_TEST_NODE_SECRET") && !env.contains("not-for-notifiers"), "the node's environment stays with it: \(env)")
        #expect(env.contains("PATH="))
    }

    /// Issue 28, finding 8: the node's log (the journal under systemd) named every recipient
    /// and the whole message text at notice, and a failing notifier's stderr went to it, to the
    /// log's attempt and to the hub as it was. Now, at the default level, numbers are masked.
    @Test func aFailingNotifierLeavesNoResidentsNumberOrMessageInTheNodesLogAboveDebug() throws {
        let dir = try Self.boxWithAResident()
        // A notifier that fails saying who it could not reach, as gammu and curl do.
        let notifier = dir.path + "/notifier"
        try "#!/bin/sh\ncat >/dev/null\necho 'cannot reach +34600000999 (no signal)' >&2\nexit 1\n"
            .write(toFile: notifier, atomically: true, encoding: .utf8)
        _ = chmod(notifier, 0o755)
        let config = dir.path + "/vigil.yaml"
        try "notify:\n  command: \(notifier)\n  retry_base: 1s\n".write(toFile: config, atomically: true, encoding: .utf8)
        let node = TestProcess()
        node.executableURL = URL(fileURLWithPath: CLI.binary)
        node.arguments = ["run", "--config", config, "--data", dir.path, "--time-scale", "60", "--duration", "60s"]
        FileManager.default.createFile(atPath: dir.path + "/node.err", contents: nil)
        node.standardOutput = FileHandle.nullDevice
        node.standardError = FileHandle(forWritingAtPath: dir.path + "/node.err")
        try node.run()
        defer { if node.isRunning { kill(node.processIdentifier, SIGKILL) } }
        func attempts() -> [String] {
            (try? CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "outbox-attempt", "--json"]).lines) ?? []
        }
        #expect(eventually(seconds: 30) { attempts().contains { $0.contains("exit status 1") } }, "the notifier ran and failed")
        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()
        let log = (try? String(contentsOfFile: dir.path + "/node.err", encoding: .utf8)) ?? ""
        #expect(log.contains("outbox message") && log.contains("delivery failed"), "the log still says what happened: \(log.suffix(3000))")
        #expect(!log.contains("600000999") && !log.contains("600 000 999"), "no resident's number: \(log.suffix(3000))")
        #expect(!log.contains("Are you OK"), "no message text: \(log.suffix(3000))")
        #expect(log.contains("+…99"), "the number masked to its last two digits")
        #expect(attempts().allSatisfy { !$0.contains("600000999") }, "nor in the log's attempts (which the hub gets): \(attempts())")
    }

    /// A box with Ana in room 7, asked "are you OK?" every minute (about a second in at 60x), her
    /// number written as people write it.
    static func boxWithAResident() throws -> TemporaryDirectory {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        let add = try CLI.run(["resident", "add", "room-7", "--name", "Ana", "--interval", "1m", "--confirm", "6h",
                               "--contact", "Luis=+34600000000", "--address", "+34 600 000 999", "--data", dir.path])
        #expect(add.status == 0, "\(add.stderr)")
        return dir
    }

    static func capabilities(of path: String) -> [String: UInt64] {
        capabilities(in: (try? String(contentsOfFile: path, encoding: .utf8)) ?? "")
    }

    /// "CapAmb:\t0000000000001000" lines as numbers.
    static func capabilities(in status: String) -> [String: UInt64] {
        var out: [String: UInt64] = [:]
        for line in status.split(separator: "\n") where line.hasPrefix("Cap") {
            let fields = line.split(separator: ":", maxSplits: 1)
            guard fields.count == 2, let value = UInt64(fields[1].trimmingCharacters(in: .whitespaces), radix: 16) else { continue }
            out[String(fields[0])] = value
        }
        return out
    }
}
