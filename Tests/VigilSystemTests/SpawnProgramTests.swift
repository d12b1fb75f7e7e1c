import Foundation
import Glibc
import Testing
import VigilSystem
import VigilTestSupport

/// `spawnProgram` and the tests' `TestProcess` on it: a program started beside this process
/// gets its three descriptors and nothing else, whatever another thread opened.
@Suite struct SpawnProgramTests {
    static func output(of process: TestProcess) throws -> String {
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test func aProgramGetsItsThreeDescriptorsAndNoneOfOurs() throws {
        // Opened without O_CLOEXEC, as libmosquitto opens its socket.
        let leaky = open("/dev/null", O_RDONLY)
        #expect(leaky > 2)
        defer { close(leaky) }
        let ls = TestProcess()
        ls.executableURL = URL(fileURLWithPath: "/bin/ls")
        ls.arguments = ["/proc/self/fd"]
        let listed = try Self.output(of: ls).split(separator: "\n").compactMap { Int32($0) }
        // 3 is ls's own, the directory it lists.
        #expect(Set(listed) == [0, 1, 2, 3], "\(listed)")
        #expect(ls.terminationStatus == 0 && ls.terminationReason == .exit)
    }

    @Test func noInputIsDevNullAndTheDirectoryAndEnvironmentAreTheGivenOnes() throws {
        let sh = TestProcess()
        sh.executableURL = URL(fileURLWithPath: "/bin/sh")
        sh.arguments = ["-c", "pwd; echo \"$ONLY\"; cat; echo end"]
        sh.standardInput = nil
        sh.currentDirectoryURL = URL(fileURLWithPath: "/usr")
        sh.environment = ["ONLY": "this", "PATH": "/usr/bin:/bin"]
        #expect(try Self.output(of: sh) == "/usr\nthis\nend\n")
    }

    @Test func aSignalledProgramSaysSoAndAWaiterAndAnAskerAgree() async throws {
        let program = TestProcess()
        program.executableURL = URL(fileURLWithPath: "/bin/cat") // waits on its input for ever
        let input = Pipe()
        program.standardInput = input
        try program.run()
        #expect(program.isRunning)
        let waited = Task.detached { program.waitUntilExit(); return program.terminationStatus }
        program.terminate()
        #expect(await waited.value == SIGTERM)
        #expect(!program.isRunning && program.terminationReason == .uncaughtSignal)
        program.terminate() // reaped: its pid is not signalled again
    }

    @Test func aProgramThatIsNotThereIsAnError() {
        let nothing = TestProcess()
        nothing.executableURL = URL(fileURLWithPath: "/nonexistent/program")
        #expect(throws: SystemError.self) { try nothing.run() }
    }
}
