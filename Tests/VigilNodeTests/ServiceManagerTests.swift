import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilSystem
@testable import VigilNode

/// The service manager's settings and the node's status line (issue 13, item 6); the protocol
/// itself, end to end with a real `vigil run`, is in VigilCLITests.ServiceManagerCLITests.
@Suite struct ServiceManagerTests {
    @Test func theEnvironmentGivesTheSocketAndAWatchdogMeantForThisProcessOnly() {
        #expect(ServiceManagerSettings.from(environment: [:], pid: 7) == nil)
        #expect(ServiceManagerSettings.from(environment: ["NOTIFY_SOCKET": ""], pid: 7) == nil)
        let plain = ServiceManagerSettings.from(environment: ["NOTIFY_SOCKET": "@sd"], pid: 7)
        #expect(plain == ServiceManagerSettings(socketPath: "@sd", watchdogMicroseconds: 0))
        let ours = ServiceManagerSettings.from(environment: ["NOTIFY_SOCKET": "/run/s", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"], pid: 7)
        #expect(ours?.watchdogMicroseconds == 30_000_000)
        let anyPid = ServiceManagerSettings.from(environment: ["NOTIFY_SOCKET": "/run/s", "WATCHDOG_USEC": "30000000"], pid: 7)
        #expect(anyPid?.watchdogMicroseconds == 30_000_000)
        let theirs = ServiceManagerSettings.from(environment: ["NOTIFY_SOCKET": "/run/s", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"], pid: 7)
        #expect(theirs?.watchdogMicroseconds == 0, "a watchdog for another process is not ours to ping")
        let garbage = ServiceManagerSettings.from(environment: ["NOTIFY_SOCKET": "/run/s", "WATCHDOG_USEC": "soon"], pid: 7)
        #expect(garbage?.watchdogMicroseconds == 0)
    }

    @Test func readyAndTheStatusLineSayWhatTheBoxIsDoing() async throws {
        let dir = TemporaryDirectory()
        let path = "/tmp/vigil-sm-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let listener = try UnixDatagram.bind(path: path)
        let clock = ManualClock()
        var c = testConfiguration(dir, advertisers: 0)
        c.serviceManager = ServiceManagerSettings(socketPath: path, watchdogMicroseconds: 2_000_000)
        let node = try Node(configuration: c, clock: clock, monotonic: clock, logger: quietLogger)
        let running = try await start(node)
        let ready = try UnixDatagram.receive(listener, timeoutMilliseconds: 5_000).map { String(decoding: $0, as: UTF8.self) }
        // (The radio's state is what the log made durable: its start was still on its way.)
        #expect(ready == "READY=1\nSTATUS=running, 0 residents, 0 active alerts, radio unknown")
        // The next ping comes from the loop's timer, at half the watchdog's interval of its clock,
        // with the status line when it changed.
        await advance(clock, running, byMicroseconds: 1_000_000, step: 1_000_000)
        let ping = try UnixDatagram.receive(listener, timeoutMilliseconds: 5_000).map { String(decoding: $0, as: UTF8.self) }
        #expect(ping == "WATCHDOG=1\nSTATUS=running, 0 residents, 0 active alerts, radio on")
        await advance(clock, running, byMicroseconds: 1_000_000, step: 1_000_000)
        let quiet = try UnixDatagram.receive(listener, timeoutMilliseconds: 5_000).map { String(decoding: $0, as: UTF8.self) }
        #expect(quiet == "WATCHDOG=1", "an unchanged line is not sent again")
        // An SOS changes the line; the next ping carries it.
        await onLoop(running) { n in
            var sos = Alert()
            sos.id = AlertID(origin: n.nodeID, counter: 1)
            sos.kind = .sos
            sos.severity = .critical
            _ = n.append(.alertRaised(sos))
        }
        await settled(running)
        await advance(clock, running, byMicroseconds: 1_000_000, step: 1_000_000)
        let changed = try UnixDatagram.receive(listener, timeoutMilliseconds: 5_000).map { String(decoding: $0, as: UTF8.self) }
        #expect(changed?.hasPrefix("WATCHDOG=1\nSTATUS=running, 1 SOS active") == true, "\(changed ?? "")")
        let stopped = try await stop(running)
        let stopping = try UnixDatagram.receive(listener, timeoutMilliseconds: 5_000).map { String(decoding: $0, as: UTF8.self) }
        #expect(stopping == "STOPPING=1\nSTATUS=stopping")
        #expect(stopped.serviceManager.failed == 0)
    }
}
