import Foundation
import Testing
import VigilSystem
import VigilTestSupport

@Suite struct SyscallTests {
    @Test func errnoDescribesItselfAndSystemErrorsNameTheirSubject() {
        #expect(Errno.noEntry.description.contains("No such file"))
        #expect(Errno.noEntry.description.contains("errno 2"))
        let error = SystemError("open", "/nope", errno: .noEntry)
        #expect(error.description.hasPrefix("open /nope: No such file"))
    }

    @Test func openingAMissingFileThrowsTypedErrno() {
        let dir = TemporaryDirectory()
        #expect {
            _ = try FileDescriptor.open(dir.path("missing/x"), flags: O_RDONLY)
        } throws: { error in
            (error as? SystemError)?.errno == .noEntry
        }
    }

    @Test func epollReportsEventFDSignalsWithTheirToken() throws {
        let epoll = try Epoll()
        let wake = try EventFD()
        try epoll.add(wake.fd, token: 42)
        #expect(try epoll.wait(timeoutMilliseconds: 0).isEmpty, "nothing signalled yet")
        wake.signal()
        wake.signal()
        let ready = try epoll.wait(timeoutMilliseconds: 1_000)
        #expect(ready.map(\.token) == [42])
        #expect(wake.drain() == 2, "signals accumulate until drained")
        #expect(try epoll.wait(timeoutMilliseconds: 0).isEmpty)
    }

    @Test func timerFDFiresOnceAfterItsDelayAndDisarms() throws {
        let epoll = try Epoll()
        let timer = try TimerFD()
        try epoll.add(timer.fd, token: 7)
        let start = monotonicNanoseconds()
        try timer.arm(afterNanoseconds: 30_000_000)
        let ready = try epoll.wait(timeoutMilliseconds: 2_000)
        #expect(ready.map(\.token) == [7])
        #expect(monotonicNanoseconds() - start >= 30_000_000)
        timer.drain()
        try timer.arm(afterNanoseconds: 10_000_000)
        try timer.disarm()
        #expect(try epoll.wait(timeoutMilliseconds: 50).isEmpty, "a disarmed timer never fires")
    }

    @Test func anExclusiveLockIsRefusedToASecondHolderUntilReleased() throws {
        let dir = TemporaryDirectory()
        let path = dir.path("lock")
        let first = try FileSystem.lockExclusive(path)
        #expect { _ = try FileSystem.lockExclusive(path) } throws: { error in
            (error as? SystemError)?.errno == .wouldBlock
        }
        first.unlock()
        let second = try FileSystem.lockExclusive(path)
        _ = consume second
        _ = consume first
    }

    @Test func unixSocketsCarryARequestAndReply() throws {
        let dir = TemporaryDirectory()
        let path = dir.path("sock")
        let listener = try UnixSocket.listen(path: path)
        #expect(try UnixSocket.accept(listener) == nil, "non-blocking accept with nobody waiting")
        let client = try UnixSocket.connect(path: path)
        try client.writeAll(Array("ping\n".utf8))
        let epoll = try Epoll()
        try epoll.add(listener.rawValue, token: 1)
        #expect(try epoll.wait(timeoutMilliseconds: 1_000).count == 1)
        guard let server = try UnixSocket.accept(listener) else {
            Issue.record("the pending connection was not accepted")
            return
        }
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = try buffer.withUnsafeMutableBytes { try server.read(into: $0) }
        #expect(n.map { String(decoding: buffer[..<$0], as: UTF8.self) } == "ping\n")
    }

    @Test func directoriesAreCreatedWithTheirParentsAndPathsCanonicalised() throws {
        let dir = TemporaryDirectory()
        let base = dir.path("dirs")
        try FileSystem.createDirectory(base + "/a/b/c")
        try FileSystem.createDirectory(base + "/a/b/c") // idempotent
        #expect(FileSystem.isDirectory(base + "/a/b/c"))
        #expect(FileSystem.canonicalPath(base + "/a/../a/b") == base + "/a/b")
    }

    @Test func manualClockMovesOnlyWhenTold() {
        let clock = ManualClock(startMicroseconds: 1_000)
        #expect(clock.nowMicroseconds() == 1_000)
        clock.advance(byMicroseconds: 500)
        #expect(clock.nowMicroseconds() == 1_500)
    }
}

@Suite struct ThreadNiceTests {
    /// The loop and the writer may run at a raised priority (`scheduling.loop_nice`); what they
    /// start (a notifier, `vigil log check`) must not inherit it.
    @Test func aProcessStartedByARaisedThreadBeginsAtNiceZero() throws {
        final class Outcome: @unchecked Sendable {
            var raised = false
            var ownNice = ""
            var childNice = ""
            var error: (any Error)?
        }
        let outcome = Outcome()
        let directory = TemporaryDirectory()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            do {
                try setThreadNice(-5)
                outcome.raised = true
                let stat = (try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)) ?? ""
                outcome.ownNice = stat.split(separator: ")").last.map { String($0.split(separator: " ")[16]) } ?? ""
                let output = directory.path("nice")
                _ = try runToCompletion(path: "/bin/sh", arguments: ["-c", "cut -d')' -f2 /proc/self/stat | cut -d' ' -f18"],
                                        outputPath: output)
                outcome.childNice = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                outcome.error = error
            }
        }
        thread.start()
        done.wait()
        // Raising a priority needs CAP_SYS_NICE (CI runs as root); without it there is nothing to
        // reset, and only EPERM may be why.
        guard outcome.raised else {
            #expect((outcome.error as? SystemError)?.errno.rawValue == EPERM || (outcome.error as? SystemError)?.errno == .accessDenied)
            return
        }
        #expect(outcome.error == nil)
        #expect(outcome.ownNice == "-5")
        #expect(outcome.childNice == "0")
    }
}
