import Foundation
import Testing
import VigilSystem
#if canImport(Glibc)
import Glibc
#endif

/// `vigil run` under a service manager (issue 13, item 6), against a socket that speaks systemd's
/// notification protocol (this machine runs no systemd): the test binds NOTIFY_SOCKET as systemd
/// does, hands the node WATCHDOG_USEC, and listens.
@Suite struct ServiceManagerCLITests {
    static func message(_ listener: borrowing FileDescriptor, within milliseconds: Int32) throws -> String? {
        try UnixDatagram.receive(listener, timeoutMilliseconds: milliseconds).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: [false, true])
    func readyThenWatchdogPingsFromTheLoopThatStopWhenItIsStoppedAndStoppingAtTheEnd(abstract: Bool) throws {
        let dir = TemporaryDirectory()
        // An abstract name, as systemd gives, or a path.
        // (A socket's path must fit 108 bytes: the test directory's name is too long for one.)
        let unique = "vigil-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let name = abstract ? "@" + unique : "/tmp/\(unique).sock"
        defer { if !abstract { unlink(name) } }
        let listener = try UnixDatagram.bind(path: name)
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["run", "--data", dir.path + "/data", "--duration", "60s"]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = name
        environment["WATCHDOG_USEC"] = "1000000" // WatchdogSec=1s: a ping every 500 ms
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        defer {
            if process.isRunning { kill(pid, SIGCONT); kill(pid, SIGKILL); process.waitUntilExit() }
        }

        let ready = try Self.message(listener, within: 20_000)
        #expect(ready?.split(separator: "\n").first == "READY=1", "\(ready ?? "nothing")")
        #expect(ready?.contains("STATUS=running") == true)
        // Pings at half the watchdog's interval: five, none more than WatchdogSec apart.
        var pings = 0
        while pings < 5, let m = try Self.message(listener, within: 1_000) {
            if m.contains("WATCHDOG=1") { pings += 1 }
        }
        #expect(pings == 5, "a ping within every WatchdogSec")

        // The loop stopped (SIGSTOP): whoever listens hears no ping for WatchdogSec and more.
        kill(pid, SIGSTOP)
        _ = try Self.message(listener, within: 50) // one already on its way
        let whileStopped = try Self.message(listener, within: 2_000)
        #expect(whileStopped == nil, "a stopped loop sends nothing: \(whileStopped ?? "")")
        kill(pid, SIGCONT)
        let resumed = try Self.message(listener, within: 2_000)
        #expect(resumed?.contains("WATCHDOG=1") == true)

        kill(pid, SIGTERM)
        var stopping = false
        while !stopping, let m = try Self.message(listener, within: 10_000) {
            stopping = m.split(separator: "\n").contains("STOPPING=1")
        }
        #expect(stopping)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func withoutAWatchdogOnlyReadyAndStatusAreSent() throws {
        let dir = TemporaryDirectory()
        let path = "/tmp/vigil-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let listener = try UnixDatagram.bind(path: path)
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["run", "--data", dir.path + "/data", "--duration", "1500ms"]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = path
        environment.removeValue(forKey: "WATCHDOG_USEC")
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var messages: [String] = []
        while let m = try Self.message(listener, within: 20_000) {
            messages.append(m)
            if m.contains("STOPPING=1") { break }
        }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(messages.first?.hasPrefix("READY=1") == true)
        #expect(messages.last?.hasPrefix("STOPPING=1") == true)
        #expect(!messages.contains { $0.contains("WATCHDOG=1") })
    }
}
